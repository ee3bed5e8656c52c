#!/usr/bin/env bash
# Fits the modern engines' terms (topologies/engines/{vllm,trtllm,sglang}.json) to published
# measurements of each (data/calibration/engines/<engine>.json), the built-in hardware profiles
# fixed, and records each engine's error per GPU: out of sample (leave one source out: every
# source predicted by a fit to the others, each fit from the middle of the space) and in sample.
# The terms: step_overhead_s, seq_overhead_s, rank_overhead_s, graph_layer_overhead_s within
# physical bounds, for sglang also layer_launch_s (engine_fit.cpp, default_engine_space).
# Deterministic. About 5 min (vllm), 9 min (sglang) and 28 min (trtllm) on 2 cores.
#   bench/fidelity/fit_engines.sh [PRIMA_BINARY] [ENGINE...]
set -euo pipefail
cd "$(dirname "$0")/../.."
PRIMA=${1:-build/prima}
shift || true
ENGINES=("$@")
[ ${#ENGINES[@]} -gt 0 ] || ENGINES=(vllm sglang trtllm)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for e in "${ENGINES[@]}"; do
  "$PRIMA" calibrate --engine-points "data/calibration/engines/$e.json" --engine "$e" \
    --fit default --cv --out "$TMP/$e.json" | grep -E '^(vllm|trtllm|sglang):|^  (all|ttft|tpot|e2e|throughput) '
  python3 - "$TMP/$e.json" "topologies/engines/$e.json" "$e" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = sys.argv[3]
d["source"] = (f"fitted by bench/fidelity/fit_engines.sh (prima calibrate --engine-points "
               f"data/calibration/engines/{e}.json --fit default --cv) with the built-in hardware "
               f"profiles fixed; fidelity: leave one source out")
json.dump(d, open(sys.argv[2], "w"), indent=1)
open(sys.argv[2], "a").write("\n")
PY
done
