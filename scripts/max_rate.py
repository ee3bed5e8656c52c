#!/usr/bin/env python3
"""Highest Poisson rate at which a scenario meets its SLO, by bisection over `prima simulate`.

  scripts/max_rate.py SCENARIO [--set PATH=VALUE ...] [--lo 0.1] [--hi 64] [--tol 0.05]
                      [--ttft-p99 S] [--tpot-p99 S] [--e2e-p99 S] [--attainment 0.99]

Meets = every p99 bound given holds and slo.attainment >= --attainment. Prints one JSON line:
{"scenario", "sets", "max_rate_rps", "at": {report figures at that rate}}. Used by
docs/seed-claims.md until `prima plan` checks the claims itself. Deterministic (the
scenario's seed). Needs build/prima (or PRIMA_BINARY).
"""
import argparse
import json
import os
import subprocess
import sys

PRIMA = os.environ.get("PRIMA_BINARY", os.path.join(os.path.dirname(__file__), "..", "build", "prima"))


def run(scenario, sets, rate):
    cmd = [PRIMA, "simulate", scenario, "--json", "-q", "--set", f"workload.arrival.rate_rps={rate}"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"max_rate: prima simulate failed at rate {rate}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def meets(r, a):
    lat = r["latency_s"]
    ok = r["slo"]["attainment"] >= a.attainment
    if a.ttft_p99 is not None:
        ok = ok and lat["ttft"]["p99"] <= a.ttft_p99
    if a.tpot_p99 is not None:
        ok = ok and lat["tpot"]["p99"] <= a.tpot_p99
    if a.e2e_p99 is not None:
        ok = ok and lat["e2e"]["p99"] <= a.e2e_p99
    return ok


def figures(r):
    lat = r["latency_s"]
    return {"throughput_rps": r["throughput"]["requests_per_s"],
            "output_tokens_per_s": r["throughput"]["output_tokens_per_s"],
            "ttft_p99_s": lat["ttft"]["p99"], "tpot_p99_s": lat["tpot"]["p99"],
            "e2e_mean_s": lat["e2e"]["mean"], "e2e_p99_s": lat["e2e"]["p99"],
            "slo_attainment": r["slo"]["attainment"],
            "gpus": r["gpus"]["count"],
            "memory_used_fraction_max": r["gpus"]["memory_used_fraction_max"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--lo", type=float, default=0.1)
    p.add_argument("--hi", type=float, default=64)
    p.add_argument("--tol", type=float, default=0.05)
    p.add_argument("--ttft-p99", type=float)
    p.add_argument("--tpot-p99", type=float)
    p.add_argument("--e2e-p99", type=float)
    p.add_argument("--attainment", type=float, default=0.0)
    a = p.parse_args()
    best, best_r = None, None
    r = run(a.scenario, a.set, a.lo)
    if not meets(r, a):
        print(json.dumps({"scenario": a.scenario, "sets": a.set, "max_rate_rps": 0,
                          "at": figures(r), "note": f"misses the SLO even at {a.lo} req/s"}))
        return
    best, best_r = a.lo, r
    lo, hi = a.lo, a.hi
    while hi - lo > a.tol * lo:
        mid = (lo + hi) / 2
        r = run(a.scenario, a.set, round(mid, 4))
        if meets(r, a):
            lo, best, best_r = mid, round(mid, 4), r
        else:
            hi = mid
    print(json.dumps({"scenario": a.scenario, "sets": a.set, "max_rate_rps": best, "at": figures(best_r)}))


if __name__ == "__main__":
    main()
