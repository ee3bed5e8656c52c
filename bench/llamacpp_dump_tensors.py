#!/usr/bin/env python3
"""Dumps every intermediate tensor llama.cpp computes in one step, for llamacpp_op_replay.

llama.cpp through llama-cpp-python, with an eval callback (cb_eval, through ctypes) that
copies each F32/F16 tensor of the graph as it is computed into OUT_DIR/NNNN_<name>.bin (float32,
contiguous, ggml's ne order reversed) and lists them in OUT_DIR/index.json with their names,
ops, shapes and sources. One step: the prompt as one batch, or with --decode ID the prompt
first (not dumped) and then the single token ID. llama.cpp runs its plain CPU path
(use_extra_bufts = False), as in tests/data/real/make_reference_tokens.py.

  python3 bench/llamacpp_dump_tensors.py models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/pre "The capital of France is"
  python3 bench/llamacpp_dump_tensors.py models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/dec "The capital of France is" --decode 12366
  build/bench/prima_op_replay models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/pre
  build/bench/prima_op_replay models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/dec --history /tmp/pre

Not run by CI (llama-cpp-python is a source build of several minutes).
"""
import argparse
import ctypes
import json
import os

import numpy as np
import llama_cpp
import llama_cpp.llama

_model_defaults = llama_cpp.llama_model_default_params


def _plain_cpu():
    p = _model_defaults()
    p.use_extra_bufts = False
    return p


llama_cpp.llama_model_default_params = _plain_cpu
llama_cpp.llama.llama_cpp.llama_model_default_params = _plain_cpu


class GgmlTensor(ctypes.Structure):  # ggml.h's struct ggml_tensor (GGML_MAX_DIMS 4, MAX_SRC 10)
    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4),
                ("nb", ctypes.c_size_t * 4), ("op", ctypes.c_int), ("op_params", ctypes.c_int32 * 16),
                ("flags", ctypes.c_int32), ("src", ctypes.c_void_p * 10), ("view_src", ctypes.c_void_p),
                ("view_offs", ctypes.c_size_t), ("data", ctypes.c_void_p), ("name", ctypes.c_char * 64),
                ("extra", ctypes.c_void_p), ("padding", ctypes.c_char * 8)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("out_dir")
    ap.add_argument("prompt")
    ap.add_argument("--decode", type=int, default=None, help="dump the step of this one token after the prompt")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    base = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
    for f in ("ggml_op_desc", "ggml_get_name"):
        getattr(base, f).restype = ctypes.c_char_p
        getattr(base, f).argtypes = [ctypes.c_void_p]
    os.makedirs(a.out_dir, exist_ok=True)
    index, dumping = [], [False]

    def on_tensor(ptr, ask, _user):
        if ask or not dumping[0]:
            return True
        t = GgmlTensor.from_address(ptr)
        name = base.ggml_get_name(ptr).decode()
        if name != t.name.decode():
            raise SystemExit("ggml_tensor layout differs from this script's (name mismatch)")
        entry = {"name": name, "op": base.ggml_op_desc(ptr).decode(), "type": t.type, "ne": list(t.ne),
                 "src": [base.ggml_get_name(s).decode() if s else None for s in t.src[:3]]}
        if t.type in (0, 1):  # F32, F16
            dt, size = (np.float32, 4) if t.type == 0 else (np.float16, 2)
            ne, nb = list(t.ne), list(t.nb)
            nbytes = sum((ne[i] - 1) * nb[i] for i in range(4)) + size
            raw = np.frombuffer((ctypes.c_char * nbytes).from_address(t.data), dtype=dt)
            arr = np.lib.stride_tricks.as_strided(raw, shape=ne[::-1], strides=nb[::-1]).astype(np.float32)
            entry["file"] = f"{len(index):04d}_{name.replace('/', '_')}.bin"
            np.ascontiguousarray(arr).tofile(os.path.join(a.out_dir, entry["file"]))
        index.append(entry)
        return True

    callback_type = dict(llama_cpp.llama_context_params._fields_)["cb_eval"]
    callback = callback_type(on_tensor)
    context_defaults = llama_cpp.llama_context_default_params

    def with_callback():
        p = context_defaults()
        p.cb_eval = callback
        return p

    llama_cpp.llama_context_default_params = with_callback
    llama_cpp.llama.llama_cpp.llama_context_default_params = with_callback
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=1024, n_threads=a.threads, n_batch=512, verbose=False,
                          logits_all=True)
    tokens = llm.tokenize(a.prompt.encode(), add_bos=False, special=True)
    if a.decode is not None:
        llm.eval(tokens)
        tokens = [a.decode]
    dumping[0] = True
    llm.eval(tokens)
    with open(os.path.join(a.out_dir, "index.json"), "w") as f:
        json.dump({"tokens": tokens, "tensors": index}, f, indent=0)
    print(f"{len(index)} tensors of a {len(tokens)}-token step in {a.out_dir}")


if __name__ == "__main__":
    main()
