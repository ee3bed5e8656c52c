#!/usr/bin/env python3
"""Writes data/calibration/splitwise-grid.json: the held-out check of the hardware profiles.

Input: data/calibration/splitwise-perf-model.csv, the per-configuration means (5 runs each) of
Mutinifni/splitwise-sim data/perf_model.csv (commit 3780880), the profiling data released with
Splitwise (ISCA'24): Llama-2-70B at TP 2/4/8 and BLOOM-176B at TP 8 on DGX-A100 and DGX-H100,
FP16. The calibration set (data/calibration/published.json, S1-S4) holds 26 of these figures;
this file holds every other one, which the profiles were not fitted to:
  - prefill of one prompt of 128-8192 tokens ("prompt_time" at batch 1);
  - prefill of 2-64 prompts of 512 tokens in one step ("prompt_time" at batch > 1);
  - one decode step ("token_time") of 1-64 sequences (prompt 512, 128 output tokens: mean
    context 576) and of one sequence with 128-8192 output tokens (mean context 512 + out/2).
Left out: the power-capped H100 ("h100-80gb-pcap", a different operating point) and batch 64
at TP2, whose prefill is measured faster than batch 32 (796 vs 6,607 ms on A100, 361 vs
2,394 ms on H100) and whose decode step too (67.3 vs 72.2 ms, 42.3 vs 52.3 ms): not 64 sequences.
  python3 bench/fidelity/splitwise_grid.py   # rewrites data/calibration/splitwise-grid.json
"""
import csv
import json
import os

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
GPUS = {"a100-80gb": ("A100-SXM4-80GB", "A100", "300GB/s"),
        "h100-80gb": ("H100-SXM5-80GB", "H100", "450GB/s")}
MODELS = {"llama2-70b": "llama-2-70b", "bloom-176b": "bloom-176b"}


def step_key(p):
    return (p["model"], p["gpu"], p["tensor_parallel"], p["phase"], p["batch"],
            p.get("tokens"), p.get("context"))


def main():
    calib = json.load(open(os.path.join(ROOT, "data/calibration/published.json")))
    seen = {step_key(p) for p in calib["points"] if p["kind"] == "step"}  # fitted, or added
    points = []

    def add(ident, base, phase, batch, measured_ms, **shape):
        p = dict(base, id=ident, phase=phase, batch=batch, measured=f"{measured_ms}ms", **shape)
        if step_key(p) not in seen:
            seen.add(step_key(p))
            points.append(p)

    for r in csv.DictReader(open(os.path.join(ROOT, "data/calibration/splitwise-perf-model.csv"))):
        if r["hardware"] not in GPUS:
            continue
        gpu, short, bw = GPUS[r["hardware"]]
        model, tp = MODELS[r["model"]], int(r["tp"])
        prompt, batch, out = int(r["prompt_size"]), int(r["batch_size"]), int(r["token_size"])
        base = {"source": "SW", "kind": "step", "model": model, "gpu": gpu, "tensor_parallel": tp,
                "quantization": "fp16", "link": {"bandwidth": bw, "latency": "2us"}}
        name = f"SW {model} {short} TP{tp}"
        if batch == 64 and tp == 2:
            continue
        if out == 128:
            what = f"prefill {prompt} tok" + (f" x{batch}" if batch > 1 else "")
            add(f"{name} {what}", base, "prefill", batch, r["prompt_time_ms"], tokens=prompt)
        context = prompt + out // 2
        add(f"{name} decode bs{batch} ctx {context}", base, "decode", batch, r["token_time_ms"],
            context=context)
    doc = {"description": "Held-out check of the hardware profiles (not fitted to): " +
           " ".join(__doc__.split("\n")[2:10]).strip(), "points": points}
    path = os.path.join(ROOT, "data/calibration/splitwise-grid.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(points)} points")


if __name__ == "__main__":
    main()
