#!/usr/bin/env python3
"""A drop-in for vLLM and TGI users (docs/serving.md): the clients, fields and series they
already use, end to end against `prima serve`.

Both backends: Hugging Face's InferenceClient (chat_completion and text_generation, unchanged,
with its placeholder model name); the openai SDK's Responses API (plain, with instructions,
streamed with the spec's events, refusals); scoring calls (echo + logprobs with max_tokens 0,
streamed and not; TGI's decoder_input_details); the model's other served names and requests
without "model"; stream_options.continuous_usage_stats; X-Request-Id echoed and response ids
that do not repeat; CORS for the allowed origins; the vLLM series dashboards read; refusals
that name the field (images, unknown keys in messages and stream_options, store: true).
Real backend (SmolLM2) only, where the output shows it: the prompt's log-probabilities equal
the model's own next-token distribution at each position (greedy continuation consistent with
them), min_tokens never shorter, stop_token_ids stops, include_stop_str_in_output keeps the
stop string, skip_special_tokens false shows the end-of-turn token, min_p = 1 is greedy,
continue_final_message with echo continues the assistant's message, TGI keeps its stop
sequence in generated_text as in details.tokens.

usage: dropin_test.py PATH/TO/prima [MODEL.gguf]   (with MODEL: the real backend, else sim)
       (exit 0: pass, 77: skipped, 1: failures)
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (the Server harness)
from serve_test import Server  # noqa: E402

SKIP = 77
SRV = None
REAL = False
MODEL_PATH = None
NAMES = ["smol", "smol-alias"]


def client():
    import openai
    return openai.OpenAI(base_url=SRV.base + "/v1", api_key="none", max_retries=0, timeout=120)


def real_only(test):
    """Runs `test` with the real backend only (the sim backend's tokens are synthetic)."""
    def run(self):
        if not REAL:
            self.skipTest("real backend only: the sim backend's tokens are synthetic")
        test(self)
    run.__name__ = test.__name__
    return run


def post(path, body, headers=None):
    status, hdrs, data = SRV.request("POST", path, body, headers=headers)
    return status, hdrs, json.loads(data) if data else None


def sse(path, body):
    """[(event name or None, data object)] of a server-sent-events answer."""
    status, _, data = SRV.request("POST", path, body)
    assert status == 200, data
    out, name = [], None
    for line in data.decode().splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:") and line[5:].strip() != "[DONE]":
            out.append((name, json.loads(line[5:])))
            name = None
    return out


class HuggingFaceClientTest(unittest.TestCase):
    def test_inference_client_chat_and_text_generation(self):
        from huggingface_hub import InferenceClient
        hf = InferenceClient(base_url=SRV.base)
        out = hf.chat_completion(messages=[{"role": "user", "content": "Say hello."}],
                                 max_tokens=8, temperature=0)
        self.assertEqual(out.choices[0].message.role, "assistant")
        self.assertGreater(out.usage.completion_tokens, 0)
        text = "".join(c.choices[0].delta.content or "" for c in hf.chat_completion(
            messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0,
            stream=True))
        if REAL:  # greedy: the stream spells the same answer
            self.assertEqual(text, out.choices[0].message.content)
        g = hf.text_generation("The capital of France is", max_new_tokens=6, details=True)
        self.assertEqual(g.details.generated_tokens, len(g.details.tokens))
        self.assertEqual("".join(t.text for t in g.details.tokens), g.generated_text)


class ResponsesApiTest(unittest.TestCase):
    def test_create_with_instructions(self):
        r = client().responses.create(model=NAMES[0], instructions="Answer in one word.",
                                      input="What color is the sky?", max_output_tokens=6,
                                      temperature=0)
        self.assertEqual(r.object, "response")
        self.assertTrue(r.id.startswith("resp_") or r.id.startswith("resp-"))
        self.assertIn(r.status, ("completed", "incomplete"))
        self.assertEqual(r.output[0].type, "message")
        self.assertEqual(r.output[0].role, "assistant")
        self.assertEqual(r.output_text, r.output[0].content[0].text)
        self.assertLessEqual(r.usage.output_tokens, 6)
        if r.status == "incomplete":
            self.assertEqual(r.incomplete_details.reason, "max_output_tokens")
        self.assertEqual(r.instructions, "Answer in one word.")

    def test_message_list_and_stream_events(self):
        msgs = [{"role": "user", "content": [{"type": "input_text", "text": "Hi!"}]},
                {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": "Count to three."}]
        plain = client().responses.create(model=NAMES[0], input=msgs, max_output_tokens=8,
                                          temperature=0)
        types, deltas, final = [], "", None
        with client().responses.stream(model=NAMES[0], input=msgs, max_output_tokens=8,
                                       temperature=0) as stream:
            for ev in stream:
                types.append(ev.type)
                if ev.type == "response.output_text.delta":
                    deltas += ev.delta
                if ev.type in ("response.completed", "response.incomplete"):
                    final = ev.response  # the SDK's get_final_response() wants "completed"
        self.assertEqual(types[:4], ["response.created", "response.in_progress",
                                     "response.output_item.added",
                                     "response.content_part.added"])
        self.assertIn(types[-1], ("response.completed", "response.incomplete"))
        for t in ("response.output_text.done", "response.content_part.done",
                  "response.output_item.done"):
            self.assertIn(t, types)
        self.assertEqual(deltas, final.output_text)
        if REAL:
            self.assertEqual(final.output_text, plain.output_text)
        # The raw events carry their type and increasing sequence numbers.
        evs = sse("/v1/responses", {"model": NAMES[0], "input": "x", "max_output_tokens": 3,
                                    "stream": True})
        self.assertTrue(all(name == d["type"] for name, d in evs))
        self.assertEqual([d["sequence_number"] for _, d in evs], list(range(len(evs))))

    def test_refusals_name_the_field(self):
        import openai
        c = client()
        cases = [(dict(tools=[{"type": "web_search_preview"}]), "tools"),
                 (dict(store=True), "store"),
                 (dict(previous_response_id="resp_123"), "previous_response_id"),
                 (dict(input=[{"role": "user", "content": [
                     {"type": "input_image", "image_url": "https://x/y.png"}]}]),
                  "input[0].content[0].type")]
        for extra, param in cases:
            kw = dict(model=NAMES[0], input="hi", max_output_tokens=4)
            kw.update(extra)
            with self.assertRaises(openai.BadRequestError) as cm:
                c.responses.create(**kw)
            self.assertEqual(cm.exception.body["param"], param, extra)
        status, _, body = SRV.request("GET", "/v1/responses/resp_123")
        self.assertEqual(status, 404)
        self.assertIn("does not store", json.loads(body)["error"]["message"])


PROMPT = "The quick brown fox jumps over the lazy dog because it"


class ScoringTest(unittest.TestCase):
    def score(self, prompt, top=1):
        return client().completions.create(model=NAMES[0], prompt=prompt, echo=True, logprobs=top,
                                           max_tokens=0, temperature=0)

    def test_echo_logprobs_with_max_tokens_zero(self):
        r = self.score(PROMPT)
        c = r.choices[0]
        lp = c.logprobs
        self.assertEqual(c.text, PROMPT)
        self.assertEqual(r.usage.completion_tokens, 0)
        self.assertEqual(len(lp.tokens), r.usage.prompt_tokens)
        self.assertEqual("".join(lp.tokens), PROMPT)
        self.assertIsNone(lp.token_logprobs[0])
        self.assertIsNone(lp.top_logprobs[0])
        self.assertEqual(lp.text_offset[0], 0)
        for x, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:]):
            self.assertLessEqual(x, 0)
            self.assertGreaterEqual(len(top), 1)

    def test_streamed_scoring_matches(self):
        r = self.score(PROMPT)
        chunks = [d for _, d in sse("/v1/completions", {
            "model": NAMES[0], "prompt": PROMPT, "echo": True, "logprobs": 1, "max_tokens": 0,
            "temperature": 0, "stream": True})]
        first = chunks[0]["choices"][0]
        self.assertEqual(first["text"], PROMPT)
        self.assertEqual(first["logprobs"]["tokens"], r.choices[0].logprobs.tokens)
        if REAL:
            self.assertEqual(first["logprobs"]["token_logprobs"],
                             r.choices[0].logprobs.token_logprobs)
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "length")
        self.assertEqual("".join(c["choices"][0]["text"] for c in chunks), PROMPT)

    def test_echo_logprobs_then_generation(self):
        r = client().completions.create(model=NAMES[0], prompt=PROMPT, echo=True, logprobs=2,
                                        max_tokens=3, temperature=0,
                                        extra_body={"ignore_eos": True})
        lp = r.choices[0].logprobs
        n = r.usage.prompt_tokens + r.usage.completion_tokens
        self.assertEqual(len(lp.tokens), n)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        self.assertTrue(r.choices[0].text.startswith(PROMPT))

    @real_only
    def test_prompt_logprobs_equal_the_models_next_token_distribution(self):
        # Score the prompt, then ask the model (decoding, not prefill) for the greedy next token
        # after each prefix: it is the scored position's most likely token, with the same
        # log-probability, and the prompt's own token is never more likely than it.
        scored = self.score(PROMPT, top=1).choices[0].logprobs
        _, _, tok = post("/tokenize", {"model": NAMES[0], "prompt": PROMPT})
        ids = tok["tokens"]
        self.assertEqual(len(ids), len(scored.tokens))
        for k in (1, 4, len(ids) - 1):
            g = client().completions.create(model=NAMES[0], prompt=ids[:k], max_tokens=1,
                                            temperature=0, logprobs=1,
                                            extra_body={"ignore_eos": True})
            glp = g.choices[0].logprobs
            top_tok, top_lp = max(scored.top_logprobs[k].items(), key=lambda kv: kv[1])
            self.assertEqual(glp.tokens[0], top_tok, f"position {k}")
            self.assertAlmostEqual(glp.token_logprobs[0], top_lp, places=3)
            self.assertLessEqual(scored.token_logprobs[k], top_lp + 1e-5)
            if scored.tokens[k] == top_tok:
                self.assertAlmostEqual(scored.token_logprobs[k], top_lp, places=4)

    def test_tgi_decoder_input_details(self):
        _, _, body = post("/generate", {"inputs": PROMPT, "parameters": {
            "max_new_tokens": 2, "details": True, "decoder_input_details": True}})
        prefill = body["details"]["prefill"]
        self.assertIsNone(prefill[0]["logprob"])
        self.assertTrue(all(p["logprob"] is not None and p["logprob"] <= 0 for p in prefill[1:]))
        self.assertEqual("".join(p["text"] for p in prefill), PROMPT)
        if REAL:  # the same numbers as the OpenAI scoring call
            scored = self.score(PROMPT).choices[0].logprobs.token_logprobs
            for a, b in zip(prefill[1:], scored[1:]):
                self.assertAlmostEqual(a["logprob"], b, places=4)


