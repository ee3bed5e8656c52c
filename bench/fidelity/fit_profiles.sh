#!/usr/bin/env bash
# Fits the two axes of the cost model's parameters, each to its own data:
#   1. the hardware profiles (topologies/profiles/*.json) to microbenchmarks only
#      (data/calibration/microbenchmarks.json): collectives to nccl-tests and Vidur all-reduce
#      timings, the custom one-shot kernel to vLLM's (H100; A100 and H200 take its latency);
#      GEMM shares, tile, per-kernel latency and fused-attention shares to Vidur's
#      cuBLAS timings, FlashAttention's figures, cuBLASLt 8192^3 and STREAM;
#   2. the engine that Splitwise measured (topologies/engines/splitwise-2023.json): its host,
#      launch and attention-kernel terms per GPU to the Splitwise step times (S1-S4 in
#      data/calibration/published.json), each GPU's hardware profile fixed.
# Attention's decode share (attention_memory) has no microbenchmark in the set: decode
# attention is taken to stream the KV cache as fast as a GEMV streams weights (its value is the
# fitted gemm_memory). H200 has no GEMM or attention microbenchmark: its
# compute and attention terms are H100's (same die), its memory and tensor shares its own
# STREAM and cuBLASLt figures. The modern engines (vllm, trtllm, sglang) are fitted by
# bench/fidelity/fit_engines.sh. Deterministic: the same data give the same profiles.
#   bench/fidelity/fit_profiles.sh [PRIMA_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
PRIMA=${1:-build/prima}
HW=topologies/profiles
MICRO=data/calibration/microbenchmarks.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

file_of() { echo "$HW/$(echo "$1" | tr 'A-Z' 'a-z').json"; }

