#!/usr/bin/env python3
"""End-to-end tests of `prima serve` with the official clients of the APIs it speaks.

- tritonclient[http] with its default binary tensor data (BYTES inputs and outputs in binary),
  versioned model routes, the model config, and tensor names checked; malformed binary
  bodies (raw HTTP) get a 400 naming what is wrong and the server keeps answering.
- The Hugging Face text-generation client: generate_stream (POST / with "stream": true) and
  generate (POST /, which also needs TGI's details.tokens and details.prefill); raw POST /
  and GET /info.
- OpenAI / vLLM routes with requests: GET /v1/models/{id}, POST /tokenize and /detokenize
  (the counts agree with the usage of a completion of the same prompt).
- Error bodies in each API's shape on 400, 401, 404 and 413.

Runs against `prima serve --backend sim`, and (short) against `--backend real` when MODEL.gguf
is given and exists.

usage: clients_test.py PATH/TO/prima [MODEL.gguf]   (exit 0: pass, 77: skipped, 1: failures)
"""
import json
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (the Server harness)
from serve_test import Server, synthetic  # noqa: E402

SKIP = 77
MODEL_FILE = None
SIM = None  # the shared sim server (--speed 20)


def bytes_element(b):
    """A BYTES tensor element: 4-byte little-endian length, then the bytes."""
    return struct.pack("<I", len(b)) + b


class Api:
    """requests against one server."""

    def __init__(self, srv):
        self.srv = srv
        self.model = srv.health()["model"]

    def post(self, path, body=None, data=None, headers=None):
        import requests
        return requests.post(self.srv.base + path, json=body, data=data, headers=headers,
                             timeout=60)

    def get(self, path, headers=None):
        import requests
        return requests.get(self.srv.base + path, headers=headers, timeout=60)


def triton(srv):
    import tritonclient.http as httpclient
    return httpclient.InferenceServerClient(url=f"127.0.0.1:{srv.port}", network_timeout=60)


def triton_infer(srv, model, prompt, max_tokens, version="", binary_in=True, binary_out=True,
                 input_name="text_input", output_name="text_output", outputs=True):
    """(text, response JSON) of one tritonclient inference."""
    import numpy as np
    import tritonclient.http as httpclient
    inp = httpclient.InferInput(input_name, [1], "BYTES")
    inp.set_data_from_numpy(np.array([prompt.encode()], dtype=np.object_), binary_data=binary_in)
    outs = [httpclient.InferRequestedOutput(output_name, binary_data=binary_out)] if outputs else None
    r = triton(srv).infer(model, [inp], model_version=version, outputs=outs,
                          parameters={"max_tokens": max_tokens})
    text = r.as_numpy("text_output")[0]  # bytes from binary data, str from JSON
    return text.decode() if isinstance(text, bytes) else text, r.get_response()