class PipelineScoringTest(unittest.TestCase):
    """Real backend, two pipeline stages (mpirun -np 2 --pp 2): the last stage scores the prompt
    and sends the log-probabilities to the leader with the sampled ids; a prompt longer than
    one prefill chunk (--max-num-batched-tokens 16) is scored chunk by chunk. The numbers equal
    the single-process server's."""

    @real_only
    def test_pp2_chunked_scoring_equals_one_process(self):
        import shutil
        if not shutil.which("mpirun"):
            self.skipTest("mpirun is not installed")
        prompt = PROMPT + " was tired of running around the field all day long, and so it slept."
        want = client().completions.create(model=NAMES[0], prompt=prompt, echo=True, logprobs=2,
                                           max_tokens=0, temperature=0).choices[0].logprobs
        import openai
        with serve_test.MpiServer(2, "--model", MODEL_PATH, "--pp", "2", "--max-model-len", "256",
                                  "--max-num-seqs", "1", "--max-num-batched-tokens", "16",
                                  "--kernel-threads", "1", "--served-model-name",
                                  NAMES[0]) as srv:
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="none",
                              max_retries=3, timeout=300)
            got = c.completions.create(model=NAMES[0], prompt=prompt, echo=True, logprobs=2,
                                       max_tokens=0, temperature=0).choices[0].logprobs
        self.assertGreater(len(want.tokens), 16)  # more than one chunk
        self.assertEqual(got.tokens, want.tokens)
        self.assertIsNone(got.token_logprobs[0])
        for k in range(1, len(want.tokens)):
            self.assertAlmostEqual(got.token_logprobs[k], want.token_logprobs[k], places=4)
            self.assertEqual(sorted(got.top_logprobs[k]), sorted(want.top_logprobs[k]))


