# SPDX-License-Identifier: Apache-2.0
# bench/tuning-overhead/report.py RESULTS FLOOR_S TRIALS PARALLEL: the table of run.sh.
# RESULTS has one line per study: "ALGORITHM WALL_S JOB_JSON" (the job record of `local train`,
# whose trainingOutput.trials carry each trial's startTime and endTime). Prints, per study, its
# wall time beside the floor's and the ideal TRIALS / PARALLEL x 1 s, trainyard's own share of
# the wall time, and where that time went; writes make bench's result lines (bench/report.py).
import datetime
import importlib.util
import json
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_report", os.path.join(here, "..", "report.py"))
bench_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_report)

results, floor, trials, parallel = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ideal = trials / parallel * 1.0  # each trial's program sleeps 1 s


def stamp(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def pct(wall):
    return (wall - ideal) / wall * 100


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


print("tuning overhead: %d trials of 1 s, %d at once (ideal %.1f s)" % (trials, parallel, ideal))
print("  %-44s %9s %10s" % ("", "wall", "own time"))
print("  %-44s %7.2f s %8.1f %%" % ("floor: xargs -P %d of the trial program" % parallel, floor,
                                     pct(floor)))
details = []
for line in open(results):
    algo, wall, path = line.split()
    wall = float(wall)
    job = json.load(open(path))
    ts = job.get("trainingOutput", {}).get("trials", [])
    ok = [t for t in ts if t.get("state") == "SUCCEEDED"]
    if len(ok) != trials:
        sys.exit("bench/tuning-overhead: %s: %d of %d trials succeeded" % (algo, len(ok), trials))
    starts = sorted(stamp(t["startTime"]) for t in ok)
    ends = sorted(stamp(t["endTime"]) for t in ok)
    runs = [stamp(t["endTime"]) - stamp(t["startTime"]) - 1.0 for t in ok]
    gaps = [starts[k] - ends[k - parallel] for k in range(parallel, trials)]
    before = starts[0] - stamp(job["createTime"])
    after = stamp(job["endTime"]) - ends[-1]
    label = "trainyard local train, %s" % algo
    print("  %-44s %7.2f s %8.1f %%" % (label, wall, pct(wall)))
    details.append((algo, runs, gaps, before, after))
    bench_report.add("tuning-overhead", "%d x 1 s trials at %d, %s: study wall time"
                     % (trials, parallel, algo), wall, "s", floor)
    bench_report.add("tuning-overhead", "%s: trainyard's own time, %% of the wall time" % algo,
                     round(pct(wall), 2), "%", round(pct(floor), 2), "< 5 %",
                     note="wall time less the ideal %g s" % ideal)
print("where trainyard's time goes (ms; a trial's run is its endTime - startTime, less the 1 s "
      "sleep;\na gap is a trial's end to the start of the trial that takes its slot):")
print("  %-24s %11s %11s %11s %11s %13s %12s" % ("", "run median", "run p99", "gap median",
                                                 "gap p99", "before first", "after last"))
for algo, runs, gaps, before, after in details:
    print("  %-24s %11.0f %11.0f %11.0f %11.0f %13.0f %12.0f"
          % (algo, statistics.median(runs) * 1e3, p99(runs) * 1e3, statistics.median(gaps) * 1e3,
             p99(gaps) * 1e3, before * 1e3, after * 1e3))
