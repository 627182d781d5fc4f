#!/usr/bin/env bash
# bench/hpo/anchors.sh [PROBLEMS]: compute the anchors of bench/hpo's own problems
# (multimodal.py; default all of them) with the harness's built-in samplers (Optuna random,
# TPE, multivariate TPE; scikit-learn GP-EI and GP-EI with local refinement), 20 seeds, budgets
# 20/50/100, and merge them into hpo_anchor_results.json next to this script, which holds the
# shared four problems' anchors as the shared harness stored them. Then hpo_anchor_table.md is
# written again from that file. Installs Optuna first (scripts/install-deps.sh --bench).
# About 25 minutes on 2 cores for the eight problems; WORKERS (2) processes at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$root/scripts/install-deps.sh" --bench >&2
python=/usr/bin/python3
problems=${1:-$("$python" -c "import sys; sys.path.insert(0, '$here'); from multimodal import MULTIMODAL; print(','.join(MULTIMODAL))")}
tmp=$(mktemp "$here/.anchors.XXXXXX.json")
trap 'rm -f "$tmp"' EXIT
cp "$here/hpo_anchor_results.json" "$tmp"
cd "$here"
"$python" hpo_anchor.py --samplers random,tpe,tpe_mv,gp_ei,gp_ei_local --problems "$problems" \
  --seeds 20 --budgets 20,50,100 --workers "${WORKERS:-2}" --merge --out "$tmp" >/dev/null
mv "$tmp" "$here/hpo_anchor_results.json"
"$python" hpo_anchor.py --report hpo_anchor_results.json --table-out hpo_anchor_table.md >/dev/null
echo "bench/hpo: anchors of $problems merged into $here/hpo_anchor_results.json; table in hpo_anchor_table.md" >&2
