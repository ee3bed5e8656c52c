#!/usr/bin/env python3
"""The GPU forward pass's checks and figures, run by scripts/gpu_check.sh on a lent GPU.

1. Tokens: `prima generate --synthetic SPEC --ids` on --device cpu and on the GPU, for each
   token model (SmolLM2-135M's shape in BF16, the dense GEMM, and in Q4_1 and Q8_0, the
   quantized matmul): the ids must be equal (the length of the common prefix is reported).
2. Speed: `prima profile --synthetic BIG --device DEV` (Llama 3 8B's shape, BF16, by
   default; the weights are made on the device, no 16 GB file is written), whose steps include decode at batch 1 and 64 and prefill of 2,048 tokens; from
   them, against the GPU's nominal peaks (a table by name; the measured copy bandwidth where
   the name is not in it):
   - decode at batch 1: weight bytes / step time as a fraction of HBM peak (target >= 0.70);
   - decode at batch 64, context 1,024: step time over the bandwidth floor, (weights + the 64
     sequences' KV cache) / HBM peak (target <= 1.3);
   - prefill of 2,048 tokens: 2 x parameters x tokens + causal attention FLOPs per second as a
     fraction of dense BF16 peak (target >= 0.50).
   The same profile again with --quantization fp8 (the layers' matrices as FP8 E4M3 on the
   device), --quantization int8 (INT8 W8A8) and --quantization w4a16 (4-bit groups, 16-bit
   activations): decode at batch 1 and 64 against the smaller weights, prefill against dense
   FP8, INT8 or BF16 peak.
3. Sampling on the device: the first token model at a temperature with top-k and top-p over
   four sequences, sampled on the device and on the host from the same logits
   (PRIMA_DEVICE_SAMPLING=0): the ids must be equal.
Writes one JSON object (--json) and prints a line per figure. Runs on any device prima takes,
so CI runs it on `cuda-emu` with the tiny model (the figures then mean nothing).
Exit: 0 tokens equal, 1 a command failed or the tokens differ (the speed targets are
reported, not enforced: they are what the kernels are measured against).
"""
import argparse
import json
import os
import subprocess
import sys
import time

# Nominal peaks: HBM bytes/s, dense BF16, FP8 and INT8 (tera)ops/s (no sparsity), from NVIDIA's
# data sheets (the A100 has no FP8).
PEAKS = [
    ("H200", 4.8e12, 989e12, 1979e12, 1979e12),
    ("H100 NVL", 3.9e12, 835e12, 1671e12, 1671e12),
    ("H100 PCIe", 2.0e12, 756e12, 1513e12, 1513e12),
    ("H100", 3.35e12, 989e12, 1979e12, 1979e12),  # SXM
    ("A100-SXM4-80GB", 2.039e12, 312e12, None, 624e12),
    ("A100 80GB PCIe", 1.935e12, 312e12, None, 624e12),
    ("A100", 1.555e12, 312e12, None, 624e12),  # 40 GB
]


def run(cmd, env):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def token_check(prima, device, spec, tokens, env):
    gen = [prima, "generate", "--synthetic", spec, "--ids", "--max-tokens", str(tokens),
           "--prompt", "The capital of France is a city that"]
    out = {"model": spec, "tokens": tokens}
    for where in ("cpu", device):
        rc, so, se, secs = run(gen + ["--device", where], env)
        key = "cpu" if where == "cpu" else "device"
        out[key + "_s"] = round(secs, 2)
        if rc != 0:
            out["error"] = f"--device {where} exit {rc}: {se.strip()[-400:]}"
            return out
        out[key + "_ids"] = [int(x) for x in so.split()]
    a, b = out["cpu_ids"], out["device_ids"]
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    out["equal_prefix"] = n
    out["equal"] = a == b
    return out