class VllmExtrasTest(unittest.TestCase):
    def chat(self, content, **kw):
        extra = kw.pop("extra_body", {})
        return client().chat.completions.create(
            model=NAMES[0], messages=[{"role": "user", "content": content}], temperature=0,
            extra_body=extra, **kw)

    def test_accepted_on_every_backend(self):
        r = self.chat("Hi", max_tokens=6, extra_body={
            "min_p": 0.05, "min_tokens": 2, "skip_special_tokens": True,
            "include_stop_str_in_output": False, "add_generation_prompt": True,
            "chat_template_kwargs": {"add_generation_prompt": True}}, store=False)
        self.assertGreaterEqual(r.usage.completion_tokens, 2)
        c = client().completions.create(model=NAMES[0], prompt="Hi", max_tokens=4,
                                        extra_body={"stop_token_ids": [2]})
        self.assertLessEqual(c.usage.completion_tokens, 4)

    @real_only
    def test_min_tokens_is_never_shorter(self):
        base = self.chat("Reply with just the word yes.", max_tokens=48)
        n = base.usage.completion_tokens
        self.assertEqual(base.choices[0].finish_reason, "stop")
        longer = self.chat("Reply with just the word yes.", max_tokens=48,
                           extra_body={"min_tokens": n + 6})
        self.assertGreaterEqual(longer.usage.completion_tokens, n + 6)

    @real_only
    def test_stop_token_ids_and_include_stop_str(self):
        _, _, g = post("/generate", {"inputs": PROMPT, "parameters": {
            "max_new_tokens": 8, "details": True}})
        toks = g["details"]["tokens"]
        stop = toks[2]
        c = client().completions.create(model=NAMES[0], prompt=PROMPT, max_tokens=8,
                                        temperature=0,
                                        extra_body={"stop_token_ids": [stop["id"]]})
        self.assertEqual(c.choices[0].finish_reason, "stop")
        self.assertEqual(c.usage.completion_tokens, 3)
        self.assertEqual(c.choices[0].text, toks[0]["text"] + toks[1]["text"])
        kept = client().completions.create(
            model=NAMES[0], prompt=PROMPT, max_tokens=8, temperature=0,
            extra_body={"stop_token_ids": [stop["id"]], "include_stop_str_in_output": True})
        self.assertEqual(kept.choices[0].text, "".join(t["text"] for t in toks[:3]))
        # A stop string: dropped by default, kept with include_stop_str_in_output.
        word = toks[3]["text"]
        a = client().completions.create(model=NAMES[0], prompt=PROMPT, max_tokens=8,
                                        temperature=0, stop=[word])
        b = client().completions.create(model=NAMES[0], prompt=PROMPT, max_tokens=8,
                                        temperature=0, stop=[word],
                                        extra_body={"include_stop_str_in_output": True})
        self.assertEqual(b.choices[0].text, a.choices[0].text + word)

    @real_only
    def test_skip_special_tokens_false_shows_the_end_of_turn(self):
        q = "Reply with just the word yes."
        plain = self.chat(q, max_tokens=48)
        self.assertEqual(plain.choices[0].finish_reason, "stop")
        shown = self.chat(q, max_tokens=48, extra_body={"skip_special_tokens": False,
                                                        "include_stop_str_in_output": True})
        self.assertEqual(shown.choices[0].message.content,
                         plain.choices[0].message.content + "<|im_end|>")
        hidden = self.chat(q, max_tokens=48, extra_body={"skip_special_tokens": False})
        self.assertEqual(hidden.choices[0].message.content, plain.choices[0].message.content)

    @real_only
    def test_min_p_one_is_greedy(self):
        greedy = self.chat("Name three fruits.", max_tokens=12)
        sampled = client().chat.completions.create(
            model=NAMES[0], messages=[{"role": "user", "content": "Name three fruits."}],
            max_tokens=12, temperature=1.0, seed=7, extra_body={"min_p": 1.0})
        self.assertEqual(sampled.choices[0].message.content, greedy.choices[0].message.content)

    @real_only
    def test_continue_final_message_with_echo(self):
        msgs = [{"role": "user", "content": "Write a short greeting."},
                {"role": "assistant", "content": "Hello there, my"}]
        r = client().chat.completions.create(
            model=NAMES[0], messages=msgs, max_tokens=6, temperature=0,
            extra_body={"add_generation_prompt": False, "continue_final_message": True,
                        "echo": True})
        text = r.choices[0].message.content
        self.assertTrue(text.startswith("Hello there, my"), text)
        self.assertGreater(len(text), len("Hello there, my"))

    @real_only
    def test_tgi_keeps_its_stop_sequence(self):
        _, _, g = post("/generate", {"inputs": PROMPT, "parameters": {
            "max_new_tokens": 8, "details": True}})
        word = g["details"]["tokens"][2]["text"]
        _, _, s = post("/generate", {"inputs": PROMPT, "parameters": {
            "max_new_tokens": 8, "details": True, "stop": [word]}})
        self.assertTrue(s["generated_text"].endswith(word))
        self.assertEqual("".join(t["text"] for t in s["details"]["tokens"]), s["generated_text"])
        self.assertEqual(s["details"]["finish_reason"], "stop_sequence")
        evs = sse("/generate_stream", {"inputs": PROMPT, "parameters": {
            "max_new_tokens": 8, "stop": [word]}})
        self.assertEqual(evs[-1][1]["token"]["text"], word)
        self.assertEqual(evs[-1][1]["generated_text"], s["generated_text"])


