#!/usr/bin/env bash
# bench/hpo/run.sh [BUILD_DIR] [ALGORITHM] [extra harness flags...]: score `trainyard study
# --jsonl` with the HPO harness (hpo_anchor.py next to this script: a copy of the shared
# ../shared/bench/hpo with bench/hpo's own multimodal problems added, multimodal.py; protocol
# hpo-jsonl/1) on every problem, 20 seeds, budgets 20/50/100, and print its table next to the
# anchors stored here (hpo_anchor_results.json; anchors.sh computes those of new problems).
# ALGORITHM defaults to ALGORITHM_UNSPECIFIED (Bayesian optimisation, tuner-gp.c); pass
# RANDOM_SEARCH to score random mode, or `all` for both in turn.
# HPO_HARNESS_DIR runs another copy of the harness instead (the shared one: only its four
# problems, so pass --problems too). HPO_EXPLAIN=1 runs the tuner with --explain, so that each
# study's log (<out>/<name>/logs) says how every trial was chosen; explain.py sums them up.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
algo=${2:-ALGORITHM_UNSPECIFIED}
shift $(($# > 2 ? 2 : $#))
harness=${HPO_HARNESS_DIR:-$root/bench/hpo}
if ! /usr/bin/python3 -c "import numpy, scipy" 2>/dev/null; then
  echo "bench/hpo: the harness needs Debian's python3-numpy and python3-scipy (scripts/install-deps.sh --bench)" >&2
  exit 1
fi
case $build in /*) ;; *) build=$root/$build ;; esac
tuner=$build/bin/trainyard
if [ ! -x "$tuner" ]; then
  echo "bench/hpo: $tuner is missing; build it first (ninja -C $build bin/trainyard)" >&2
  exit 1
fi
if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=$(command -v python3); fi
out=${HPO_OUT_DIR:-$(mktemp -d /tmp/trainyard-hpo.XXXXXX)}
mkdir -p "$out"
if [ "$algo" = all ]; then algos="ALGORITHM_UNSPECIFIED RANDOM_SEARCH"; else algos=$algo; fi
for a in $algos; do
  case $a in ALGORITHM_UNSPECIFIED) name=trainyard_gp ;; *) name=trainyard_${a,,} ;; esac
  echo "bench/hpo: $a, results in $out/$name" >&2
  mkdir -p "$out/$name"
  "$python" "$harness/hpo_anchor.py" --samplers none \
    --external "'$tuner' study --jsonl${HPO_EXPLAIN:+ --explain}" --external-name "$name" \
    --algorithm "$a" --seeds 20 --budgets 20,50,100 \
    --anchors "$harness/hpo_anchor_results.json" \
    --out "$out/$name/result.json" --table-out "$out/$name/table.md" \
    --external-log "$out/$name/logs" "$@"
done