def sampling_check(prima, device, spec, tokens, env):
    gen = [prima, "generate", "--synthetic", spec, "--ids", "--max-tokens", str(tokens),
           "--batch", "4", "--temperature", "0.9", "--top-k", "40", "--top-p", "0.9", "--seed",
           "5", "--prompt", "Sampled on the device", "--device", device]
    out = {"model": spec, "tokens": tokens, "command": " ".join(gen[1:])}
    for key, extra in (("host", {"PRIMA_DEVICE_SAMPLING": "0"}), ("device", {})):
        rc, so, se, secs = run(gen, {**env, **extra})
        if rc != 0:
            out["error"] = f"sampling on the {key}: exit {rc}: {se.strip()[-400:]}"
            return out
        out[key + "_ids"] = [int(x) for x in so.split()]
        out[key + "_s"] = round(secs, 2)
    out["equal"] = out["host_ids"] == out["device_ids"]
    return out


def peaks_for(device_name, measured_Bps, quant):
    for name, bw, bf16, f8, i8 in PEAKS:
        if name in device_name:
            return bw, {"fp8": f8, "int8": i8}.get(quant, bf16), "nominal (" + name + ")"
    return measured_Bps, None, "measured copy bandwidth; no nominal FLOP/s for this device"


def speed_check(prima, device, big, contexts, repeats, out_dir, env, quant=None):
    tag = big.replace(":", "-") + ("-" + quant if quant else "")
    prof = os.path.join(out_dir, "profile-" + tag + ".json")
    cmd = [prima, "profile", "--synthetic", big, "--device", device, "--repeats",
           str(repeats), "--contexts", contexts, "--out", prof]
    if quant:
        cmd += ["--quantization", quant]
    rc, so, se, secs = run(cmd, env)
    res = {"model": big, "fp8": quant == "fp8", "quantization": quant or "none",
           "command": " ".join(cmd[1:]), "seconds": round(secs, 1)}
    if rc != 0:
        res["error"] = f"exit {rc}: {se.strip()[-600:]}"
        return res
    p = json.load(open(prof))
    m = p["measurements"]
    spec_dir = env.get("PRIMA_SYNTHETIC_DIR", "")
    name, _, wtype = big.partition(":")
    # The file the device's weights were made from (its matrices a hole of their size), or the
    # written one.
    stem = os.path.join(spec_dir, f"{name}-{wtype or 'bf16'}-s1")
    wfile = next((f for f in (stem + "-device.gguf", stem + ".gguf") if os.path.exists(f)), None)
    weight_bytes = os.path.getsize(wfile) if wfile else None
    model = m.get("model_shape", {})
    if quant and weight_bytes and model.get("layer_params"):
        # the layers' matrices: 1 byte an element, not 2; W4A16 half a byte and an f16 scale and
        # minimum per group of 128
        per = 0.5 + 4 / 128 if quant == "w4a16" else 1.0
        weight_bytes -= int(model["layer_params"] * (2 - per))
    res.update({"device": m.get("device"), "copy_bandwidth_GBps": m.get("read_bandwidth_GBps"),
                "weight_bytes": weight_bytes, "steps": m["steps"]})
    bw, flops_peak, basis = peaks_for(m.get("device", ""), m.get("read_bandwidth_GBps", 0) * 1e9,
                                      quant)
    res["peak_basis"] = basis
    res["peak_hbm_GBps"] = bw / 1e9
    res["peak_dense_TFLOPs"] = flops_peak / 1e12 if flops_peak else None

    def step(kind, seqs, tokens, ctx):
        for s in m["steps"]:
            if (s["kind"], s["seqs"], s["tokens"], s["context"]) == (kind, seqs, tokens, ctx):
                return s["seconds"]
        return None

    layers = model.get("layers")
    kv_token = None
    if layers:
        kv_token = layers * 2 * model["kv_heads"] * model["head_dim"] * 2  # f16 K and V
    figs = {}
    t1 = step("decode", 1, 1, 128)
    if t1 and weight_bytes:
        frac = weight_bytes / t1 / bw
        figs["decode_b1"] = {"seconds": t1, "GBps": weight_bytes / t1 / 1e9,
                             "fraction_of_hbm_peak": frac, "target": ">= 0.70",
                             "met": frac >= 0.70}
    t64 = step("decode", 64, 64, 1024)
    if t64 and weight_bytes and kv_token:
        floor = (weight_bytes + 64 * 1024 * kv_token) / bw
        figs["decode_b64_ctx1024"] = {"seconds": t64, "floor_s": floor, "ratio": t64 / floor,
                                      "target": "<= 1.3", "met": t64 / floor <= 1.3}
    tp = step("prefill", 1, 2048, 2048)
    if tp and layers:
        heads, hd, n = model["heads"], model["head_dim"], 2048
        # the layers' matrices for every token, QK^T and PV over the causal half, the LM head
        # for the last token
        flops = (2 * model["layer_params"] * n + 2 * 2 * layers * heads * hd * n * n / 2 +
                 2 * model["vocab"] * model["hidden"])
        fig = {"seconds": tp, "TFLOPs": flops / tp / 1e12}
        if flops_peak:
            fig.update({"fraction_of_dense_peak": flops / tp / flops_peak, "target": ">= 0.50",
                        "met": flops / tp / flops_peak >= 0.50})
        figs["prefill_2048"] = fig
    res["figures"] = figs
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prima", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--token-models", default="smollm2-135m:bf16,smollm2-135m:q4_1,smollm2-135m:q8_0")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--big", default="llama-3-8b:bf16")
    ap.add_argument("--contexts", default="128,1024,2048")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-fp8", action="store_true", help="skip the FP8 profile")
    ap.add_argument("--no-int8", action="store_true", help="skip the INT8 W8A8 profile")
    ap.add_argument("--no-w4a16", action="store_true", help="skip the W4A16 profile")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("PRIMA_SYNTHETIC_DIR", os.path.join(a.out_dir, "synthetic"))
    result = {"device": a.device, "tokens": [], "sampling": None, "speed": None,
              "speed_fp8": None, "speed_int8": None, "speed_w4a16": None}
    ok = True
    models = [s for s in a.token_models.split(",") if s]
    for spec in models:
        t = token_check(a.prima, a.device, spec, a.tokens, env)
        result["tokens"].append(t)
        if "error" in t:
            print(f"forward: {spec}: {t['error']}")
            ok = False
        else:
            print(f"forward: {spec}: {t['equal_prefix']}/{len(t['cpu_ids'])} ids equal to the "
                  f"CPU path's (cpu {t['cpu_s']} s, {a.device} {t['device_s']} s)")
            ok = ok and t["equal"]
    if models:
        t = sampling_check(a.prima, a.device, models[0], a.tokens, env)
        result["sampling"] = t
        if "error" in t:
            print(f"forward: {t['error']}")
            ok = False
        else:
            print(f"forward: sampling {models[0]} (top-k 40, top-p 0.9, 4 sequences): device ids "
                  f"{'equal' if t['equal'] else 'DIFFER from'} the host sampler's")
            ok = ok and t["equal"]
    quants = ([None] + ([] if a.no_fp8 else ["fp8"]) + ([] if a.no_int8 else ["int8"]) +
              ([] if a.no_w4a16 else ["w4a16"]))
    for quant in quants if a.big else []:
        s = speed_check(a.prima, a.device, a.big, a.contexts, a.repeats, a.out_dir, env, quant)
        result["speed_" + quant if quant else "speed"] = s
        what = a.big + (" --quantization " + quant if quant else "")
        if "error" in s:
            print(f"forward: profile {what}: {s['error']}")
            ok = False
        else:
            print(f"forward: profile {what} on {s['device']} ({s['seconds']} s; peaks: "
                  f"{s['peak_basis']})")
            for k, f in s["figures"].items():
                print(f"forward:   {k}: " + ", ".join(
                    f"{x} {v:.4g}" if isinstance(v, float) else f"{x} {v}" for x, v in f.items()))
    result["status"] = "passed" if ok else "failed"
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
