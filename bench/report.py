#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/report.py: the machine-readable results of the benchmarks and the one table `make bench`
# prints at its end (docs/internals/benchmarks.md).
#
# Every bench/*/run.sh writes, when $TY_BENCH_RESULTS names a file, one JSON object a line for
# each figure it measured (through `report.py add`), e.g.
#   {"bench": "launch", "path": "1+16 true, to all started", "value": 102.0, "unit": "ms",
#    "floor": 59.0, "ratio": 1.73, "goal": "<= 1.2x", "met": false}
# or one line saying why it did not run ({"bench": ..., "skipped": REASON}) or that it failed
# ({"bench": ..., "failed": EXIT_STATUS}). A goal is "OP NUMBER[UNIT]", OP one of < <= > >= =:
# with the unit "x" it bounds the ratio value / floor, otherwise the value itself (its unit, if
# given, must be the figure's). A figure without a goal is reported, not judged ("met": null).
#
# Usage:
#   report.py add BENCH PATH VALUE UNIT [--floor F] [--goal G] [--note TEXT]
#   report.py skip BENCH REASON          prints "BENCH: skipped (REASON)" and records it
#   report.py run BENCH CMD [ARG...]     runs CMD; a non-zero exit is recorded (then 0 is
#                                        returned, so that `make bench` goes on), else returned
#   report.py table [FILE]               prints the table of FILE (default $TY_BENCH_RESULTS);
#                                        exits 1 when a benchmark failed (never for a goal)
# add/skip/run write nothing when $TY_BENCH_RESULTS is unset or empty (a bench run by hand).
import argparse
import json
import math
import os
import re
import subprocess
import sys

GOAL_RE = re.compile(r"^\s*(<=|>=|<|>|=|≤|≥)\s*([-+0-9.eE]+)\s*(\S*)\s*$")
OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b, "=": lambda a, b: a == b, "≤": lambda a, b: a <= b,
       "≥": lambda a, b: a >= b}


def judge(goal, value, unit, ratio):
    """True/False: whether VALUE (or RATIO, for a goal in "x") meets GOAL; None without a goal
    or without the ratio it bounds. Raises ValueError for a goal that is not OP NUMBER[UNIT]
    or whose unit is neither "x" nor UNIT."""
    if not goal:
        return None
    m = GOAL_RE.match(goal)
    if not m:
        raise ValueError("goal %r is not OP NUMBER[UNIT]" % goal)
    op, bound, gunit = m.group(1), float(m.group(2)), m.group(3)
    if gunit == "x":
        return None if ratio is None else OPS[op](ratio, bound)
    if gunit and gunit != unit:
        raise ValueError("goal %r is in %r, the figure in %r" % (goal, gunit, unit))
    return OPS[op](value, bound)


def record(obj):
    """Append OBJ as one JSON line to $TY_BENCH_RESULTS (nothing when it is unset)."""
    path = os.environ.get("TY_BENCH_RESULTS", "")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def result(bench, path, value, unit, floor=None, goal=None, note=None):
    """The result object of one figure (ratio and verdict computed here); see the top."""
    try:
        value = float(value)
        floor = None if floor is None or floor == "" else float(floor)
    except (TypeError, ValueError):
        raise ValueError("no figure (value %r, floor %r)" % (value, floor)) from None
    if not math.isfinite(value):
        raise ValueError("no figure (value %r)" % value)
    ratio = None
    if floor is not None and floor != 0 and math.isfinite(floor):
        ratio = round(value / floor, 3)
    obj = {"bench": bench, "path": path, "value": value, "unit": unit, "floor": floor,
           "ratio": ratio, "goal": goal or None, "met": judge(goal, value, unit, ratio)}
    if note:
        obj["note"] = note
    return obj


def add(bench, path, value, unit, floor=None, goal=None, note=None):
    """Record one figure (for Python benchmarks: import this file and call it). A value or
    floor that is not a number (a figure the benchmark's output no longer has) is recorded as
    an error line, which the table shows; a malformed goal raises ValueError."""
    try:
        obj = result(bench, path, value, unit, floor, goal, note)
    except ValueError as e:
        if "goal" in str(e):
            raise
        obj = {"bench": bench, "path": path, "error": str(e)}
    record(obj)


def skip(bench, reason):
    print("%s: skipped (%s)" % (bench, reason), flush=True)
    record({"bench": bench, "skipped": reason})