class TritonClientTest(unittest.TestCase):
    def setUp(self):
        self.api = Api(SIM)
        self.model = self.api.model
        self.c = triton(SIM)

    def test_health_metadata_and_versioned_routes(self):
        self.assertTrue(self.c.is_server_live())
        self.assertTrue(self.c.is_server_ready())
        self.assertIn("binary_tensor_data", self.c.get_server_metadata()["extensions"])
        self.assertTrue(self.c.is_model_ready(self.model))
        self.assertTrue(self.c.is_model_ready(self.model, "1"))
        self.assertFalse(self.c.is_model_ready(self.model, "2"))
        md = self.c.get_model_metadata(self.model)
        self.assertEqual(md, self.c.get_model_metadata(self.model, "1"))
        self.assertEqual(md["versions"], ["1"])
        self.assertEqual([t["name"] for t in md["inputs"]], ["text_input"])
        self.assertEqual([t["name"] for t in md["outputs"]], ["text_output"])
        r = self.api.get(f"/v2/models/{self.model}/versions/7")
        self.assertEqual(r.status_code, 404)
        self.assertIn("no version '7'", r.json()["error"])

    def test_model_config_names_the_metadata_tensors(self):
        cfg = self.c.get_model_config(self.model)
        self.assertEqual(cfg, self.c.get_model_config(self.model, "1"))
        md = self.c.get_model_metadata(self.model)
        self.assertEqual(cfg["name"], self.model)
        self.assertEqual(cfg["max_batch_size"], 0)
        self.assertEqual([t["name"] for t in cfg["input"]], [t["name"] for t in md["inputs"]])
        self.assertEqual([t["name"] for t in cfg["output"]], [t["name"] for t in md["outputs"]])
        self.assertEqual(cfg["input"][0]["data_type"], "TYPE_STRING")
        self.assertEqual(cfg["input"][0]["dims"], md["inputs"][0]["shape"])
        max_len = self.api.get("/v1/models").json()["data"][0]["max_model_len"]
        self.assertEqual(cfg["parameters"]["max_model_len"]["string_value"], str(max_len))
        import tritonclient.utils
        with self.assertRaises(tritonclient.utils.InferenceServerException) as e:
            self.c.get_model_config("nope")
        self.assertEqual(e.exception.status(), "404")

    def test_binary_tensor_data_both_ways(self):
        text, resp = triton_infer(SIM, self.model, "Tell me a story", 5, version="1")
        self.assertEqual(text, synthetic(5))
        out = resp["outputs"][0]
        self.assertNotIn("data", out)  # it came as binary data after the JSON
        self.assertEqual(out["parameters"]["binary_data_size"], 4 + len(synthetic(5)))
        self.assertEqual(resp["model_version"], "1")
        # The prompt counts the same whether it came as JSON or as binary data.
        _, plain = triton_infer(SIM, self.model, "Tell me a story", 5, binary_in=False,
                                binary_out=False)
        self.assertEqual(plain["outputs"][0]["data"], [synthetic(5)])
        self.assertEqual(resp["parameters"]["prompt_tokens"], plain["parameters"]["prompt_tokens"])
        self.assertEqual(resp["parameters"]["prompt_tokens"], 4)  # ceil(15 / 4)

    def test_no_outputs_listed_means_binary_outputs(self):
        # tritonclient then sends "binary_data_output": true.
        text, resp = triton_infer(SIM, self.model, "héllo wörld ✓", 3, outputs=False)
        self.assertEqual(text, synthetic(3))
        self.assertIn("binary_data_size", resp["outputs"][0]["parameters"])
        self.assertEqual(resp["parameters"]["prompt_tokens"], 5)  # 17 bytes of UTF-8

    def test_wrong_tensor_names_are_400s_naming_the_valid_ones(self):
        import tritonclient.utils
        with self.assertRaises(tritonclient.utils.InferenceServerException) as e:
            triton_infer(SIM, self.model, "x", 2, input_name="prompt")
        self.assertEqual(e.exception.status(), "400")
        self.assertIn("inputs[0].name", e.exception.message())
        self.assertIn('["text_input"]', e.exception.message())
        with self.assertRaises(tritonclient.utils.InferenceServerException) as e:
            triton_infer(SIM, self.model, "x", 2, output_name="logits")
        self.assertEqual(e.exception.status(), "400")
        self.assertIn('["text_output"]', e.exception.message())
        with self.assertRaises(tritonclient.utils.InferenceServerException) as e:
            triton_infer(SIM, self.model, "x", 2, version="3")
        self.assertEqual(e.exception.status(), "404")

    def test_malformed_binary_bodies_are_400s_and_the_server_goes_on(self):
        def header(size):
            return json.dumps({"inputs": [{"name": "text_input", "shape": [1],
                                           "datatype": "BYTES",
                                           "parameters": {"binary_data_size": size}}],
                               "parameters": {"max_tokens": 2}}).encode()

        el = bytes_element(b"hello")
        h = header(len(el))
        path = f"/v2/models/{self.model}/infer"
        cases = [
            (h + el, str(len(h) + len(el) + 1), "Inference-Header-Content-Length"),  # beyond
            (h + el, "twelve", "Inference-Header-Content-Length"),
            (h + el + b"xx", str(len(h)), "add up to"),  # bytes left over
            (header(len(el) + 4) + el, str(len(header(len(el) + 4))), "binary_data_size"),
            (header(6) + el[:6], str(len(header(6))), "5 bytes long, but only 2"),  # truncated
            (header(len(el) + 2) + el + b"ab", str(len(header(len(el) + 2))),
             "element 1 is truncated"),  # 2 bytes where a 4-byte length should be
            (header(7) + struct.pack("<I", 1 << 31) + b"abc", str(len(header(7))), "only 3"),
            (h[:-1] + el, str(len(h) - 1), "not valid JSON"),  # the header cut short
        ]
        for body, length, want in cases:
            r = self.api.post(path, data=body,
                              headers={"Inference-Header-Content-Length": length,
                                       "Content-Type": "application/octet-stream"})
            self.assertEqual(r.status_code, 400, (want, r.text))
            self.assertEqual(list(r.json()), ["error"])
            self.assertIn(want, r.json()["error"])
        text, _ = triton_infer(SIM, self.model, "still there?", 2)
        self.assertEqual(text, synthetic(2))
        SIM.wait_idle()


