#!/usr/bin/env python3
"""prima_gpu_gemm_bench on the CUDA execution layer for the CPU (the reference GEMM): small
BF16, FP8 and INT8 shapes run, their sampled outputs check against double sums (INT8 exactly), the JSON holds one
result per shape and type with a time and a throughput; FP8 before sm_89 is skipped, not failed;
bad flags exit 2 naming the flag.  Usage: gemm_bench_test.py PRIMA_GPU_GEMM_BENCH_EMU"""
import json
import os
import subprocess
import sys
import tempfile


def run(args, env=None):
    return subprocess.run([sys.argv[1]] + args, capture_output=True, text=True, timeout=240,
                          env={**os.environ, **(env or {})})


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "gemm.json")
        r = run(["--shapes", "16x32x64,33x17x48", "--types", "bf16,fp8,int8", "--iters", "2",
                 "--warmup", "1", "--json", out])
        check(r.returncode == 0, f"exit {r.returncode}: {r.stdout}{r.stderr}")
        j = json.load(open(out))
        res = j["results"]
        check(len(res) == 6, f"6 results, got {len(res)}")
        check([(x["m"], x["n"], x["k"], x["type"]) for x in res] ==
              [(16, 32, 64, "bf16"), (16, 32, 64, "fp8"), (16, 32, 64, "int8"),
               (33, 17, 48, "bf16"), (33, 17, 48, "fp8"), (33, 17, 48, "int8")],
              f"shapes and types: {res}")
        for x in res:
            check(x["ok"] and not x["skipped"], f"ran and checked: {x}")
            check(x["ms"] > 0 and x["TFLOPs"] > 0, f"timed: {x}")
            check(0 <= x["max_err_over_tol"] <= 1, f"within tolerance: {x}")
            check(x["detail"].startswith("reference"), f"the emulated build's GEMM: {x}")

        r = run(["--shapes", "8x8x32", "--types", "fp8", "--iters", "1", "--json", out],
                {"PRIMA_CUDA_EMU_SM": "80"})
        check(r.returncode == 0, f"sm_80: exit {r.returncode}: {r.stdout}{r.stderr}")
        x = json.load(open(out))["results"][0]
        check(x["skipped"] and "sm_89" in x["detail"], f"sm_80 skips FP8: {x}")

    for args, flag in [(["--shapes", "8x8"], "--shapes"), (["--types", "int4"], "--types"),
                       (["--iters", "0"], "--iters"), (["--bogus", "1"], "--bogus")]:
        r = run(args)
        check(r.returncode == 2 and flag in r.stderr, f"{args}: exit {r.returncode}, {r.stderr}")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("gemm bench on the execution layer: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
