# SPDX-License-Identifier: Apache-2.0
# bench/launch-slurm/report.py SCRATCH N CPUS: the table of run.sh, and where the time goes.
# Reads SCRATCH/runs ("KIND I T0 T1" a line: epoch seconds just before the command was invoked
# and when it returned), SCRATCH/KIND_I.starts ("EPOCH SLURM_JOB_ID" per task), slurmctld's
# log (each job's submission, allocation, start and scancel: local time, ms) and, for
# trainyard, the job's service.log (UTC, us: submitted, every replica placed).
import datetime
import os
import re
import statistics
import sys

scratch, n, cpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
home = os.environ["TRAINYARD_HOME"]

ctld = {}  # Slurm job id -> {"submit", "start", "kill"}: epoch seconds
pat = re.compile(r"^\[([0-9T:.-]+)\] (.*?)JobId=(\d+)")
for line in open(os.path.join(scratch, "cluster/log/slurmctld.log"), errors="replace"):
    m = pat.match(line)
    if not m:
        continue
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    what, d = m.group(2), ctld.setdefault(m.group(3), {})
    if "_slurm_rpc_submit_batch_job" in what:
        d["submit"] = t
    elif "_slurm_rpc_allocate_resources" in what:  # srun: allocated within the request
        d["submit"] = d["start"] = t
    elif "_start_job: Started" in what or "sched: Allocate" in what:
        d.setdefault("start", t)
    elif "_slurm_rpc_kill_job" in what:
        d.setdefault("kill", t)


def service_log(i):
    out = {}
    for line in open(os.path.join(home, "jobs/local/trainyard_%s/logs/service.log" % i)):
        stamp, _, msg = line.rstrip("\n").partition(" INFO ")
        try:
            t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            continue
        t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
        if msg.startswith("Submitted as Slurm job"):
            out.setdefault("submitted", t)
        elif msg.startswith("Waiting for training program to start"):
            out.setdefault("placed", t)
    return out


runs = {}    # kind -> {"a": [s], "b": [s], "wait": [s]}
phases = {}  # kind -> phase -> [ms], in order
for line in open(os.path.join(scratch, "runs")):
    kind, i, t0, t1 = line.split()
    t0, t1 = float(t0), float(t1)
    starts = [s.split() for s in open(os.path.join(scratch, "%s_%s.starts" % (kind, i)))]
    first, last = min(float(s[0]) for s in starts), max(float(s[0]) for s in starts)
    job = ctld.get(starts[0][1], {})
    submit, start = job.get("submit", t0), job.get("start", t0)
    r = runs.setdefault(kind, {"a": [], "b": [], "wait": []})
    r["a"].append(last - t0)
    r["b"].append(t1 - t0)
    r["wait"].append(start - submit)
    if kind == "srun":
        p = [("invoked -> allocated", start - t0),
             ("allocated -> 8th task started", last - start)]
    elif kind == "trainyard":  # one srun: allocated within its request, as the baseline's
        placed = service_log(i).get("placed", last)
        p = [("invoked -> allocated (srun)", start - t0),
             ("allocated -> every launcher placed", placed - start),
             ("placed -> 8th program started", last - placed)]
    else:
        p = [("invoked -> submitted (sbatch)", submit - t0),
             ("submitted -> started (scheduler's wait)", start - submit),
             ("started -> 8th task started", last - start)]
    p += [("(1st -> 8th task started)", last - first),
          ("8th started -> ended", t1 - last)]
    if kind == "trainyard" and "kill" in job:
        p += [("(8th started -> scancel)", job["kill"] - last),
              ("(scancel -> trainyard exited)", t1 - job["kill"])]
    for name, v in p:
        phases.setdefault(kind, {}).setdefault(name, []).append(v * 1000)


def med(kind, key, less_wait=False):
    r = runs[kind]
    return statistics.median(x - (w if less_wait else 0) for x, w in zip(r[key], r["wait"]))


nruns = len(runs["srun"]["a"])
print("slurm launch benchmark: 1 master + %d workers (%d tasks x %d CPUs, 4 simulated nodes), "
      "%d interleaved runs, medians" % (n - 1, n, cpus, nruns))
print("  %-48s %12s %12s" % ("", "all started", "ended"))


def row(label, a, b):
    print("  %-48s %9.0f ms %9.0f ms" % (label, a * 1000, b * 1000))


def ratio(label, a, b, note=""):
    print("  %-48s %11.2fx %11.2fx%s" % (label, a[0] / b[0], a[1] / b[1], note))


srun = (med("srun", "a"), med("srun", "b"))
ty = (med("trainyard", "a"), med("trainyard", "b"))
sb = (med("sbatch", "a"), med("sbatch", "b"))
sb_nw = (med("sbatch", "a", True), med("sbatch", "b", True))
row("srun -n %d --cpus-per-task=%d (baseline)" % (n, cpus), *srun)
row("trainyard local train --runtime slurm", *ty)
ratio("ratio trainyard / srun", ty, srun)
row("sbatch --wrap 'srun ...' (reference)", *sb)
row("sbatch, less the scheduler's wait (*)", *sb_nw)
ratio("ratio trainyard / sbatch", ty, sb)
print("  (*) submission -> start of the batch job in slurmctld's log: the backfill scheduler's tick")
print("      (bf_interval=1); median %.0f ms. srun (and trainyard's srun) is allocated at once."
      % (statistics.median(runs["sbatch"]["wait"]) * 1000))
print()
print("where the time goes (medians of each phase; slurmctld's log has ms resolution):")
labels = {"srun": "srun", "trainyard": "trainyard", "sbatch": "sbatch --wrap srun"}
for kind in ("srun", "trainyard", "sbatch"):
    print("  %s" % labels[kind])
    for name, v in phases[kind].items():
        print("    %-44s %7.0f ms" % (("  " if name.startswith("(") else "") + name,
                                      statistics.median(v)))