class TextGenerationClientTest(unittest.TestCase):
    def setUp(self):
        import text_generation
        self.api = Api(SIM)
        self.client = text_generation.Client(SIM.base, timeout=60)

    def test_generate_stream(self):
        events = list(self.client.generate_stream("Hi there", max_new_tokens=4))
        self.assertEqual([e.token.text for e in events], [" " + w for w in serve_test.WORDS[:4]])
        self.assertIsNone(events[0].generated_text)
        self.assertEqual(events[-1].generated_text, synthetic(4))
        self.assertEqual(events[-1].details.generated_tokens, 4)

    # The client's generate parses TGI's details.tokens and details.prefill.
    def test_generate(self):
        r = self.client.generate("What is deep learning?", max_new_tokens=7)
        self.assertEqual(r.generated_text, synthetic(7))
        self.assertEqual(r.details.generated_tokens, 7)
        self.assertEqual([t.text for t in r.details.tokens],
                         [" " + w for w in serve_test.WORDS[:7]])

    def test_post_root_routes_on_stream(self):
        body = {"inputs": "What is deep learning?", "parameters": {"max_new_tokens": 7}}
        r = self.api.post("/", body)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json(), [{"generated_text": synthetic(7)}])  # a list of one
        self.assertEqual(r.headers["x-generated-tokens"], "7")
        r = self.api.post("/", dict(body, stream=True))
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.headers["content-type"].startswith("text/event-stream"))
        events = [json.loads(l[5:]) for l in r.text.splitlines() if l.startswith("data:")]
        self.assertEqual(len(events), 7)
        self.assertEqual(events[-1]["generated_text"], synthetic(7))
        r = self.api.post("/", dict(body, stream="yes"))
        self.assertEqual(r.status_code, 400)
        self.assertEqual(r.json()["error_type"], "validation")
        self.assertIn("'stream' must be a boolean", r.json()["error"])
        r = self.api.post("/", {"parameters": {}})
        self.assertEqual(r.status_code, 400)
        self.assertIn("inputs", r.json()["error"])

    def test_info(self):
        info = self.api.get("/info").json()
        models = self.api.get("/v1/models").json()["data"][0]
        self.assertEqual(info["model_id"], self.api.model)
        self.assertEqual(info["max_total_tokens"], models["max_model_len"])
        self.assertEqual(info["max_input_tokens"], models["max_model_len"] - 1)
        self.assertEqual(info["max_concurrent_requests"], SIM.health()["max_concurrent"])
        for key in ("max_best_of", "max_stop_sequences", "validation_workers",
                    "max_client_batch_size", "router", "version"):
            self.assertIn(key, info)