# Every fit starts from the same place whatever the profiles hold now (so the script gives the
# same profiles each time): the default shares, GEMM tiles of 128, the description and source.
for f in "$HW"/*.json; do
  python3 - "$f" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
seed = {"profile": p["profile"], "description": p["description"], "source": p["source"],
        "efficiency": {"gemm_tile": 128}}
if "gpu" in p:
    seed["gpu"] = p["gpu"]
json.dump(seed, open(sys.argv[1], "w"), indent=1)
PY
done

COLL=allreduce_bandwidth,allreduce_latency_s,allreduce_base_s,allreduce_ll_bandwidth,allreduce_ll_latency_s
COLL_BOUNDS=(--bound allreduce_base_s=0:200us --bound allreduce_latency_s=0:20us
  --bound allreduce_ll_bandwidth=0.05:0.5 --bound allreduce_ll_latency_s=0:5us)
COMPUTE=gemm_compute,gemm_m_half,gemm_memory,gemm_tile,gemm_latency_s,attention_compute,attention_seq_half
COMPUTE_BOUNDS=(--bound gemm_m_half=0:2048 --bound attention_seq_half=0:16384
  --bound gemm_tile=0:256 --bound gemm_latency_s=0:50us)

hw_fit() {  # gpu sources params bounds...
  local gpu=$1 sources=$2 params=$3 f
  shift 3
  f=$(file_of "$gpu")
  "$PRIMA" calibrate --points "$MICRO" --gpu "$gpu" --profile "$f" --sources "$sources" \
    --fit "$params" --starts 20 --iterations 800 "$@" --out "$TMP/hw.json" >/dev/null
  cp "$TMP/hw.json" "$f"
}

hw_fit A100-SXM4-80GB C3,C9 "$COLL" "${COLL_BOUNDS[@]}"
hw_fit A100-SXM4-80GB vidur-mlp,FlashAttention-FA2A100,Azure-cuBLASLt,Azure-STREAM "$COMPUTE" \
  "${COMPUTE_BOUNDS[@]}"
hw_fit H100-SXM5-80GB C1,C8 "$COLL,nvls_bandwidth,nvls_latency_s" "${COLL_BOUNDS[@]}"
hw_fit H100-SXM5-80GB vidur-mlp,FlashAttention-FA3README,Azure-cuBLASLt,Azure-STREAM \
  "$COMPUTE" "${COMPUTE_BOUNDS[@]}"
hw_fit H100-SXM5-80GB vllm-pr-24111 oneshot_latency_s --bound oneshot_latency_s=1us:50us
for gpu in A100-SXM4-80GB H100-SXM5-80GB; do
  python3 - "$(file_of "$gpu")" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["efficiency"]["attention_memory"] = p["efficiency"]["gemm_memory"]
json.dump(p, open(sys.argv[1], "w"), indent=1)
PY
done
hw_fit H200-SXM-141GB C2 "$COLL,nvls_bandwidth,nvls_latency_s" "${COLL_BOUNDS[@]}"
# H200: H100's compute and attention terms, then its own memory and tensor shares.
python3 - "$(file_of H100-SXM5-80GB)" "$(file_of H200-SXM-141GB)" <<'PY'
import json, sys
h100, h200 = (json.load(open(p)) for p in sys.argv[1:])
for k in ("gemm_m_half", "gemm_tile", "gemm_latency_s", "attention_compute", "attention_seq_half",
          "attention_memory", "elementwise_memory", "oneshot_latency_s"):
    h200["efficiency"][k] = h100["efficiency"][k]
json.dump(h200, open(sys.argv[2], "w"), indent=1)
PY
# A100: no custom all-reduce microbenchmark in the set; the H100 kernel's latency.
python3 - "$(file_of H100-SXM5-80GB)" "$(file_of A100-SXM4-80GB)" <<'PY'
import json, sys
h100, a100 = (json.load(open(p)) for p in sys.argv[1:])
a100["efficiency"]["oneshot_latency_s"] = h100["efficiency"]["oneshot_latency_s"]
json.dump(a100, open(sys.argv[2], "w"), indent=1)
PY
hw_fit H200-SXM-141GB Azure-cuBLASLt,Azure-STREAM gemm_compute,gemm_memory
# Each profile's error on every microbenchmark of its GPU.
for gpu in A100-SXM4-80GB H100-SXM5-80GB H200-SXM-141GB; do
  f=$(file_of "$gpu")
  "$PRIMA" calibrate --points "$MICRO" --gpu "$gpu" --profile "$f" --write-fidelity \
    --out "$TMP/hw.json" >/dev/null
  cp "$TMP/hw.json" "$f"
done

# 2. The Splitwise engine, per GPU, on the hardware above.
ENGINE=topologies/engines/splitwise-2023.json
STEP=step_overhead_s,seq_overhead_s,layer_overhead_s,layer_launch_s,attention_score_bytes,attention_unsharded_bytes,alibi_bias_bytes
STEP_BOUNDS=(--bound layer_launch_s=0:2ms --bound layer_overhead_s=0:200us
  --bound seq_overhead_s=0:2ms --bound step_overhead_s=0:20ms --bound attention_score_bytes=0:32
  --bound alibi_bias_bytes=0:64 --bound attention_unsharded_bytes=0:32)
# The fit starts from the terms the engine had in the combined hardware-and-engine fit of the
# Splitwise set (each GPU's), whatever the file holds now.
python3 - "$ENGINE" "$TMP/engine.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
seed = {
    "A100-SXM4-80GB": {"step_overhead_s": 0.0125, "seq_overhead_s": 3.9e-4, "layer_overhead_s": 4e-8,
                       "layer_launch_s": 4.0e-4, "attention_score_bytes": 5.59,
                       "attention_unsharded_bytes": 2.61, "alibi_bias_bytes": 15.97},
    "H100-SXM5-80GB": {"step_overhead_s": 0.0131, "seq_overhead_s": 2.9e-4, "layer_overhead_s": 3.1e-5,
                       "layer_launch_s": 2.05e-4, "attention_score_bytes": 1.34,
                       "attention_unsharded_bytes": 7.36, "alibi_bias_bytes": 6.29}}
for gpu, terms in seed.items():
    e["gpus"][gpu].update(terms)
e.pop("fidelity", None)
json.dump(e, open(sys.argv[2], "w"), indent=1)
PY
for pair in A100-SXM4-80GB:S2,S3,S4 H100-SXM5-80GB:S1,S3,S4; do
  gpu=${pair%%:*} sources=${pair#*:}
  "$PRIMA" calibrate --gpu "$gpu" --profile "$(file_of "$gpu")" --engine "$TMP/engine.json" \
    --sources "$sources" --fit "$STEP" "${STEP_BOUNDS[@]}" --max-error 0.09 \
    --out "$TMP/engine.new.json" >/dev/null
  mv "$TMP/engine.new.json" "$TMP/engine.json"
done
# H200 has no Splitwise measurement: the H100 host's terms.
python3 - "$TMP/engine.json" "$ENGINE" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
e["gpus"]["H200-SXM-141GB"] = dict(e["gpus"]["H100-SXM5-80GB"])
e["terms"] = dict(e["gpus"]["A100-SXM4-80GB"])
json.dump(e, open(sys.argv[2], "w"), indent=1)
open(sys.argv[2], "a").write("\n")
PY
for gpu in A100-SXM4-80GB H100-SXM5-80GB; do
  "$PRIMA" calibrate --sources S1,S2,S3,S4 --gpu "$gpu" --profile "$(file_of "$gpu")" \
    --engine "$ENGINE" | tail -1
done
# The Splitwise engine's error per GPU: out of sample on the held-out Splitwise grid (226
# figures nothing is fitted to: other TP degrees, prompt lengths, batches and contexts;
# prefill steps as TTFT, decode steps as TPOT), in sample on S1-S4. Each GPU with the profiles
# just written (the binary's built-in ones are those of its build).
for gpu in A100-SXM4-80GB H100-SXM5-80GB; do
  "$PRIMA" calibrate --points data/calibration/splitwise-grid.json --gpu "$gpu" \
    --profile "$(file_of "$gpu")" --engine "$ENGINE" --json > "$TMP/grid.$gpu.json"
  "$PRIMA" calibrate --sources S1,S2,S3,S4 --gpu "$gpu" --profile "$(file_of "$gpu")" \
    --engine "$ENGINE" --json > "$TMP/steps.$gpu.json"
done
python3 - "$TMP" "$ENGINE" <<'PY'
import json, statistics, sys
tmp, path = sys.argv[1], sys.argv[2]
grid = {"points": [p for g in ("A100-SXM4-80GB", "H100-SXM5-80GB")
                   for p in json.load(open(f"{tmp}/grid.{g}.json"))["points"]]}
steps = {"points": [p for g in ("A100-SXM4-80GB", "H100-SXM5-80GB")
                    for p in json.load(open(f"{tmp}/steps.{g}.json"))["points"]]}
def summary(errs):
    a = [abs(e) for e in errs]
    return {"points": len(a), "median_abs_error": statistics.median(a), "max_abs_error": max(a)}
e = json.load(open(path))
e["fidelity"] = {}
for gpu in ("A100-SXM4-80GB", "H100-SXM5-80GB"):
    g = [p for p in grid["points"] if p["gpu"] == gpu]
    s = [p["error"] for p in steps["points"] if p["gpu"] == gpu]
    e["fidelity"][gpu] = {
        "sources": ["Splitwise data/perf_model.csv (data/calibration/splitwise-grid.json, held out)"],
        "out_of_sample": summary([p["error"] for p in g]),
        "out_of_sample_by_metric": {
            "ttft": summary([p["error"] for p in g if "prefill" in p["id"]]),
            "tpot": summary([p["error"] for p in g if "decode" in p["id"]])},
        "in_sample": summary(s),
        "range": {"min_params_b": 69, "max_params_b": 176, "min_tp": 2, "max_tp": 8,
                  "max_batch": 64, "max_context": 8256}}
json.dump(e, open(path, "w"), indent=1)
open(path, "a").write("\n")
PY
