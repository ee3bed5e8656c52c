#!/usr/bin/env python3
"""prima's real CPU backend vs llama.cpp on the same GGUF file, in the same run.

For each thread count: prefill tokens/s (a 128-token prompt) and decode tokens/s (64 tokens,
end-of-generation ignored), prima through `prima generate`, llama.cpp through the PyPI
package llama-cpp-python (each in its own process, so peak RSS is per engine); then batch-8
decode throughput (8 sequences of that prompt decoded together) against batch-1 decode, for
both engines (llama.cpp through its C API: one llama_decode of 8 tokens of 8 sequences per
step). prima runs twice: with the weights in the GGUF layout (--no-repack) and packed
(--repack: 16-row panels for the AVX-512 VNNI kernels, prima's default where the CPU has them);
both give llama.cpp's numerics. Prints a table and writes JSON.

  python3 bench/real_vs_llamacpp.py [--model M] [--threads 1,2] [--repeats 3] [--out F.json]
                                    [--no-repack]

llama.cpp runs its plain CPU path (use_extra_bufts = False): its AMX buffer type crashes on
this machine, and prima has no AMX kernels either.

The machine is shared (and, as a virtual machine, loses time to its host: "steal"), and its
speed drifts by up to 2x within minutes. So each of the --repeats rounds runs llama.cpp,
prima batch-1 and prima batch-8 back to back, the ratios are taken within a round, and the
table shows the median over rounds of each ratio (with its range) next to the median
absolute figures. The CPU time stolen by the host during the rounds (/proc/stat) is shown
too: when it is high, every figure is low.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PRIMA = os.environ.get("PRIMA_BINARY", os.path.join(ROOT, "build", "prima"))
TEXT = ("The history of the printing press begins in the fifteenth century, when Johannes "
        "Gutenberg combined movable metal type, oil-based inks and a wooden screw press into a "
        "system that could produce books quickly and cheaply. Before this, books were copied by "
        "hand, a slow and expensive process that limited literacy to a small elite. The new "
        "technology spread across Europe within a few decades, and by 1500 presses in more than "
        "two hundred cities had printed millions of volumes. Printing changed religion, science "
        "and politics: it carried the ideas of the Reformation, let scientists share exact "
        "diagrams and tables, and made pamphlets a tool of public debate. Historians still argue")


def run(cmd, env=None):
    """Runs cmd; returns (stdout, stderr, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {e[-2000:]}")
    return o, e, ru.ru_maxrss / 1024.0


def _cpu_ticks():
    """(steal, total) jiffies of all CPUs from /proc/stat; (0, 0) where there is none."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0, 0
    return (v[7] if len(v) > 7 else 0), sum(v[:8])


def steal_fraction(rounds):
    """Share of the machine's CPU time that its host took during the rounds."""
    steal = sum(r["steal_ticks"] for r in rounds)
    total = sum(r["total_ticks"] for r in rounds)
    return steal / total if total > 0 else 0.0


def llama_worker(model, threads, n_prompt, n_decode, repeats):
    import time
    import llama_cpp
    import llama_cpp.llama
    default = llama_cpp.llama_model_default_params

    def plain():
        p = default()
        p.use_extra_bufts = False
        return p
    llama_cpp.llama_model_default_params = plain
    llama_cpp.llama.llama_cpp.llama_model_default_params = plain
    llm = llama_cpp.Llama(model_path=model, n_ctx=1024, n_threads=threads, n_threads_batch=threads,
                          n_batch=512, verbose=False)
    toks = llm.tokenize(TEXT.encode(), add_bos=False, special=False)[:n_prompt]
    pre, dec = [], []
    for _ in range(repeats):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(toks)
        pre.append(len(toks) / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n_decode):
            llm.eval([toks[i % len(toks)]])
        dec.append(n_decode / (time.perf_counter() - t0))
    print(json.dumps({"prompt_tokens": len(toks), "prefill_tps": statistics.median(pre),
                      "decode_tps": statistics.median(dec), "version": llama_cpp.__version__}))


def llama_batch_worker(model, threads, n_prompt, n_decode, batch):
    """llama.cpp decoding `batch` copies of the prompt together: tokens per second."""
    import time
    import llama_cpp
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.use_extra_bufts = False
    lm = llama_cpp.llama_model_load_from_file(model.encode(), mp)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = batch * (n_prompt + n_decode) + 64
    cp.n_batch = cp.n_ubatch = 512
    cp.n_seq_max = batch
    cp.n_threads = cp.n_threads_batch = threads
    ctx = llama_cpp.llama_init_from_model(lm, cp)
    vocab = llama_cpp.llama_model_get_vocab(lm)
    text = TEXT.encode()
    buf = (llama_cpp.llama_token * 1024)()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, 1024, False, False)
    toks = list(buf[:min(n, n_prompt)])
    b = llama_cpp.llama_batch_init(512, 0, batch)

    def decode(entries):
        b.n_tokens = len(entries)
        for i, (tok, pos, seq, logits) in enumerate(entries):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tok, pos, 1, logits
            b.seq_id[i][0] = seq
        if llama_cpp.llama_decode(ctx, b) != 0:
            raise RuntimeError("llama_decode failed")

    decode([(t, i, 0, i == len(toks) - 1) for i, t in enumerate(toks)])
    mem = llama_cpp.llama_get_memory(ctx)
    for s in range(1, batch):
        llama_cpp.llama_memory_seq_cp(mem, 0, s, -1, -1)
    t0 = time.perf_counter()
    for step in range(n_decode):
        decode([(toks[(step + s) % len(toks)], len(toks) + step, s, True) for s in range(batch)])
    print(json.dumps({"batch_decode_tps": batch * n_decode / (time.perf_counter() - t0)}))


