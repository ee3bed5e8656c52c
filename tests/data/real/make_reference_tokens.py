#!/usr/bin/env python3
"""Writes smollm2_reference.json: llama.cpp's greedy tokens for SmolLM2-135M-Instruct Q4_1.

The reference is llama.cpp through the PyPI package llama-cpp-python, on the same GGUF file
prima loads. For each prompt: the prompt's token ids (llama.cpp's tokenizer, special tokens
parsed) and the first 32 greedy tokens (fewer when an end-of-generation token comes first;
that token is kept, as prima keeps it). The chat prompt is rendered with the file's own
chat template by jinja2, as llama-cpp-python's chat handler does.

Not run by CI (it needs llama-cpp-python, a source build of several minutes); the JSON it
writes is committed and read by tests/backends/real/reference_tokens_test.cpp.
  python3 tests/data/real/make_reference_tokens.py models/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import json
import os
import sys

import jinja2
import numpy as np
import llama_cpp
import llama_cpp.llama

# This machine's CPU has AMX; llama.cpp's AMX "extra buffer type" crashes here (a segfault in
# ggml_backend_amx_mul_mat), so the reference runs llama.cpp's plain CPU path, as prima's
# kernels do: model params with use_extra_bufts = False (no AMX / repacked weight buffers).
_default_params = llama_cpp.llama_model_default_params


def _plain_cpu_params():
    p = _default_params()
    p.use_extra_bufts = False
    return p


llama_cpp.llama_model_default_params = _plain_cpu_params
llama_cpp.llama.llama_cpp.llama_model_default_params = _plain_cpu_params

N_TOKENS = 32
TOP_LOGITS = 5
PROMPTS = [
    {"name": "capital", "prompt": "The capital of France is"},
    {"name": "code", "prompt": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
    {"name": "story", "prompt": "Once upon a time, in a small village by the sea, there lived"},
    {"name": "science", "prompt": "Photosynthesis is the process by which plants"},
    {"name": "list", "prompt": "Here are three tips for staying healthy:\n1."},
    {"name": "chat", "messages": [{"role": "user", "content": "What is the boiling point of water at sea level?"}]},
    {"name": "chat_system", "messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "Name two planets of the solar system."}]},
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "smollm2_reference.json")
    llm = llama_cpp.Llama(model_path=path, n_ctx=1024, n_threads=2, n_batch=512, seed=0, verbose=False,
                          logits_all=True)
    template = llm.metadata["tokenizer.chat_template"]
    eog = {llm.token_eos()}
    for i in range(llm.n_vocab()):
        if llm.detokenize([i], special=True).decode("utf-8", "replace") in ("<|im_end|>", "<|endoftext|>"):
            eog.add(i)
    cases = []
    for p in PROMPTS:
        if "messages" in p:
            text = jinja2.Template(template).render(messages=p["messages"], add_generation_prompt=True)
        else:
            text = p["prompt"]
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        llm.reset()
        out_ids = []
        for tok in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0, reset=True):
            out_ids.append(int(tok))
            if tok in eog or len(out_ids) >= N_TOKENS:
                break
        # The logits llama.cpp produced each output token from, during that generation (the
        # prompt in one batch, then one token per step): the TOP_LOGITS best (id, value) pairs
        # at each position, values as the float32 they are (repr of the float: exact).
        top_logits = []
        for i in range(len(out_ids)):
            row = np.asarray(llm.scores[len(ids) - 1 + i], dtype=np.float32)
            best = np.argsort(-row, kind="stable")[:TOP_LOGITS]
            top_logits.append([[int(j), float(row[j])] for j in best])
        case = {"name": p["name"], "text": text, "prompt_ids": [int(t) for t in ids], "output_ids": out_ids,
                "top_logits": top_logits,
                "output_text": llm.detokenize(out_ids).decode("utf-8", "replace")}
        if "messages" in p:
            case["messages"] = p["messages"]
        cases.append(case)
        print(p["name"], len(ids), out_ids[:8], repr(case["output_text"][:60]))
    doc = {"model": os.path.basename(path), "reference": "llama.cpp via llama-cpp-python " + llama_cpp.__version__,
           "greedy_tokens": N_TOKENS, "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
