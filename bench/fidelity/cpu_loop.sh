#!/usr/bin/env bash
# The fidelity loop on this machine, end to end: profile the CPU backend, serve SmolLM2 with
# `prima serve --backend real`, measure three workloads with `prima bench` (three repeats
# each), replay every run in the simulator with the profile (`prima replay`), then fit the
# profile to the low-load run (`prima replay --fit`) and replay every run again with the fitted
# profile (the other workloads are held out). Writes OUT/summary.json and prints the tables
# docs/fidelity.md shows.
#   bench/fidelity/cpu_loop.sh [OUT]          (default out/fidelity; about 14 min on 2 cores)
# Workloads (server defaults: max-num-seqs 8, temperature 1, streaming):
#   low        Poisson 0.4 req/s, prompts 128-384, outputs 64-192 tokens, 30 requests
#   saturated  Poisson 1.8 req/s, same lengths, 60 requests (near the server's capacity)
#   mixed      Poisson 0.5 req/s, prompts 64-1024, outputs 32-256 tokens, 30 requests
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-out/fidelity}
PRIMA=${PRIMA:-build/prima}
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
PORT=${PORT:-8437}
REPEATS=${REPEATS:-3}
mkdir -p "$OUT"

echo "== profile" >&2
"$PRIMA" profile --model "$MODEL" --threads 2 --out "$OUT/cpu_profile.json" \
  --topology-out "$OUT/cpu_topology.json" --scenario-out "$OUT/cpu_scenario.json" >"$OUT/profile.txt"
tail -1 "$OUT/profile.txt" >&2

echo "== serve" >&2
"$PRIMA" serve --backend real --model "$MODEL" --port "$PORT" >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { echo "server did not start" >&2; exit 1; }

declare -A ARGS=(
  [low]="--request-rate 0.4 --num-prompts 30 --random-input-len 256 --random-output-len 128 --random-range-ratio 0.5"
  [saturated]="--request-rate 1.8 --num-prompts 60 --random-input-len 256 --random-output-len 128 --random-range-ratio 0.5"
  [mixed]="--request-rate 0.5 --num-prompts 30 --random-input-len 544 --random-output-len 144 --random-range-ratio 0.8824"
)
for w in low saturated mixed; do
  for r in $(seq "$REPEATS"); do
    echo "== bench $w #$r" >&2
    # shellcheck disable=SC2086
    "$PRIMA" bench --url "http://127.0.0.1:$PORT" ${ARGS[$w]} --ignore-eos --seed "$r" \
      --save-requests "$OUT/$w.$r.jsonl" --out "$OUT/$w.$r.bench.json" >/dev/null
  done
done
kill $SERVER
wait $SERVER 2>/dev/null || true
trap - EXIT

replay_all() {  # tag [replay args...]
  local tag=$1
  shift
  for w in low saturated mixed; do
    for r in $(seq "$REPEATS"); do
      "$PRIMA" replay --measured "$OUT/$w.$r.jsonl" --scenario "$OUT/cpu_scenario.json" \
        --out "$OUT/replay.$tag/$w.$r" "$@" >/dev/null
    done
  done
}
echo "== replay with the profile" >&2
replay_all profile
echo "== fit to low #1, replay all with the fitted profile" >&2
"$PRIMA" replay --measured "$OUT/low.1.jsonl" --scenario "$OUT/cpu_scenario.json" --fit \
  --out "$OUT/fit" >/dev/null 2>"$OUT/fit.log"
replay_all fitted --set "calibration=\"$PWD/$OUT/fit/profile.json\""

python3 - "$OUT" "$REPEATS" <<'PY'
import json, sys, statistics as st
out, reps = sys.argv[1], int(sys.argv[2])
summary = {}
for tag in ("profile", "fitted"):
    for w in ("low", "saturated", "mixed"):
        rows = {}
        for m in ("ttft", "tpot", "e2e"):
            for stat in ("mean", "p99"):
                meas, err = [], []
                for r in range(1, reps + 1):
                    c = json.load(open(f"{out}/replay.{tag}/{w}.{r}/comparison.json"))
                    f = c["metrics"][m][stat]
                    meas.append(f["measured"]); err.append(f["error"])
                spread = (max(meas) - min(meas)) / st.mean(meas)
                rows[f"{m} {stat}"] = {"measured_s": st.mean(meas), "spread": spread,
                                       "error": st.mean(err), "errors": err}
        summary.setdefault(tag, {})[w] = rows
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
for tag in ("profile", "fitted"):
    print(f"\n{tag}: mean signed error of {reps} replays; spread = (max - min) / mean of the {reps} real runs")
    print("| workload | metric | measured | error | real spread |")
    print("|---|---|---|---|---|")
    for w, rows in summary[tag].items():
        for k, v in rows.items():
            print(f"| {w} | {k} | {v['measured_s']*1e3:.1f} ms | {v['error']*100:+.1f}% | {v['spread']*100:.1f}% |")
PY
