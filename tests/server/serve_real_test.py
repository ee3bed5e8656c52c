#!/usr/bin/env python3
"""End-to-end tests of `prima serve --backend real` with SmolLM2-135M on the CPU.

Starts the real prima binary with the real model and drives it with the official `openai`
package, curl and raw sockets. Checks that the server answers what `prima generate` answers
(greedy, same prompt), that streaming and non-streaming agree, stop strings, seeded sampling,
requests batched together answer what they answer alone, TGI and KServe v2, bad token ids,
a client disconnecting mid-stream, and the metrics.

usage: serve_real_test.py PATH/TO/prima MODEL.gguf  (exit 0: pass, 77: skipped, 1: failures)
"""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (the Server harness)
from serve_test import Server, open_stream, read_until  # noqa: E402

SKIP = 77
MODEL = None
SRV = None  # the shared server
CHAT_PROMPT = "What is the capital of France?"


def generate(*args):
    """`prima generate` on the same model: (stdout text without the final newline, stderr)."""
    out = subprocess.run([serve_test.PRIMA, "generate", "--model", MODEL, *args],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"prima generate failed: {out.stderr}")
    return out.stdout[:-1] if out.stdout.endswith("\n") else out.stdout, out.stderr


def client():
    import openai
    return openai.OpenAI(base_url=SRV.base + "/v1", api_key="none", max_retries=0, timeout=120)


def model_name():
    return json.loads(SRV.request("GET", "/v1/models")[2])["data"][0]["id"]


class RealServeTest(unittest.TestCase):
    def test_models_lists_the_file(self):
        self.assertEqual(model_name(), "SmolLM2-135M-Instruct.Q4_1")
        info = json.loads(SRV.request("GET", "/v1/models")[2])["data"][0]
        self.assertEqual(info["max_model_len"], 1024)
        # The limits it serves with (--max-num-seqs 4, --max-model-len 1024), in /health.
        lim = json.loads(SRV.request("GET", "/health")[2])["limits"]
        self.assertEqual(lim["max_num_seqs"], 4)
        self.assertEqual(lim["max_model_len"], 1024)
        self.assertEqual(lim["replicas"], 1)

    def test_greedy_chat_equals_prima_generate(self):
        want, err = generate("--chat", "--prompt", CHAT_PROMPT, "--max-tokens", "24")
        r = client().chat.completions.create(
            model=model_name(), messages=[{"role": "user", "content": CHAT_PROMPT}],
            max_tokens=24, temperature=0)
        self.assertEqual(r.choices[0].message.content, want)
        self.assertIn(f"prompt: {r.usage.prompt_tokens} tokens", err)
        self.assertIn(r.choices[0].finish_reason, ("length", "stop"))

    def test_streaming_equals_non_streaming_one_chunk_per_token(self):
        c = client()
        kw = dict(model=model_name(), prompt="Once upon a time", max_tokens=20, temperature=0)
        whole = c.completions.create(**kw)
        chunks = list(c.completions.create(**kw, stream=True,
                                           stream_options={"include_usage": True}))
        text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
        self.assertEqual(text, whole.choices[0].text)
        self.assertEqual(whole.usage.completion_tokens, 20)
        self.assertEqual(chunks[-1].usage.completion_tokens, 20)
        self.assertEqual(sum(1 for ch in chunks if ch.choices and ch.choices[0].finish_reason is None),
                         20)

    def test_stop_string_ends_the_request_early(self):
        c = client()
        kw = dict(model=model_name(), prompt="The capital of France is", temperature=0)
        full = c.completions.create(**kw, max_tokens=20).choices[0].text
        self.assertIn(".", full)
        r = c.completions.create(**kw, max_tokens=20, stop=["."])
        self.assertEqual(r.choices[0].text, full[:full.index(".")])
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertLess(r.usage.completion_tokens, 20)
        # Streaming: the stop string never reaches the client, even split across tokens.
        s = "".join(ch.choices[0].text
                    for ch in c.completions.create(**kw, max_tokens=20, stop=["."], stream=True)
                    if ch.choices)
        self.assertEqual(s, r.choices[0].text)
        SRV.wait_idle(30)

    def test_seeded_sampling_is_reproducible(self):
        c = client()
        kw = dict(model=model_name(), prompt="My favourite food is", max_tokens=24,
                  temperature=1.5)
        a = c.completions.create(**kw, seed=7).choices[0].text
        b = c.completions.create(**kw, seed=7).choices[0].text
        d = c.completions.create(**kw, seed=8).choices[0].text
        self.assertEqual(a, b)
        self.assertNotEqual(a, d)

    def test_requests_batched_together_answer_what_they_answer_alone(self):
        prompts = ["Water boils at", "The largest planet is", "def fibonacci(n):",
                   "In 1492, Columbus"]
        c = client()
        alone = [c.completions.create(model=model_name(), prompt=p, max_tokens=16,
                                      temperature=0).choices[0].text for p in prompts]
        together = [None] * len(prompts)

        def run(i):
            together[i] = client().completions.create(model=model_name(), prompt=prompts[i],
                                                      max_tokens=16, temperature=0).choices[0].text
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(together, alone)

    def test_tgi_and_kserve_answer_the_greedy_text(self):
        want = client().completions.create(model=model_name(), prompt="Once upon a time",
                                           max_tokens=12, temperature=0).choices[0].text
        code, body = SRV.curl(f"{SRV.base}/generate", "-H", "Content-Type: application/json",
                              "-d", json.dumps({"inputs": "Once upon a time",
                                                "parameters": {"max_new_tokens": 12}}))
        self.assertEqual(code, 200, body)
        self.assertEqual(json.loads(body)["generated_text"], want)
        code, body = SRV.curl(
            f"{SRV.base}/v2/models/{model_name()}/infer", "-H", "Content-Type: application/json",
            "-d", json.dumps({"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES",
                                          "data": ["Once upon a time"]}],
                              "parameters": {"max_tokens": 12}}))
        self.assertEqual(code, 200, body)
        self.assertEqual(json.loads(body)["outputs"][0]["data"][0], want)

    def test_token_id_prompts_and_bad_ids(self):
        ids = [504, 3458, 282]  # any ids of the vocabulary
        r = client().completions.create(model=model_name(), prompt=ids, max_tokens=4,
                                        temperature=0)
        self.assertEqual(r.usage.prompt_tokens, 3)
        code, body = SRV.curl(f"{SRV.base}/v1/completions", "-H", "Content-Type: application/json",
                              "-d", json.dumps({"model": model_name(), "prompt": [1, 49152],
                                                "max_tokens": 4}))
        self.assertEqual(code, 400, body)
        self.assertEqual(json.loads(body)["error"]["param"], "prompt")
        self.assertIn("prompt[1]", json.loads(body)["error"]["message"])
        code, body = SRV.curl(f"{SRV.base}/v1/completions", "-H", "Content-Type: application/json",
                              "-d", json.dumps({"model": model_name(), "prompt": "hi",
                                                "temperature": -1}))
        self.assertEqual(code, 400, body)
        self.assertEqual(json.loads(body)["error"]["param"], "temperature")
        code, body = SRV.curl(f"{SRV.base}/v1/completions", "-H", "Content-Type: application/json",
                              "-d", json.dumps({"model": model_name(), "prompt": "word " * 1100}))
        self.assertEqual(code, 400, body)
        self.assertIn("maximum context length is 1024", body)

    def test_disconnect_mid_stream_frees_the_kv_blocks(self):
        SRV.wait_idle(30)
        s = open_stream(SRV.port, "/v1/completions",
                        {"model": model_name(), "prompt": "Tell me a long story.",
                         "max_tokens": 800, "stream": True, "ignore_eos": True})
        got = read_until(s, b"data:")
        self.assertIn(b"text/event-stream", got)
        h = SRV.health()
        self.assertEqual(h["in_system"], 1)
        self.assertLess(h["kv_free_blocks"], h["kv_blocks"])
        s.close()
        h = SRV.wait_idle(30)
        self.assertEqual(h["kv_free_blocks"], h["kv_blocks"])

    def test_health_counts_a_request_once_its_first_token_is_out(self):
        # A short prompt's first token reaches the client within a few milliseconds; /health
        # must already count the request then (it once showed the last gauge tick's state,
        # up to 20 ms old: stale in about half of such tries).
        SRV.wait_idle(30)
        for i in range(10):
            s = open_stream(SRV.port, "/v1/completions",
                            {"model": model_name(), "prompt": "Hi", "max_tokens": 64,
                             "stream": True, "ignore_eos": True})
            read_until(s, b"data:")
            h = SRV.health()
            s.close()
            self.assertEqual(h["in_system"], 1, f"try {i}: {h}")
            SRV.wait_idle(30)

    def test_metrics_count_generated_tokens(self):
        client().completions.create(model=model_name(), prompt="Hello", max_tokens=3,
                                    temperature=0)
        text = SRV.request("GET", "/metrics")[2].decode()
        total = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                    if line.startswith("prima:generation_tokens_total{"))
        self.assertGreaterEqual(total, 3)


