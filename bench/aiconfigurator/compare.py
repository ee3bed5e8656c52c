#!/usr/bin/env python3
"""prima against AIConfigurator on fixed configurations (cases.json).

For each case, prima serves the configuration with `batch` users in a closed loop (no think
time, fixed prompt and output lengths, max_num_seqs = batch, one prefill chunk of the prompt
per step), so the batch in flight is the one AIConfigurator scores. It prints both tools'
TTFT and TPOT (prima: medians) and output tokens/s per GPU (prima: the steady state, 60 to
240 s) and their ratios, and writes them as JSON.

    python3 bench/aiconfigurator/compare.py [--prima build/prima] [--out out/aic.json]

The AIConfigurator figures are the ones cases.json records (its command is in each case);
with `aiconfigurator` installed, rerun those commands to refresh them.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def scenario(case):
    p = case["prima"]
    topology = {"base": "h200_node", "nodes": p["nodes"], "gpu": p["gpu"]}
    if p["nodes"] > 1:  # HGX: eight 400 Gb/s rails per node, as one port
        topology["node"] = {"nic": {"bandwidth": "3200Gb/s", "latency": "1us"}}
        topology["fabric"] = {"type": "fat_tree",
                              "link": {"bandwidth": "3200Gb/s", "latency": "1us"}}
    strategy = {"tensor_parallel": p["tp"]}
    if p.get("dp", 1) > 1:
        strategy["data_parallel"] = p["dp"]
    if p.get("ep", 1) > 1:
        strategy["expert_parallel"] = p["ep"]
    deployment = {"parallel_strategy": strategy, "replicas": 1}
    if "kv_cache_dtype" in p:
        deployment["kv_cache_dtype"] = p["kv_cache_dtype"]
    b, isl, osl = p["batch"], p["isl"], p["osl"]
    # Each user's request lasts about osl steps; its users start spread over one lifetime so
    # the prefills interleave with decodes as in steady in-flight batching.
    return {
        "name": case["id"], "seed": 1, "duration": "240s",
        "model": p["model"], "quantization": p["quantization"], "topology": topology,
        "deployment": deployment,
        "scheduler": {"max_num_seqs": b, "max_num_batched_tokens": isl + b,
                      "max_model_len": isl + osl},
        "workload": {
            "arrival": {"type": "closed_loop", "users": b, "think_time_s": "0s",
                        "ramp_up_s": "30s"},
            "prompt_tokens": {"type": "fixed", "value": isl},
            "output_tokens": {"type": "fixed", "value": osl},
        },
    }


STEADY_FROM_S, STEADY_TO_S = 60, 240  # after the ramp-up, before the arrivals stop


def run_prima(prima, case):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenario.json")
        json.dump(scenario(case), open(path, "w"))
        out = os.path.join(tmp, "out")
        r = subprocess.run([prima, "simulate", path, "--out", out, "-q"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"prima failed on {case['id']}: {r.stderr.strip()}")
        rep = json.load(open(os.path.join(out, "report.json")))
        # Steady state: output tokens per second from the per-second timeline.
        with open(os.path.join(out, "timeline.csv")) as f:
            rows = list(csv.DictReader(f))
        steady = [int(x["tokens_generated"]) for x in rows
                  if STEADY_FROM_S < float(x["t_s"]) <= STEADY_TO_S]
    lat = rep["latency_s"]
    return {
        "ttft_ms": lat["ttft"]["p50"] * 1e3,
        "tpot_ms": lat["tpot"]["p50"] * 1e3,
        "tokens_per_s_gpu": sum(steady) / len(steady) / rep["gpus"]["count"],
        "gpu_utilization": rep["gpus"]["utilization_mean"],
        "fidelity": rep.get("fidelity", {}).get("summary", ""),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prima", default=os.path.join(ROOT, "build", "prima"))
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    cases = json.load(open(args.cases))["cases"]
    rows = []
    print(f"{'case':36} {'TTFT ms aic/prima':>22} {'TPOT ms aic/prima':>20} "
          f"{'tok/s/GPU aic/prima':>24}")
    for c in cases:
        p = run_prima(args.prima, c)
        a = c["aic"]
        rows.append({"id": c["id"], "aic": a, "prima": p})
        print(f"{c['id']:36} {a['ttft_ms']:9.1f} {p['ttft_ms']:9.1f} "
              f"{a['tpot_ms']:8.2f} {p['tpot_ms']:8.2f} ({p['tpot_ms'] / a['tpot_ms']:.2f}x) "
              f"{a['tokens_per_s_gpu']:8.1f} {p['tokens_per_s_gpu']:8.1f} "
              f"({p['tokens_per_s_gpu'] / a['tokens_per_s_gpu']:.2f}x)", flush=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        json.dump(rows, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