class ServingDetailsTest(unittest.TestCase):
    def test_served_names_and_missing_model(self):
        _, _, models = SRV.request("GET", "/v1/models")
        self.assertEqual([m["id"] for m in json.loads(models)["data"]], NAMES)
        r = client().completions.create(model=NAMES[1], prompt="Hi", max_tokens=2)
        self.assertEqual(r.model, NAMES[1])
        status, _, body = post("/v1/completions", {"prompt": "Hi", "max_tokens": 2})
        self.assertEqual(status, 200)
        self.assertEqual(body["model"], NAMES[0])
        self.assertEqual(post("/tokenize", {"model": NAMES[1], "prompt": "Hi"})[0], 200)
        status, _, body = post("/v1/chat/completions", {
            "model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(status, 404)
        self.assertEqual(body["error"]["code"], "model_not_found")

    def test_continuous_usage_stats(self):
        chunks = [d for _, d in sse("/v1/chat/completions", {
            "model": NAMES[0], "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5,
            "stream": True, "stream_options": {"include_usage": True,
                                               "continuous_usage_stats": True}})]
        with_choices = [c for c in chunks if c["choices"]]
        self.assertTrue(all(c["usage"] is not None for c in chunks))
        done = [c["usage"]["completion_tokens"] for c in with_choices]
        self.assertEqual(done, sorted(done))
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], done[-1])

    def test_request_ids(self):
        status, hdrs, body = post("/v1/completions", {"prompt": "Hi", "max_tokens": 1},
                                  headers={"X-Request-Id": "trace-abc-123"})
        self.assertEqual(status, 200)
        self.assertEqual(hdrs.get("x-request-id") or hdrs.get("X-Request-Id"), "trace-abc-123")
        ids = {post("/v1/completions", {"prompt": "Hi", "max_tokens": 1})[2]["id"]
               for _ in range(3)}
        self.assertEqual(len(ids), 3)
        for i in ids:
            self.assertRegex(i, r"^cmpl-[0-9a-f]{32}$")

    def test_cors(self):
        status, hdrs, _ = SRV.request("OPTIONS", "/v1/chat/completions", headers={
            "Origin": "https://app.example.com", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        h = {k.lower(): v for k, v in hdrs.items()}
        self.assertEqual(status, 204)
        self.assertEqual(h["access-control-allow-origin"], "https://app.example.com")
        self.assertIn("POST", h["access-control-allow-methods"])
        status, hdrs, _ = SRV.request("GET", "/v1/models",
                                      headers={"Origin": "https://evil.example.com"})
        self.assertNotIn("access-control-allow-origin", {k.lower() for k in hdrs})

    def test_vllm_series(self):
        client().completions.create(model=NAMES[0], prompt="Hi there", max_tokens=2)
        _, _, text = SRV.request("GET", "/metrics")
        text = text.decode()
        for series in ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                       "vllm:iteration_tokens_total_bucket", "vllm:cache_config_info",
                       "vllm:request_max_num_generation_tokens_bucket"):
            self.assertIn(series, text)
        m = re.search(r'vllm:iteration_tokens_total_count\{[^}]*\} (\S+)', text)
        self.assertGreater(float(m.group(1)), 0)

    def test_refusals_name_the_field(self):
        cases = [
            ({"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]},
             "messages[0].content[0].type", "text only"),
            ({"messages": [{"role": "user", "content": "x", "weight": 1}]}, "messages[0].weight",
             "not a field"),
            ({"messages": [{"role": "user", "content": "x"}], "stream": True,
              "stream_options": {"include_usage": True, "extra": 1}}, "stream_options.extra",
             "not a field"),
            ({"messages": [{"role": "user", "content": "x"}], "store": True}, "store",
             "does not store"),
        ]
        for body, param, text in cases:
            body["model"] = NAMES[0]
            status, _, err = post("/v1/chat/completions", body)
            self.assertEqual(status, 400, body)
            self.assertEqual(err["error"]["param"], param)
            self.assertIn(text, err["error"]["message"])

    def test_post_without_a_body_says_why(self):
        status, _, body = SRV.request("POST", "/v1/completions", b"")
        self.assertEqual(status, 400)
        self.assertIn("body", json.loads(body)["error"]["message"])
        # No Content-Length at all (curl -X POST with no data): an empty body (RFC 9112), answered
        # at once with the reason, in each API's shape.
        import socket
        for path, key in (("/v1/completions", "error"), ("/generate", "error")):
            with socket.create_connection(("127.0.0.1", SRV.port), timeout=10) as s:
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                          .encode())
                raw = b""
                while b"\r\n\r\n" not in raw:
                    raw += s.recv(65536)
                head, _, payload = raw.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                while len(payload) < length:
                    payload += s.recv(65536)
            self.assertIn(b" 400 ", head.split(b"\r\n")[0])
            err = json.loads(payload)[key]
            msg = err["message"] if isinstance(err, dict) else err
            self.assertIn("body", msg)


def main():
    global SRV, REAL, MODEL_PATH
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    serve_test.PRIMA = sys.argv.pop(1)
    model = sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
    if model is not None and not os.path.exists(model):
        print(f"SKIP: the model file {model} is missing (scripts/fetch-model.sh)")
        return SKIP
    for mod, pkg in (("openai", "openai"), ("huggingface_hub", "huggingface_hub")):
        try:
            __import__(mod)
        except ImportError:
            print(f"SKIP: the {pkg} package is not installed (python3 -m pip install {pkg})")
            return SKIP
    REAL = model is not None
    MODEL_PATH = model
    common = ["--served-model-name", *NAMES, "--allowed-origins", "https://app.example.com"]
    if REAL:
        SRV = Server("--model", model, "--max-model-len", "1024", "--max-num-seqs", "4", *common,
                     backend="real", start_timeout=120)
    else:
        SRV = Server("--speed", "20", *common)
    try:
        prog = unittest.main(exit=False, verbosity=2)
        ok = prog.result.wasSuccessful()
    finally:
        SRV.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
