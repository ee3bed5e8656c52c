#!/usr/bin/env python3
"""End-to-end tests of `prima bench` against `prima serve --backend sim`.

Starts the real prima binary as a server on a free port (seed 001's scenario, --speed 20) and
runs `prima bench` for every endpoint, streaming and not, closed and open loop, a dataset, a
trace and a scenario workload; checks the JSON (counts, ordered percentiles, throughput, keys,
token totals the sim backend makes exact) and the exit codes of bad flags, bad files, a wrong
URL and a server that is down.

usage: bench_test.py PATH/TO/prima        (exit 0: pass, 1: failures)
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

PRIMA = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED001 = os.path.join(ROOT, "scenarios", "seed_claims", "seed001_llama2_13b_a100_node.json")


class Server:
    """A `prima serve --backend sim` subprocess on a free port."""

    def __init__(self, *args, env=None):
        self.dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(self.dir.name, "port")
        self.log = open(os.path.join(self.dir.name, "log"), "w+")
        e = dict(os.environ)
        e.pop("PRIMA_API_KEY", None)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [PRIMA, "serve", "--backend", "sim", "--port", "0", "--port-file", port_file,
             "--scenario", SEED001, "--speed", "20", *args],
            stdout=self.log, stderr=subprocess.STDOUT, env=e)
        deadline = time.time() + 60
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prima serve did not start:\n" + self.output())
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = f"http://127.0.0.1:{self.port}"
        while True:  # the port file is written before the listener runs
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.02)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.dir.cleanup()


def bench(*args, env=None, timeout=120):
    """Runs prima bench; (exit code, stdout, stderr)."""
    e = dict(os.environ)
    e.pop("PRIMA_API_KEY", None)
    e.update(env or {})
    p = subprocess.run([PRIMA, "bench", *args], capture_output=True, text=True, timeout=timeout,
                       env=e)
    return p.returncode, p.stdout, p.stderr


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


SUMMARY_KEYS = ["mean", "p50", "p90", "p99", "max"]


class BenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def run_json(self, *args, **kw):
        code, out, err = bench("--url", self.server.url, "--json", "-q", *args, **kw)
        self.assertEqual(code, 0, f"prima bench {' '.join(args)} failed:\n{err}\n{out}")
        return json.loads(out)

    def check_summary(self, s, what):
        for k in SUMMARY_KEYS:
            self.assertIn(k, s, what)
        self.assertGreaterEqual(s["p50"], 0, what)
        self.assertLessEqual(s["p50"], s["p90"] + 1e-12, what)
        self.assertLessEqual(s["p90"], s["p99"] + 1e-12, what)
        self.assertLessEqual(s["p99"], s["max"] + 1e-12, what)

    def check_run(self, r, n, stream, out_tokens=None, in_tokens=None):
        what = json.dumps(r)[:2000]
        for k in ["tool", "url", "endpoint", "model", "seed", "workload", "requests", "latency_s",
                  "throughput", "slo", "duration_s"]:
            self.assertIn(k, r, what)
        self.assertEqual(r["tool"], "prima bench")
        self.assertEqual(r["requests"]["submitted"], n, what)
        self.assertEqual(r["requests"]["completed"], n, what)
        self.assertEqual(r["requests"]["failed"], 0, what)
        lat = r["latency_s"]
        keys = ["ttft", "tpot", "itl", "e2e"] if stream else ["e2e"]
        for k in keys:
            self.check_summary(lat[k], f"latency_s.{k}: {what}")
        if not stream:
            self.assertNotIn("ttft", lat)
        else:
            self.assertGreater(lat["ttft"]["p50"], 0)
            self.assertLessEqual(lat["ttft"]["p50"], lat["e2e"]["max"])
        self.assertGreater(lat["e2e"]["p50"], 0)
        t = r["throughput"]
        for k in ["requests_per_s", "output_tokens_per_s", "input_tokens_per_s"]:
            self.assertGreater(t[k], 0, f"throughput.{k}: {what}")
        for k in ["attainment", "goodput_rps"]:
            self.assertIn(k, r["slo"])
        self.assertGreater(r["duration_s"], 0)
        # prima serve's emulator reports its own timings: ttft, e2e, queue.
        srv = r["server_latency_s"]
        self.check_summary(srv["e2e"], "server e2e")
        self.check_summary(lat["queue"], "latency_s.queue (server-reported)")
        if out_tokens is not None:
            self.assertEqual(r["tokens"]["output"], out_tokens, what)
        if in_tokens is not None:
            self.assertEqual(r["tokens"]["input"], in_tokens, what)

    def test_every_endpoint_streaming_and_not(self):
        for endpoint in ["completions", "chat", "tgi"]:
            for stream in [True, False]:
                with self.subTest(endpoint=endpoint, stream=stream):
                    r = self.run_json("--endpoint", endpoint,
                                      "--stream" if stream else "--no-stream",
                                      "--num-prompts", "20", "--request-rate", "100",
                                      "--random-input-len", "32", "--random-output-len", "16",
                                      "--seed", "3")
                    # The sim backend generates exactly max_tokens, and counts a prompt of
                    # 32 four-byte words as 32 tokens (the chat markers included).
                    self.check_run(r, 20, stream, out_tokens=20 * 16,
                                   in_tokens=20 * 32 if endpoint != "tgi" or True else None)
                    self.assertEqual(r["endpoint"], endpoint)
                    self.assertEqual(r["model"].lower(), "llama-2-13b")
                    self.assertEqual(r["workload"]["arrival"], "poisson")
                    if stream:
                        # 16 tokens: 15 gaps per request
                        self.assertIn("ttft", r["server_latency_s"])
                        self.assertIn("ttft_client_minus_server", r["server_latency_s"])

    def test_concurrency_and_out_file(self):
        out = os.path.join(self.tmp.name, "c.json")
        r = self.run_json("--concurrency", "4", "--num-prompts", "12", "--input-len", "16",
                          "--output-len", "8", "--out", out)
        self.check_run(r, 12, True, out_tokens=12 * 8)
        self.assertEqual(r["workload"]["arrival"], "closed_loop")
        self.assertEqual(r["workload"]["concurrency"], 4)
        with open(out) as f:
            self.assertEqual(json.load(f), r)

    def test_default_rate_inf_with_max_concurrency(self):
        r = self.run_json("--num-prompts", "10", "--max-concurrency", "5", "--input-len", "8",
                          "--output-len", "4", "--arrival", "constant")
        self.check_run(r, 10, True, out_tokens=40)
        self.assertEqual(r["workload"]["concurrency"], 5)

    def test_slo_goodput(self):
        common = ["--num-prompts", "10", "--request-rate", "50", "--input-len", "8",
                  "--output-len", "8"]
        r = self.run_json(*common, "--slo-e2e", "1ms")
        self.assertEqual(r["slo"]["attainment"], 0)
        self.assertEqual(r["slo"]["goodput_rps"], 0)
        self.assertEqual(r["slo"]["e2e_s"], 0.001)
        r = self.run_json(*common, "--slo-e2e", "100s", "--slo-ttft", "50s", "--slo-tpot", "10s")
        self.assertEqual(r["slo"]["attainment"], 1)
        self.assertAlmostEqual(r["slo"]["goodput_rps"], r["throughput"]["requests_per_s"])
        self.assertEqual(r["slo"]["bounds"], {"ttft_s": 50, "tpot_s": 10, "e2e_s": 100})

    def test_scenario_workload(self):
        r = self.run_json("--scenario", SEED001, "--num-prompts", "30")
        # seed 001: poisson 142 req/s, prompts uniform 8..24, 128 output tokens, SLO e2e 500ms
        self.check_run(r, 30, True, out_tokens=30 * 128)
        self.assertEqual(r["seed"], 1)
        self.assertEqual(r["workload"]["request_rate"], 142)
        self.assertEqual(r["slo"]["bounds"], {"e2e_s": 0.5})
        self.assertTrue(8 * 30 <= r["tokens"]["input"] <= 24 * 30)

    def test_dataset_and_trace(self):
        ds = os.path.join(self.tmp.name, "d.jsonl")
        with open(ds, "w") as f:
            f.write('{"prompt": "hello there, how are you", "output_tokens": 3}\n')
            f.write('{"prompt": "tell me a story"}\n')
        r = self.run_json("--dataset-path", ds, "--num-prompts", "4", "--request-rate", "20",
                          "--output-len", "5")
        self.check_run(r, 4, True, out_tokens=3 + 5 + 3 + 5)
        tr = os.path.join(self.tmp.name, "t.csv")
        with open(tr, "w") as f:
            f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
            for i in range(6):
                f.write(f"2023-11-16 18:15:{i:02d}.5,{10 + i},{2 + i}\n")
        r = self.run_json("--trace", tr, "--time-scale", "0.05", "--endpoint", "tgi")
        self.check_run(r, 6, True, out_tokens=sum(2 + i for i in range(6)),
                       in_tokens=sum(10 + i for i in range(6)))
        self.assertEqual(r["workload"]["arrival"], "trace")

    def test_table_output(self):
        code, out, err = bench("--url", self.server.url, "--num-prompts", "5", "--input-len",
                               "8", "--output-len", "4", "-q")
        self.assertEqual(code, 0, err)
        for s in ["Requests completed:", "Request throughput (req/s):", "TTFT", "ITL", "E2E"]:
            self.assertIn(s, out)

    def test_bad_input_exits_2(self):
        ds = os.path.join(self.tmp.name, "bad.jsonl")
        with open(ds, "w") as f:
            f.write('{"prompt": "ok"}\n{"prompt": 5}\n')
        tr = os.path.join(self.tmp.name, "bad.csv")
        with open(tr, "w") as f:
            f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,x,3\n")
        cases = [
            (["--bogus"], "unrecognised option"),
            (["--url", "127.0.0.1:8000"], "expected http://HOST:PORT"),
            (["--endpoint", "kserve"], "--endpoint"),
            (["--request-rate", "fast"], "--request-rate"),
            (["--request-rate", "5", "--concurrency", "3"], "exclude"),
            (["--slo-ttft", "200"], "needs a unit"),
            (["--num-prompts", "0"], "--num-prompts"),
            (["--random-range-ratio", "2"], "--random-range-ratio"),
            (["--dataset-path", ds], "bad.jsonl:2"),
            (["--dataset-path", "/nonexistent.jsonl"], "cannot open"),
            (["--trace", tr], "bad.csv:2"),
            (["--scenario", "/nonexistent.json"], "nonexistent"),
            (["--scenario", SEED001, "--request-rate", "3"], "--scenario gives the workload"),
            (["--out", "/nonexistent/dir/x.json", "--model", "m"], "--out"),
            (["--extra-body", "{oops"], "--extra-body: not JSON"),
            (["--extra-body", "[1]"], "expected a JSON object"),
            (["--temperature", "-1"], "--temperature"),
            (["--top-p", "0"], "--top-p"),
            (["--top-k", "-2"], "--top-k"),
        ]
        for args, msg in cases:
            with self.subTest(args=args):
                url = [] if "--url" in args else ["--url", self.server.url]
                code, out, err = bench(*url, *args)
                self.assertEqual(code, 2, f"{args}: {err}")
                self.assertIn(msg, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_server_down(self):
        url = f"http://127.0.0.1:{free_port()}"
        code, out, err = bench("--url", url, "--num-prompts", "3")
        self.assertEqual(code, 1, err)
        self.assertIn("cannot reach", err)
        # With --model no probe is made: every request fails, is counted, and the run says so.
        code, out, err = bench("--url", url, "--num-prompts", "3", "--model", "m", "--json", "-q")
        self.assertEqual(code, 1, err)
        r = json.loads(out)
        self.assertEqual(r["requests"], {"submitted": 3, "completed": 0, "failed": 3})
        self.assertIn("no answer from", r["errors"][0]["message"])
        self.assertEqual(r["errors"][0]["count"], 3)
        self.assertIn("no request completed", err)

    def test_api_key(self):
        s = Server("--api-key", "sekrit")
        try:
            common = ["--url", s.url, "--num-prompts", "4", "--input-len", "8", "--output-len",
                      "4", "--json", "-q"]
            code, out, err = bench(*common, env={"PRIMA_API_KEY": "sekrit"})
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["requests"]["completed"], 4)
            code, out, err = bench(*common, "--model", "Llama-2-13B", "--api-key", "wrong")
            self.assertEqual(code, 1, err)
            r = json.loads(out)
            self.assertEqual(r["requests"]["failed"], 4)
            self.assertIn("HTTP 401", r["errors"][0]["message"])
        finally:
            s.stop()

    def test_help(self):
        code, out, err = bench("--help")
        self.assertEqual(code, 0)
        self.assertIn("--request-rate", out)
        self.assertIn("examples:", out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    PRIMA = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