class TensorParallelServeTest(unittest.TestCase):
    def test_tp3_under_mpirun_answers_what_one_process_answers(self):
        import shutil
        import signal
        import tempfile
        if not shutil.which("mpirun"):
            self.skipTest("mpirun (Debian openmpi-bin) is not installed")
        prompt = {"prompt": "The largest planet is", "max_tokens": 8, "temperature": 0}
        want = client().completions.create(model=model_name(), **prompt).choices[0].text
        with tempfile.TemporaryDirectory() as d:
            port_file = os.path.join(d, "port")
            log = open(os.path.join(d, "log"), "w+")
            proc = subprocess.Popen(
                ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3",
                 serve_test.PRIMA, "serve", "--backend", "real", "--model", MODEL, "--tp", "3",
                 "--max-model-len", "256", "--max-num-seqs", "1", "--kernel-threads", "1",
                 "--port", "0", "--port-file", port_file],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                deadline = time.time() + 120
                while not os.path.exists(port_file):
                    self.assertIsNone(proc.poll(), "mpirun exited early")
                    self.assertLess(time.time(), deadline, "the TP server did not start")
                    time.sleep(0.1)
                import openai
                with open(port_file) as f:
                    port = int(f.read())
                c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                                  max_retries=3, timeout=300)
                got = c.completions.create(model=model_name(), **prompt).choices[0].text
                self.assertEqual(got, want)
            finally:
                os.killpg(proc.pid, signal.SIGTERM)  # mpirun forwards it; rank 0 drains
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                log.seek(0)
                out = log.read()
                log.close()
            self.assertIn("TP3 x PP1", out)


def main():
    global MODEL, SRV
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    serve_test.PRIMA = sys.argv.pop(1)
    MODEL = sys.argv.pop(1)
    if not os.path.exists(MODEL):
        print(f"SKIP: the model file {MODEL} is missing (scripts/fetch-model.sh)")
        return SKIP
    try:
        import openai  # noqa: F401
    except ImportError:
        print("SKIP: the openai package is not installed (python3 -m pip install openai)")
        return SKIP
    SRV = Server("--model", MODEL, "--max-model-len", "1024", "--max-num-seqs", "4",
                 backend="real", start_timeout=120)
    try:
        prog = unittest.main(exit=False, verbosity=2)
        ok = prog.result.wasSuccessful()
    finally:
        SRV.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
