#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/hpo/curve.py: a run's regret curve and solve counts, from the harness's result.json.

    curve.py [--budgets 50,70,80,90,100] [--below PROBLEM=REGRET ...] [--problems a,b]
             [--sampler trainyard_gp] RESULT.json [RESULT.json ...]

Several files (the same sampler on other seeds, e.g. run.sh with --seed-offset 20) are pooled
into one set of studies per problem. For each problem it prints the median regret after each
budget (a failed trial counts against the budget, as in the harness) and, with --below, how
many studies are under the given regret by then: on problems whose studies split into "found
the optimum's basin" and "one ripple off" (rastrigin4), the median only says which side of the
split the middle study fell on, and the count is what moves (bench/hpo/README.md, issue 18).
"""
import argparse
import json
import statistics
import sys


def best_regret(values, budget, optimum, maximize):
    """Best regret of one study after its first @budget trials (None: a failed trial), as the
    harness computes it (hpo_anchor.py's regret)."""
    done = [(optimum - v if maximize else v - optimum) for v in values[:budget] if v is not None]
    return min(done) if done else float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="result.json files of hpo_anchor.py")
    ap.add_argument("--sampler", default="trainyard_gp")
    ap.add_argument("--budgets", default="50,70,80,90,100")
    ap.add_argument("--problems", default="", help="comma-separated; default: all in the files")
    ap.add_argument("--below", action="append", default=[], metavar="PROBLEM=REGRET",
                    help="count the studies of PROBLEM below REGRET at each budget")
    args = ap.parse_args()

    try:
        budgets = [int(b) for b in args.budgets.split(",")]
    except ValueError:
        ap.error("--budgets: comma-separated whole numbers expected, got %r" % args.budgets)
    below = {}
    for item in args.below:
        name, sep, level = item.partition("=")
        try:
            below[name] = float(level)
        except ValueError:
            sep = ""
        if not sep:
            ap.error("--below: PROBLEM=REGRET expected, got %r" % item)
    wanted = [p for p in args.problems.split(",") if p]

    studies, optima = {}, {}
    for path in args.results:
        with open(path) as f:
            doc = json.load(f)
        for problem, by_sampler in doc.get("raw", {}).items():
            if wanted and problem not in wanted:
                continue
            runs = by_sampler.get(args.sampler)
            if runs is None:
                continue
            meta = doc.get("meta", {}).get("problems", {}).get(problem)
            if not meta or "optimum" not in meta:
                sys.exit("curve.py: %s: no optimum recorded for %s" % (path, problem))
            optima[problem] = (meta["optimum"], meta.get("spec", {}).get("goal") == "MAXIMIZE")
            studies.setdefault(problem, []).extend(r["values"] for r in runs.values())
    if not studies:
        sys.exit("curve.py: no studies of sampler %r in %s" % (args.sampler, ", ".join(args.results)))

    head = "| problem | studies | " + " | ".join("@%d" % b for b in budgets) + " |"
    print(head)
    print("|" + "---|" * (len(budgets) + 2))
    for problem in sorted(studies):
        runs = studies[problem]
        cells = []
        for b in budgets:
            r = [best_regret(v, b, *optima[problem]) for v in runs]
            cell = "%.3g" % statistics.median(r)
            if problem in below:
                cell += " (%d below %g)" % (sum(x < below[problem] for x in r), below[problem])
            cells.append(cell)
        print("| %s | %d | %s |" % (problem, len(runs), " | ".join(cells)))


if __name__ == "__main__":
    main()
