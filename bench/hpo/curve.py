#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/hpo/curve.py: a run's regret curve and solve counts, from the harness's result.json.

    curve.py [--budgets 50,70,80,90,100] [--below PROBLEM=REGRET ...] [--problems a,b]
             [--sampler trainyard_gp] [--parallel PAR.json ...] RESULT.json [RESULT.json ...]

Several files (the same sampler on other seeds, e.g. run.sh with --seed-offset 20) are pooled
into one set of studies per problem. For each problem it prints the median regret after each
budget (a failed trial counts against the budget, as in the harness) and, with --below, how
many studies are under the given regret by then: on problems whose studies split into "found
the optimum's basin" and "one ripple off" (rastrigin4), the median only says which side of the
split the middle study fell on, and the count is what moves (bench/hpo/README.md, issue 18).

With --parallel (the same seeds run with --parallel 4 --fail-rate 0.1, say; pooled the same
way), it prints instead, at the last budget B: the sequential and parallel medians and their
ratio; the trial at which the sequential median first reaches the parallel one (the parallel
study stands where the sequential one stood then); and the first trial at which the
sequential median is within 3x of its figure at B, or below 1e-6: a parallel run meets issue
18's goal (within 3x of sequential, or below 1e-6) only if it loses fewer trials than that
leaves, and 10% failed trials alone cost about a tenth of the budget.
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


def load(paths, sampler, wanted):
    """{problem: (studies' values, optimum, maximize)} pooled over the result files @paths."""
    studies = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for problem, by_sampler in doc.get("raw", {}).items():
            if wanted and problem not in wanted:
                continue
            runs = by_sampler.get(sampler)
            if runs is None:
                continue
            meta = doc.get("meta", {}).get("problems", {}).get(problem)
            if not meta or "optimum" not in meta:
                sys.exit("curve.py: %s: no optimum recorded for %s" % (path, problem))
            optimum = (meta["optimum"], meta.get("spec", {}).get("goal") == "MAXIMIZE")
            entry = studies.setdefault(problem, ([], *optimum))
            entry[0].extend(r["values"] for r in runs.values())
    if not studies:
        sys.exit("curve.py: no studies of sampler %r in %s" % (sampler, ", ".join(paths)))
    return studies


def median_at(entry, budget):
    """Median best regret of the studies of @entry (load()'s) after @budget trials."""
    runs, optimum, maximize = entry
    return statistics.median(best_regret(v, budget, optimum, maximize) for v in runs)


def print_versus(seq, par, budget):
    """The table of --parallel: @par's median against @seq's curve, at @budget trials."""
    print("| problem | studies (seq / par) | seq @%d | par @%d | ratio | par = seq at trial |"
          " seq within 3x of its @%d from trial |" % (budget, budget, budget))
    print("|---|---|---|---|---|---|---|")
    for problem in sorted(set(seq) & set(par)):
        curve = [median_at(seq[problem], n) for n in range(1, budget + 1)]
        s, p = curve[-1], median_at(par[problem], budget)
        same = next((n for n, r in enumerate(curve, 1) if r <= p), None)
        within = next(n for n, r in enumerate(curve, 1) if r <= 3 * s or r <= 1e-6)
        ratio = "%.1fx" % (p / s) if s > 0 else "-"
        print("| %s | %d / %d | %.3g | %.3g | %s | %s | %d |" % (
            problem, len(seq[problem][0]), len(par[problem][0]), s, p, ratio,
            same if same else "none: par lower", within))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="result.json files of hpo_anchor.py")
    ap.add_argument("--sampler", default="trainyard_gp")
    ap.add_argument("--budgets", default="50,70,80,90,100")
    ap.add_argument("--problems", default="", help="comma-separated; default: all in the files")
    ap.add_argument("--below", action="append", default=[], metavar="PROBLEM=REGRET",
                    help="count the studies of PROBLEM below REGRET at each budget")
    ap.add_argument("--parallel", action="append", default=[], metavar="RESULT",
                    help="a parallel run's result.json to hold against the sequential curve")
    args = ap.parse_args()

    try:
        budgets = [int(b) for b in args.budgets.split(",")]
    except ValueError:
        ap.error("--budgets: comma-separated whole numbers expected, got %r" % args.budgets)
    if not budgets or min(budgets) < 1:
        ap.error("--budgets: positive whole numbers expected, got %r" % args.budgets)
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

    studies = load(args.results, args.sampler, wanted)
    if args.parallel:
        print_versus(studies, load(args.parallel, args.sampler, wanted), budgets[-1])
        return

    print("| problem | studies | " + " | ".join("@%d" % b for b in budgets) + " |")
    print("|" + "---|" * (len(budgets) + 2))
    for problem in sorted(studies):
        runs, optimum, maximize = studies[problem]
        cells = []
        for b in budgets:
            r = [best_regret(v, b, optimum, maximize) for v in runs]
            cell = "%.3g" % statistics.median(r)
            if problem in below:
                cell += " (%d below %g)" % (sum(x < below[problem] for x in r), below[problem])
            cells.append(cell)
        print("| %s | %d | %s |" % (problem, len(runs), " | ".join(cells)))


if __name__ == "__main__":
    main()
