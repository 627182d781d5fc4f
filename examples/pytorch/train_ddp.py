"""examples/pytorch/train_ddp.py: data-parallel training of a small MLP on the digits data
with torch.distributed (gloo, CPU), wired up from AI Platform's CLUSTER_SPEC.

The master is rank 0 and listens at its CLUSTER_SPEC address; workers are ranks 1..N.
Parameter servers and evaluators have no part in DDP and exit at once. When the job is run
with --pytorch-env (or the label trainyard-pytorch-env=true), MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK are already set and are used as they are; otherwise they are derived
from CLUSTER_SPEC here. The master's last line is "final test accuracy: 0.NNN".
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def cluster_settings():
    """(addr, port, rank, world_size) for this replica, or None when it takes no part."""
    spec = json.loads(os.environ.get("CLUSTER_SPEC") or '{"cluster":{},"task":{"type":"master","index":0}}')
    task = spec["task"]
    if "RANK" in os.environ and "MASTER_ADDR" in os.environ:
        return (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    if task["type"] not in ("master", "chief", "worker"):
        return None
    master = spec["cluster"].get("master", ["127.0.0.1:29500"])[0]
    addr, port = master.rsplit(":", 1)
    workers = len(spec["cluster"].get("worker", []))
    rank = 0 if task["type"] in ("master", "chief") else task["index"] + 1
    return addr, int(port), rank, 1 + workers


def load(path):
    with gzip.open(path, "rt") as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.float32)
    rng = np.random.default_rng(0)
    data = data[rng.permutation(len(data))]
    x, y = data[:, :64] / 16.0, data[:, 64].astype(np.int64)
    cut = int(0.8 * len(data))
    return (torch.from_numpy(x[:cut]), torch.from_numpy(y[:cut]),
            torch.from_numpy(x[cut:]), torch.from_numpy(y[cut:]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--learning-rate", "--learning_rate", type=float, default=0.1)
    p.add_argument("--batch-size", "--batch_size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--job-dir", "--job_dir", default=None)
    p.add_argument("--data", default=DATA)
    args, unknown = p.parse_known_args()
    if unknown:
        print("ignoring arguments: %s" % " ".join(unknown), file=sys.stderr)

    settings = cluster_settings()
    if settings is None:
        print("this role has no part in DDP training; exiting")
        return 0
    addr, port, rank, world = settings
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port),
                            rank=rank, world_size=world)
    print("rank %d of %d, rendezvous at %s:%d" % (rank, world, addr, port), flush=True)

    xtr, ytr, xte, yte = load(args.data)
    shard = torch.arange(rank, len(xtr), world)  # this rank's part of the training data
    xtr, ytr = xtr[shard], ytr[shard]
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # Every rank must run the same number of steps (allreduce per step).
    steps = len(xtr) // args.batch_size
    counts = torch.tensor([steps])
    dist.all_reduce(counts, op=dist.ReduceOp.MIN)
    steps = int(counts.item())
    g = torch.Generator().manual_seed(rank)
    for epoch in range(args.epochs):
        order = torch.randperm(len(xtr), generator=g)
        total = 0.0
        for s in range(steps):
            idx = order[s * args.batch_size:(s + 1) * args.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0 and (epoch + 1) % 10 == 0:
            print("epoch %d loss %.3f" % (epoch + 1, total / max(steps, 1)), flush=True)
    dist.barrier()
    if rank == 0:
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        if args.job_dir and "://" not in args.job_dir:
            os.makedirs(args.job_dir, exist_ok=True)
            torch.save(model.module.state_dict(), os.path.join(args.job_dir, "model.pt"))
        print("final test accuracy: %.3f" % acc, flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
