#!/usr/bin/env python3
"""Prints the request lengths of an `sglang.bench_serving --dataset-name random` run.

bench_serving seeds NumPy's global generator with --seed (default 1), then draws every
input length and after them every output length:
    input_lens  = np.random.randint(max(int(input_len * ratio), 1), input_len + 1, num_prompts)
    output_lens = np.random.randint(max(int(output_len * ratio), 1), output_len + 1, num_prompts)
(--random-range-ratio `ratio`, default 0.0). Requests are sent in that order, so a prima
workload {"type": "sequence", "values": [...]} replays the run's lengths exactly. Check the
printed totals against the "Total input tokens" the benchmark printed: they match when the
version draws as above (its "Total generated tokens" may differ by a few percent where it
counts the output by re-tokenizing the text).

  python3 bench/fidelity/bench_serving_lengths.py --num-prompts 10 --input-len 1000 \\
      --output-len 1000            # {"prompt_tokens": {...}, "output_tokens": {...}, "totals": ...}
"""
import argparse
import json
import sys


def lengths(num_prompts, input_len, output_len, ratio=0.0, seed=1):
    import numpy as np

    np.random.seed(seed)
    ins = np.random.randint(max(int(input_len * ratio), 1), input_len + 1, size=num_prompts)
    outs = np.random.randint(max(int(output_len * ratio), 1), output_len + 1, size=num_prompts)
    return [int(x) for x in ins], [int(x) for x in outs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num-prompts", type=int, required=True)
    ap.add_argument("--input-len", type=int, required=True, help="--random-input-len")
    ap.add_argument("--output-len", type=int, required=True, help="--random-output-len")
    ap.add_argument("--range-ratio", type=float, default=0.0, help="--random-range-ratio")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.num_prompts < 1 or a.input_len < 1 or a.output_len < 1 or not 0 <= a.range_ratio <= 1:
        sys.exit("bench_serving_lengths.py: --num-prompts, --input-len and --output-len must be "
                 ">= 1 and --range-ratio in [0, 1]")
    ins, outs = lengths(a.num_prompts, a.input_len, a.output_len, a.range_ratio, a.seed)
    json.dump({"prompt_tokens": {"type": "sequence", "values": ins},
               "output_tokens": {"type": "sequence", "values": outs},
               "totals": {"input": sum(ins), "output": sum(outs)}}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