def prima_run(model, threads, prompt_file, n_decode, batch=1, repack=False):
    cmd = [PRIMA, "generate", "--model", model, "--prompt-file", prompt_file, "--max-tokens",
           str(n_decode + 1), "--ignore-eos", "--threads", str(threads), "--ids"]
    if batch > 1:
        cmd += ["--batch", str(batch)]
    cmd += ["--repack"] if repack else ["--no-repack"]
    _, err, rss = run(cmd)
    m = re.search(r"prompt: (\d+) tokens, generated: (\d+) tokens; prefill ([\d.]+) tokens/s.*"
                  r"decode ([\d.]+) tokens/s", err)
    if not m:
        raise RuntimeError("unexpected prima output: " + err)
    r = {"prompt_tokens": int(m.group(1)), "prefill_tps": float(m.group(3)),
         "decode_tps": float(m.group(4)), "rss_mib": rss}
    b = re.search(r"batch decode ([\d.]+) tokens/s", err)
    if b:
        r["batch_decode_tps"] = float(b.group(1))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--out", default="")
    ap.add_argument("--no-repack", action="store_true", help="skip prima's --repack runs")
    ap.add_argument("--llama-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--llama-batch-worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.llama_worker:
        llama_worker(a.model, int(a.threads), a.prompt_tokens, a.decode_tokens, a.repeats)
        return
    if a.llama_batch_worker:
        llama_batch_worker(a.model, int(a.threads), a.prompt_tokens, a.decode_tokens, a.batch)
        return
    # The prompt prima reads: llama.cpp's first N tokens of TEXT, as text.
    import llama_cpp
    vocab = llama_cpp.Llama(model_path=a.model, vocab_only=True, verbose=False)
    ids = vocab.tokenize(TEXT.encode(), add_bos=False, special=False)[:a.prompt_tokens]
    prompt_file = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    prompt_file.write(vocab.detokenize(ids).decode())
    prompt_file.close()
    layouts = ["gguf"] + ([] if a.no_repack else ["packed"])
    rows = []
    med = statistics.median
    for t in [int(x) for x in a.threads.split(",")]:
        rounds = []
        for _ in range(a.repeats):
            steal0, total0 = _cpu_ticks()
            worker = [sys.executable, os.path.abspath(__file__), "--model", a.model, "--threads",
                      str(t), "--prompt-tokens", str(a.prompt_tokens), "--decode-tokens",
                      str(a.decode_tokens)]
            out, _, rss = run(worker + ["--llama-worker", "--repeats", "1"])
            ll = json.loads(out.strip().splitlines()[-1])
            ll["rss_mib"] = rss
            out, _, _ = run(worker + ["--llama-batch-worker", "--batch", str(a.batch)])
            ll["batch_decode_tps"] = json.loads(out.strip().splitlines()[-1])["batch_decode_tps"]
            rnd = {"llama_cpp": ll}
            for lay in layouts:
                rnd[lay] = prima_run(a.model, t, prompt_file.name, a.decode_tokens, 1, lay == "packed")
                rnd[lay + "_batch"] = prima_run(a.model, t, prompt_file.name, a.decode_tokens,
                                                a.batch, lay == "packed")
            steal1, total1 = _cpu_ticks()
            rnd["steal_ticks"], rnd["total_ticks"] = steal1 - steal0, total1 - total0
            rounds.append(rnd)
        ll = {k: med([r["llama_cpp"][k] for r in rounds])
              for k in ("prefill_tps", "decode_tps", "rss_mib", "batch_decode_tps")}
        ll["version"] = rounds[0]["llama_cpp"]["version"]
        ll["batch_speedup"] = med([r["llama_cpp"]["batch_decode_tps"] / r["llama_cpp"]["decode_tps"]
                                   for r in rounds])
        for lay in layouts:
            pr = {k: med([r[lay][k] for r in rounds]) for k in ("prefill_tps", "decode_tps", "rss_mib")}
            pr["prompt_tokens"] = rounds[0][lay]["prompt_tokens"]
            pr["batch"] = a.batch
            pr["batch_decode_tps"] = med([r[lay + "_batch"]["batch_decode_tps"] for r in rounds])
            pr["batch_rss_mib"] = max(r[lay + "_batch"]["rss_mib"] for r in rounds)
            ratios = {
                "prefill_ratio": [r[lay]["prefill_tps"] / r["llama_cpp"]["prefill_tps"] for r in rounds],
                "decode_ratio": [r[lay]["decode_tps"] / r["llama_cpp"]["decode_tps"] for r in rounds],
                "batch_speedup": [r[lay + "_batch"]["batch_decode_tps"] / r[lay]["decode_tps"]
                                  for r in rounds],
                "batch_ratio": [r[lay + "_batch"]["batch_decode_tps"] / r["llama_cpp"]["batch_decode_tps"]
                                for r in rounds],
            }
            row = {"threads": t, "layout": lay, "prima": pr, "llama_cpp": ll,
                   "steal_fraction": steal_fraction(rounds)}
            for k, v in ratios.items():
                row[k] = med(v)
                row[k + "_range"] = [min(v), max(v)]
            rows.append(row)
        rows[-1]["rounds"] = rounds  # once per thread count
    os.unlink(prompt_file.name)
    rng = lambda r, k: f"{r[k + '_range'][0]:.2f}-{r[k + '_range'][1]:.2f}"
    b = str(a.batch)
    print(f"{'threads':>7} {'layout':>6} {'prefill prima':>14} {'llama.cpp':>10} {'ratio (range)':>17} "
          f"{'decode prima':>13} {'llama.cpp':>10} {'ratio (range)':>17} {'b' + b + ' prima':>9} "
          f"{'x b1 (range)':>17} {'b' + b + ' llama':>9} {'x b1':>5} {'ratio (range)':>17} "
          f"{'RSS prima':>10} {'llama.cpp':>10} {'steal':>6}")
    for r in rows:
        p, l = r["prima"], r["llama_cpp"]
        print(f"{r['threads']:>7} {r['layout']:>6} {p['prefill_tps']:>14.1f} {l['prefill_tps']:>10.1f} "
              f"{r['prefill_ratio']:>5.2f} ({rng(r, 'prefill_ratio')}) "
              f"{p['decode_tps']:>13.1f} {l['decode_tps']:>10.1f} {r['decode_ratio']:>5.2f} ({rng(r, 'decode_ratio')}) "
              f"{p['batch_decode_tps']:>9.1f} {r['batch_speedup']:>5.2f} ({rng(r, 'batch_speedup')}) "
              f"{l['batch_decode_tps']:>9.1f} {l['batch_speedup']:>5.2f} {r['batch_ratio']:>5.2f} ({rng(r, 'batch_ratio')}) "
              f"{p['rss_mib']:>9.0f}M {l['rss_mib']:>9.0f}M {100 * r['steal_fraction']:>5.0f}%")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"model": os.path.basename(a.model), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