class OpenAIRoutesTest(unittest.TestCase):
    def setUp(self):
        self.api = Api(SIM)
        self.model = self.api.model

    def test_retrieve_model(self):
        listed = self.api.get("/v1/models").json()["data"][0]
        r = self.api.get(f"/v1/models/{self.model}")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.json(), listed)
        for other in ("gpt-4", "org/name"):
            r = self.api.get(f"/v1/models/{other}")
            self.assertEqual(r.status_code, 404)
            err = r.json()["error"]
            self.assertEqual((err["code"], err["param"]), ("model_not_found", "model"))
            self.assertIn(f"'{other}'", err["message"])

    def test_tokenize_counts_what_a_completion_counts(self):
        prompt = "The quick brown fox jumps over the lazy dog"
        usage = self.api.post("/v1/completions", {"model": self.model, "prompt": prompt,
                                                  "max_tokens": 1}).json()["usage"]
        t = self.api.post("/tokenize", {"model": self.model, "prompt": prompt}).json()
        self.assertEqual(t["count"], usage["prompt_tokens"])
        self.assertEqual(t["tokens"], list(range(t["count"])))  # synthetic ids: positions
        self.assertEqual(t["max_model_len"],
                         self.api.get("/v1/models").json()["data"][0]["max_model_len"])
        self.assertIsNone(t["token_strs"])
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}]
        usage = self.api.post("/v1/chat/completions", {"model": self.model, "messages": msgs,
                                                       "max_tokens": 1}).json()["usage"]
        t = self.api.post("/tokenize", {"messages": msgs, "return_token_strs": True}).json()
        self.assertEqual(t["count"], usage["prompt_tokens"])
        self.assertEqual(len(t["token_strs"]), t["count"])

    def test_detokenize_spells_the_synthetic_words(self):
        r = self.api.post("/detokenize", {"model": self.model, "tokens": [0, 1, 2, 33]})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json(), {"prompt": synthetic(3) + " cluster"})

    def test_bad_tokenizer_requests_name_the_field(self):
        cases = [
            ("/tokenize", {"model": self.model}, 400, "prompt"),
            ("/tokenize", {"prompt": "a", "messages": []}, 400, "messages"),
            ("/tokenize", {"prompt": 5}, 400, "prompt"),
            ("/tokenize", {"prompt": "a", "add_special_tokens": False}, 400, "add_special_tokens"),
            ("/tokenize", {"messages": [{"role": "user"}], "chat_template": "x"}, 400,
             "chat_template"),
            ("/tokenize", {"messages": "hi"}, 400, "messages"),
            ("/tokenize", {"model": "nope", "prompt": "a"}, 404, "model"),
            ("/detokenize", {}, 400, "tokens"),
            ("/detokenize", {"tokens": [1, -1]}, 400, "tokens"),
            ("/detokenize", {"tokens": [[1]]}, 400, "tokens"),
            ("/detokenize", {"model": "nope", "tokens": [1]}, 404, "model"),
        ]
        for path, body, status, param in cases:
            r = self.api.post(path, body)
            self.assertEqual(r.status_code, status, (path, body, r.text))
            err = r.json()["error"]
            self.assertEqual(sorted(err), ["code", "message", "param", "type"])
            self.assertEqual(err["param"], param, err)
        r = self.api.post("/tokenize", data=b"[1, 2]", headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 400)
        self.assertIn("must be a JSON object", r.json()["error"]["message"])


