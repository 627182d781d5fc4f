#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/hpo/explain.py: where a run's trials went, from a run made with HPO_EXPLAIN=1.

    HPO_EXPLAIN=1 HPO_OUT_DIR=/tmp/x bench/hpo/run.sh build ALGORITHM_UNSPECIFIED --problems levy4
    explain.py [--problems a,b] [--after N] [--far F] /tmp/x/trainyard_gp

For each problem it joins every study's explanations (`trainyard study --jsonl --explain`: one
JSON line per suggested trial in the study's stderr log) with the values the harness recorded
(result.json) and prints, per kind of suggestion, how many trials it made, how many set a new
best, and how many cut the study's regret by 30% or more. A kind is the phase and the kernel,
and for the trust region's suggestions the candidate family; "far" marks a trust-region trial
more than F (default 0.2) of a parameter's unit range from the region's centre while the box
is smaller than that (a coordinate move to another basin). A failed trial counts in its kind
and again in "(failed)", which the share leaves out. --after N counts only trials after the Nth. The harness keeps its trials in the order they were suggested (hpo_anchor.py pops the
oldest pending trial), so trial k of a study is the kth value.
"""
import argparse
import collections
import json
import os
import sys


def kind_of(e, far):
    """The row a trial's explanation @e falls in."""
    phase = e.get("phase", "?")
    if "kernel" not in e:
        return phase
    k = "%s %s" % (phase, e["kernel"])
    if phase == "trustRegion":
        k += " " + e.get("candidate", "?")
        if e.get("side", 1) < far and e.get("reach", 0) > far:
            k += " far"
    return k


def explanations(path):
    """{trialId: explanation} from one study's stderr log."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "trialId" in msg and "explain" in msg:
                out[msg["trialId"]] = msg["explain"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="a sampler's output directory: result.json and logs/")
    ap.add_argument("--problems", default="")
    ap.add_argument("--after", type=int, default=0, help="count only trials after this many")
    ap.add_argument("--far", type=float, default=0.2)
    args = ap.parse_args()

    result = os.path.join(args.run, "result.json")
    with open(result) as f:
        doc = json.load(f)
    name = os.path.basename(os.path.normpath(args.run))
    wanted = [p for p in args.problems.split(",") if p]
    printed = False
    for problem, by_sampler in sorted(doc.get("raw", {}).items()):
        if (wanted and problem not in wanted) or name not in by_sampler:
            continue
        meta = doc["meta"]["problems"][problem]
        opt, maximize = meta["optimum"], meta["spec"]["goal"] == "MAXIMIZE"
        trials, new_best, big = (collections.Counter() for _ in range(3))
        missing = 0
        for seed, run in by_sampler[name].items():
            log = os.path.join(args.run, "logs", "%s-%s-s%s.stderr" % (name, problem, seed))
            if not os.path.exists(log):
                missing += 1
                continue
            ex = explanations(log)
            best = float("inf")
            for i, v in enumerate(run["values"]):
                e = ex.get(str(i + 1))
                if e is None:
                    missing += 1
                    break
                k = kind_of(e, args.far)
                regret = float("inf") if v is None else (opt - v if maximize else v - opt)
                if i >= args.after:
                    trials[k] += 1
                    if v is None:
                        trials["(failed)"] += 1
                    elif regret < best:
                        new_best[k] += 1
                        if regret <= 0.7 * best:
                            big[k] += 1
                best = min(best, regret)
        if missing:
            sys.exit("explain.py: %s: %d studies have no explanations: run with HPO_EXPLAIN=1"
                     % (problem, missing))
        total = sum(n for k, n in trials.items() if k != "(failed)")
        print("\n**%s** (%d trials%s)\n" % (problem, total,
                                            ", after trial %d" % args.after if args.after else ""))
        print("| kind | trials | share | new best | regret cut by 30% or more |")
        print("|---|---|---|---|---|")
        for k in sorted(trials, key=lambda k: -trials[k]):
            share = trials[k] / total if total else 0
            print("| %s | %d | %.0f%% | %d | %d |" % (k, trials[k], 100 * share, new_best[k], big[k]))
        printed = True
    if not printed:
        sys.exit("explain.py: no studies of %s in %s" % (name, result))


if __name__ == "__main__":
    main()