def count_lines(bench):
    """How many lines of $TY_BENCH_RESULTS are BENCH's (0 without the file)."""
    try:
        with open(os.environ.get("TY_BENCH_RESULTS", ""), encoding="utf-8") as f:
            return sum(1 for t in f if t.strip() and json.loads(t).get("bench") == bench)
    except (OSError, ValueError):
        return 0


def run(bench, argv):
    """Run ARGV; a non-zero exit is printed and recorded, and so is an exit 0 that recorded
    no figure (a benchmark that skipped itself, saying why in its output). Returns 0 when
    the failure was recorded (the table fails at the end, after the other benchmarks ran),
    else ARGV's exit status."""
    before = count_lines(bench)
    try:
        rc = subprocess.call(argv)
    except OSError as e:
        print("%s: %s" % (bench, e), flush=True)
        rc = 127
    if rc == 0 and os.environ.get("TY_BENCH_RESULTS", "") and count_lines(bench) == before:
        record({"bench": bench, "skipped": "no figures: see its output"})
    if rc != 0:
        print("%s: exited with status %d" % (bench, rc), flush=True)
        record({"bench": bench, "failed": rc})
        if os.environ.get("TY_BENCH_RESULTS", ""):
            return 0
    return rc


def number(x, unit=""):
    if x is None:
        return ""
    if x == 0 or abs(x) >= 100:
        s = "%.0f" % x
    elif abs(x) >= 10:
        s = "%.1f" % x
    else:
        s = "%.3g" % x
    return s + (" " + unit if unit else "")


def rows_of(lines):
    """The table's rows (lists of cells) and the names of the failed benchmarks."""
    rows, failed, seen = [], [], set()
    for obj in lines:
        bench = obj.get("bench", "?")
        seen.add(bench)
        if "failed" in obj:
            failed.append(bench)
            rows.append([bench, "(the benchmark failed: exit status %s)" % obj["failed"],
                         "", "", "", "", "FAILED"])
        elif "error" in obj:
            rows.append([bench, "%s (%s)" % (obj.get("path", ""), obj["error"]), "", "", "", "",
                         "?"])
        elif "skipped" in obj:
            rows.append([bench, "(skipped: %s)" % obj["skipped"], "", "", "", "", "-"])
        else:
            met = obj.get("met")
            unit = obj.get("unit", "")
            rows.append([bench, obj.get("path", ""), number(obj.get("value"), unit),
                         number(obj.get("floor"), unit),
                         "" if obj.get("ratio") is None else "%.2fx" % obj["ratio"],
                         obj.get("goal") or "",
                         "" if met is None else ("met" if met else "NOT met")])
    return rows, failed


def table(path):
    lines = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                if text.strip():
                    try:
                        lines.append(json.loads(text))
                    except ValueError:
                        print("report.py: %s:%d: not JSON: %s" % (path, n, text.strip()[:80]))
    except OSError as e:
        print("report.py: no results: %s" % e)
        return 1
    rows, failed = rows_of(lines)
    head = ["bench", "path", "trainyard", "floor", "ratio", "goal", "met"]
    width = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    right = {2, 3, 4}

    def fmt(r):
        return "  ".join(c.rjust(width[i]) if i in right else c.ljust(width[i])
                         for i, c in enumerate(r)).rstrip()

    judged = [o for o in lines if o.get("met") is not None]
    print()
    print("make bench: every benchmark (ratio = trainyard / floor; goals from docs/internals/"
          "benchmarks.md)")
    print(fmt(head))
    print(fmt(["-" * w for w in width]))
    for r in rows:
        print(fmt(r))
    print("%d of %d goals met%s" % (sum(1 for o in judged if o["met"]), len(judged),
                                    "; failed: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description="bench results and the table of make bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("bench")
    a.add_argument("path")
    a.add_argument("value")
    a.add_argument("unit")
    a.add_argument("--floor")
    a.add_argument("--goal")
    a.add_argument("--note")
    s = sub.add_parser("skip")
    s.add_argument("bench")
    s.add_argument("reason")
    r = sub.add_parser("run")
    r.add_argument("bench")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    t = sub.add_parser("table")
    t.add_argument("file", nargs="?", default=os.environ.get("TY_BENCH_RESULTS", ""))
    o = ap.parse_args()
    try:
        if o.cmd == "add":
            add(o.bench, o.path, o.value, o.unit, o.floor, o.goal, o.note)
        elif o.cmd == "skip":
            skip(o.bench, o.reason)
        elif o.cmd == "run":
            return run(o.bench, o.argv)
        else:
            return table(o.file)
    except ValueError as e:
        print("report.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