class ErrorShapeTest(unittest.TestCase):
    """Each API's error shape on every status, routes new and old."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--speed", "20", "--api-key", "k", "--max-body-bytes", "4096")
        cls.api = Api(cls.srv)  # /health needs no key
        cls.model = cls.api.model

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def check(self, r, status, style):
        self.assertEqual(r.status_code, status, r.text)
        body = r.json()
        if style == "openai":
            self.assertEqual(list(body), ["error"], body)
            self.assertEqual(sorted(body["error"]), ["code", "message", "param", "type"])
        elif style == "tgi":
            self.assertEqual(sorted(body), ["error", "error_type"], body)
        else:
            self.assertEqual(list(body), ["error"], body)
            self.assertIsInstance(body["error"], str)
        return body

    def test_every_status_in_the_called_apis_shape(self):
        auth = {"Authorization": "Bearer k"}
        m = self.model
        infer = f"/v2/models/{m}/infer"
        big = {"inputs": "x" * 5000}
        for path, style in (("/", "tgi"), ("/generate", "tgi"), (infer, "kserve"),
                            ("/tokenize", "openai"), ("/v1/completions", "openai")):
            self.check(self.api.post(path, {"inputs": "x"}), 401, style)
            self.check(self.api.post(path, big, headers=auth), 413, style)
            self.check(self.api.post(path, data=b"{", headers=dict(auth, **{
                "Content-Type": "application/json"})), 400, style)
        for path, style in (("/info", "tgi"), (f"/v1/models/{m}", "openai"),
                            (f"/v2/models/{m}/config", "kserve"), ("/v2", "kserve")):
            self.check(self.api.get(path), 401, style)
            self.assertEqual(self.api.get(path, headers=auth).status_code, 200)
        self.assertEqual(self.check(self.api.get("/v2/models/nope/config", headers=auth), 404,
                                    "kserve")["error"].count("nope"), 1)
        self.check(self.api.get("/v2/nothing", headers=auth), 404, "kserve")
        self.assertEqual(self.check(self.api.post("/info", {}, headers=auth), 404,
                                    "tgi")["error_type"], "not_found")
        self.check(self.api.get("/v1/nothing", headers=auth), 404, "openai")
        body = self.check(self.api.post("/generate", {"inputs": "x", "parameters": {
            "max_new_tokens": 0}}, headers=auth), 400, "tgi")
        self.assertEqual(body["error_type"], "validation")


class RealBackendTest(unittest.TestCase):
    """A short pass over the same clients with SmolLM2 on the CPU."""

    @classmethod
    def setUpClass(cls):
        if not MODEL_FILE or not os.path.exists(MODEL_FILE):
            raise unittest.SkipTest(f"the model file {MODEL_FILE} is missing")
        cls.srv = Server("--model", MODEL_FILE, "--max-model-len", "512", "--max-num-seqs", "2",
                         backend="real", start_timeout=120)
        cls.api = Api(cls.srv)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def greedy(self, prompt, n):
        r = self.api.post("/generate", {"inputs": prompt, "parameters": {"max_new_tokens": n}})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["generated_text"]

    def test_tokenize_round_trips_and_counts_what_a_completion_counts(self):
        prompt = "Hello, world! Ünïcödé too."
        t = self.api.post("/tokenize", {"prompt": prompt, "return_token_strs": True}).json()
        usage = self.api.post("/v1/completions", {"model": self.api.model, "prompt": prompt,
                                                  "max_tokens": 1}).json()["usage"]
        self.assertEqual(t["count"], usage["prompt_tokens"])
        self.assertEqual(t["max_model_len"], 512)
        self.assertEqual(self.api.post("/detokenize", {"tokens": t["tokens"]}).json()["prompt"],
                         prompt)
        # Each token's own text: a token holding part of a UTF-8 character reads as U+FFFD.
        self.assertEqual(len(t["token_strs"]), t["count"])
        self.assertTrue("".join(t["token_strs"]).startswith("Hello, world!"), t["token_strs"])
        self.assertNotEqual("".join(t["token_strs"]), prompt)  # Ü is split across two tokens
        r = self.api.post("/detokenize", {"tokens": [1, 49152]})
        self.assertEqual(r.status_code, 400)
        self.assertIn("tokens[1]", r.json()["error"]["message"])

    def test_tritonclient_binary_answers_the_greedy_text(self):
        want = self.greedy("Once upon a time", 8)
        text, resp = triton_infer(self.srv, self.api.model, "Once upon a time", 8, version="1")
        self.assertEqual(text, want)
        self.assertIn("binary_data_size", resp["outputs"][0]["parameters"])

    def test_text_generation_stream_answers_the_greedy_text(self):
        import text_generation
        want = self.greedy("The capital of France is", 6)
        events = list(text_generation.Client(self.srv.base, timeout=120).generate_stream(
            "The capital of France is", max_new_tokens=6))
        self.assertEqual("".join(e.token.text for e in events), want)
        self.assertEqual(events[-1].generated_text, want)


def main():
    global MODEL_FILE, SIM
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    serve_test.PRIMA = sys.argv.pop(1)
    if len(sys.argv) > 1:
        MODEL_FILE = sys.argv.pop(1)
    missing = []
    for module, pkg in (("tritonclient.http", "tritonclient[http]"),
                        ("text_generation", "text-generation"), ("numpy", "numpy"),
                        ("requests", "requests")):
        try:
            __import__(module)
        except ImportError:
            missing.append(pkg)
    if missing:
        print(f"SKIP: missing client packages: {', '.join(missing)} "
              f"(python3 -m pip install {' '.join(missing)})")
        return SKIP
    SIM = Server("--speed", "20")
    try:
        prog = unittest.main(exit=False, verbosity=2)
        ok = prog.result.wasSuccessful()
    finally:
        SIM.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
