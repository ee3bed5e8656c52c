#!/usr/bin/env python3
"""End-to-end tests of the request fields that are implemented or refused (docs/serving.md,
"Fields per API"), with the official clients: the `openai` package and Hugging Face's
`text-generation` client.

Both backends: logprobs / top_logprobs in OpenAI's shapes (completions and chat, streamed and
not), echo, the seed reported in "prima", penalties and logit_bias accepted, the refused fields
answered with 400 naming the field in each API's error shape, TGI details (tokens, prefill,
top_tokens) validated by text_generation's pydantic models, return_full_text and truncate.
Real backend (SmolLM2): logprobs are <= 0, top alternatives sorted, the greedy token is the
most likely one with its own logprob, a -100 logit_bias on the greedy token changes the output,
a repetition penalty changes a greedy answer; sim backend: synthetic logprobs are a function
of the seed.

usage: fields_test.py PATH/TO/prima [MODEL.gguf]   (with MODEL: the real backend, else sim)
       (exit 0: pass, 77: skipped, 1: failures)
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (the Server harness)
from serve_test import Server  # noqa: E402

SKIP = 77
SRV = None
REAL = False


def client():
    import openai
    return openai.OpenAI(base_url=SRV.base + "/v1", api_key="none", max_retries=0, timeout=120)


def model_name():
    return json.loads(SRV.request("GET", "/v1/models")[2])["data"][0]["id"]


def post(path, body):
    status, _, data = SRV.request("POST", path, body)
    return status, json.loads(data)


def sse_events(path, body):
    """The JSON events of a server-sent-events answer."""
    status, _, data = SRV.request("POST", path, body)
    assert status == 200, data
    out = []
    for line in data.decode().splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            out.append(json.loads(line[5:]))
    return out


class OpenAILogprobsTest(unittest.TestCase):
    def test_completion_logprobs_shape(self):
        r = client().completions.create(model=model_name(), prompt="Once upon a time",
                                        max_tokens=8, logprobs=3, temperature=0,
                                        extra_body={"ignore_eos": True})
        c = r.choices[0]
        lp = c.logprobs
        n = r.usage.completion_tokens
        self.assertEqual(len(lp.tokens), n)
        self.assertEqual(len(lp.token_logprobs), n)
        self.assertEqual(len(lp.top_logprobs), n)
        self.assertEqual("".join(lp.tokens), c.text)
        offset = 0
        for tok, x, top, off in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs,
                                    lp.text_offset):
            self.assertLessEqual(x, 0)
            self.assertEqual(off, offset)
            offset += len(tok)
            self.assertIn(tok, top)  # the sampled token is always listed
            self.assertLessEqual(len(top), 4)
            self.assertAlmostEqual(top[tok], x, places=5)
            # greedy: the sampled token is the most likely one
            self.assertAlmostEqual(max(top.values()), x, places=5)

    def test_no_logprobs_unless_asked(self):
        r = client().completions.create(model=model_name(), prompt="Hi", max_tokens=2)
        self.assertIsNone(r.choices[0].logprobs)
        r = client().chat.completions.create(model=model_name(), max_tokens=2,
                                             messages=[{"role": "user", "content": "Hi"}])
        self.assertIsNone(r.choices[0].logprobs)

    def test_chat_top_logprobs_sorted_and_greedy_is_the_top(self):
        r = client().chat.completions.create(
            model=model_name(), messages=[{"role": "user", "content": "Name a color."}],
            max_tokens=8, temperature=0, logprobs=True, top_logprobs=5)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), r.usage.completion_tokens)
        for e in content:
            self.assertLessEqual(e.logprob, 0)
            self.assertEqual(bytes(e.bytes).decode("utf-8", "replace").replace("\ufffd", ""),
                             e.token.replace("\ufffd", ""))
            self.assertEqual(len(e.top_logprobs), 5)
            lps = [t.logprob for t in e.top_logprobs]
            self.assertEqual(lps, sorted(lps, reverse=True))
            self.assertTrue(all(x <= 0 for x in lps))
            self.assertEqual(e.top_logprobs[0].token, e.token)
            self.assertAlmostEqual(e.top_logprobs[0].logprob, e.logprob, places=5)

    def test_streamed_logprobs_equal_the_whole_answer(self):
        kw = dict(model=model_name(), prompt="The sky is", max_tokens=6, logprobs=2, seed=5,
                  temperature=0.8, extra_body={"ignore_eos": True})
        whole = client().completions.create(**kw).choices[0]
        tokens, lps, offsets = [], [], []
        for ch in client().completions.create(**kw, stream=True):
            if ch.choices and ch.choices[0].logprobs:
                tokens += ch.choices[0].logprobs.tokens
                lps += ch.choices[0].logprobs.token_logprobs
                offsets += ch.choices[0].logprobs.text_offset
        self.assertEqual(tokens, whole.logprobs.tokens)
        for a, b in zip(lps, whole.logprobs.token_logprobs):
            self.assertAlmostEqual(a, b, places=5)
        self.assertEqual(offsets, whole.logprobs.text_offset)
        chat = []
        for ch in client().chat.completions.create(
                model=model_name(), messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                logprobs=True, top_logprobs=1, stream=True):
            if ch.choices and ch.choices[0].logprobs:
                chat += ch.choices[0].logprobs.content
        self.assertGreater(len(chat), 0)
        self.assertTrue(all(len(e.top_logprobs) == 1 for e in chat))

    def test_echo_prepends_the_prompt(self):
        r = client().completions.create(model=model_name(), prompt="Hello there", max_tokens=3,
                                        echo=True)
        self.assertTrue(r.choices[0].text.startswith("Hello there"), r.choices[0].text)
        self.assertGreater(len(r.choices[0].text), len("Hello there"))
        text = "".join(ch.choices[0].text for ch in client().completions.create(
            model=model_name(), prompt="Hello there", max_tokens=3, echo=True, stream=True)
            if ch.choices)
        self.assertTrue(text.startswith("Hello there"), text)

    def test_seed_is_reported(self):
        r = client().completions.create(model=model_name(), prompt="Hi", max_tokens=2, seed=1234)
        self.assertEqual(r.model_extra["prima"]["seed"], 1234)
        drawn = client().completions.create(model=model_name(), prompt="Hi", max_tokens=2)
        self.assertIsInstance(drawn.model_extra["prima"]["seed"], int)

    def test_tgi_typical_p_is_accepted(self):
        r = tg_generate("Hi", max_new_tokens=3, typical_p=0.9, seed=4)
        self.assertEqual(r.details.generated_tokens, 3)
        self.assertEqual(r.details.seed, 4)  # typical_p turns sampling on, as in TGI

    def test_penalties_and_logit_bias_are_accepted(self):
        r = client().completions.create(model=model_name(), prompt="Hi", max_tokens=3,
                                        presence_penalty=0.5, frequency_penalty=-0.5,
                                        logit_bias={"5": -100, "7": 3},
                                        extra_body={"repetition_penalty": 1.2})
        self.assertEqual(r.usage.completion_tokens > 0, True)


class RefusalTest(unittest.TestCase):
    def refused(self, create, param, text):
        import openai
        with self.assertRaises(openai.BadRequestError) as cm:
            create()
        err = cm.exception.body
        self.assertEqual(err["param"], param, err)
        self.assertIn(text, err["message"])

    def test_openai_refusals_name_the_field(self):
        c = client()
        m = model_name()
        msgs = [{"role": "user", "content": "Hi"}]
        self.refused(lambda: c.chat.completions.create(
            model=m, messages=msgs, tools=[{"type": "function", "function": {"name": "f"}}]),
            "tools", "tool-calling")
        self.refused(lambda: c.chat.completions.create(
            model=m, messages=msgs, response_format={"type": "json_object"}),
            "response_format", "text")
        self.refused(lambda: c.completions.create(model=m, prompt="x", best_of=2),
                     "best_of", "must be 1")
        self.refused(lambda: c.completions.create(model=m, prompt="x", suffix="y"),
                     "suffix", "not supported")
        self.refused(lambda: c.completions.create(model=m, prompt="x", max_tokens=0),
                     "max_tokens", "'echo': true")
        self.refused(lambda: c.completions.create(model=m, prompt="x", logprobs=6),
                     "logprobs", "0 to 5")
        self.refused(lambda: c.chat.completions.create(model=m, messages=msgs, top_logprobs=2),
                     "top_logprobs", "logprobs")
        self.refused(lambda: c.completions.create(model=m, prompt="x", presence_penalty=3),
                     "presence_penalty", "-2 and 2")
        self.refused(lambda: c.completions.create(model=m, prompt="x",
                                                  logit_bias={"nope": 1}),
                     "logit_bias.nope", "token ids")
        self.refused(lambda: c.completions.create(model=m, prompt="x", max_tokens=2,
                                                  extra_body={"min_tokens": 3}),
                     "min_tokens", "at most")
        if REAL:
            self.refused(lambda: c.completions.create(model=m, prompt="x",
                                                      logit_bias={"49152": 1}),
                         "logit_bias.49152", "not a token id")

    def test_tgi_refusals_in_tgi_shape(self):
        for params, field in [({"watermark": True}, "parameters.watermark"),
                              ({"best_of": 2, "do_sample": True}, "parameters.best_of"),
                              ({"typical_p": 1.5}, "parameters.typical_p"),
                              ({"grammar": {"type": "json", "value": {}}}, "parameters.grammar"),
                              ({"top_n_tokens": 50}, "parameters.top_n_tokens")]:
            status, body = post("/generate", {"inputs": "Hi", "parameters": params})
            self.assertEqual(status, 400, body)
            self.assertIn(field, body["error"])
            self.assertIn("error_type", body)


def tg_generate(prompt, **kw):
    """text_generation's Client.generate(prompt, **kw): through the client itself where the
    server has TGI's POST / route (the client posts to its base URL); else the very body the
    client sends (its Request and Parameters models, details on) posted to /generate, and the
    answer validated by the client's Response model."""
    import warnings
    from text_generation import Client
    from text_generation.types import Parameters, Request, Response
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic 2 deprecates .dict(), which the client uses
        body = Request(inputs=prompt, stream=False,
                       parameters=Parameters(details=True, stop=[], **kw)).dict()
        status, _, data = SRV.request("POST", "/", body)
        if status == 200:
            return Client(SRV.base, timeout=120).generate(prompt, **kw)
    status, _, data = SRV.request("POST", "/generate", body)
    assert status == 200, data
    return Response(**json.loads(data))


class TgiDetailsTest(unittest.TestCase):
    def test_text_generation_client_details(self):
        r = tg_generate("The capital of France is", max_new_tokens=5,
                        decoder_input_details=True, top_n_tokens=2)
        d = r.details
        self.assertEqual(d.generated_tokens, len(d.tokens))
        self.assertGreater(len(d.prefill), 0)
        self.assertIsNone(d.prefill[0].logprob)
        self.assertEqual(len(d.top_tokens), len(d.tokens))
        for tok, top in zip(d.tokens, d.top_tokens):
            self.assertLessEqual(tok.logprob, 0)
            self.assertEqual(len(top), 2)
            self.assertGreaterEqual(top[0].logprob, top[1].logprob)
            # greedy (TGI's default): the generated token is the most likely one
            self.assertEqual(top[0].id, tok.id)
            self.assertAlmostEqual(top[0].logprob, tok.logprob, places=5)
        self.assertIsNone(d.seed)  # greedy: no seed, as TGI reports it
        if REAL:
            ids = json.loads(SRV.request("POST", "/v1/completions", {
                "model": model_name(), "prompt": "The capital of France is",
                "max_tokens": 1})[2])["usage"]["prompt_tokens"]
            self.assertEqual(len(d.prefill), ids)
        plain = tg_generate("Hi", max_new_tokens=2)
        self.assertEqual(plain.details.prefill, [])  # decoder_input_details is off
        seeded = tg_generate("Hi", max_new_tokens=2, do_sample=True, seed=9)
        self.assertEqual(seeded.details.seed, 9)

    def test_return_full_text_and_truncate(self):
        r = tg_generate("Tell me a story", max_new_tokens=3, return_full_text=True)
        self.assertTrue(r.generated_text.startswith("Tell me a story"), r.generated_text)
        status, body = post("/generate", {"inputs": "one two three four five six seven",
                                          "parameters": {"max_new_tokens": 2, "truncate": 2,
                                                         "details": True,
                                                         "decoder_input_details": True}})
        self.assertEqual(status, 200, body)
        self.assertEqual(len(body["details"]["prefill"]), 2)

    def test_stream_top_tokens_and_final_details(self):
        events = sse_events("/generate_stream", {"inputs": "Hi", "parameters": {
            "max_new_tokens": 4, "top_n_tokens": 3, "return_full_text": True}})
        self.assertEqual(len(events), 4)
        for ev in events:
            self.assertEqual(len(ev["top_tokens"]), 3)
            self.assertLessEqual(ev["token"]["logprob"], 0)
        self.assertTrue(events[-1]["generated_text"].startswith("Hi"))
        self.assertEqual(events[-1]["details"]["generated_tokens"], 4)


class SyntheticLogprobsTest(unittest.TestCase):
    """Sim backend only: synthetic logprobs follow the seed."""

    def test_same_seed_same_logprobs(self):
        if REAL:
            self.skipTest("sim backend only")
        kw = dict(model=model_name(), prompt="Hi", max_tokens=5, logprobs=2)
        a = client().completions.create(**kw, seed=3).choices[0].logprobs.token_logprobs
        b = client().completions.create(**kw, seed=3).choices[0].logprobs.token_logprobs
        c = client().completions.create(**kw, seed=4).choices[0].logprobs.token_logprobs
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)


class RealSamplerTest(unittest.TestCase):
    """Real backend only: bias and penalties change what the model generates."""

    def setUp(self):
        if not REAL:
            self.skipTest("real backend only")

    def test_logit_bias_on_the_greedy_token_changes_the_output(self):
        prompt = "The capital of France is"
        status, body = post("/generate", {"inputs": prompt, "parameters": {
            "max_new_tokens": 4, "details": True}})
        self.assertEqual(status, 200, body)
        first = body["details"]["tokens"][0]["id"]
        kw = dict(model=model_name(), prompt=prompt, max_tokens=4, temperature=0)
        base = client().completions.create(**kw).choices[0].text
        self.assertEqual(base, body["generated_text"])
        biased = client().completions.create(**kw, logit_bias={str(first): -100},
                                             logprobs=1).choices[0]
        self.assertNotEqual(biased.text, base)
        # logprobs are the raw distribution: the banned token is still the most likely one
        top = biased.logprobs.top_logprobs[0]
        self.assertGreater(max(top.values()), biased.logprobs.token_logprobs[0])

    def test_a_tiny_typical_p_leaves_one_token_whatever_the_seed(self):
        # Sampling at temperature 1: two seeds draw different texts, unless typical_p keeps a
        # single candidate per position.
        kw = dict(max_new_tokens=12, do_sample=True)
        free = [tg_generate("My favourite food is", seed=s, **kw).generated_text for s in (1, 2)]
        self.assertNotEqual(free[0], free[1])
        cut = [tg_generate("My favourite food is", seed=s, typical_p=0.001, **kw)
               for s in (1, 2)]
        self.assertEqual(cut[0].generated_text, cut[1].generated_text)
        self.assertEqual(cut[0].details.seed, 1)

    def test_repetition_penalty_changes_a_greedy_answer(self):
        kw = dict(model=model_name(), prompt="one one one one one one one", max_tokens=12,
                  temperature=0)
        base = client().completions.create(**kw).choices[0].text
        pen = client().completions.create(**kw, extra_body={"repetition_penalty": 3.0})
        self.assertNotEqual(pen.choices[0].text, base)
        freq = client().completions.create(**kw, frequency_penalty=2.0).choices[0].text
        self.assertNotEqual(freq, base)


class PipelineParallelFieldsTest(unittest.TestCase):
    """Real backend: with two pipeline stages (mpirun -np 2 --pp 2) the last stage samples and
    sends the ids and the logprobs to the leader; the penalty histories and the bias travel in
    the step message. The answer and its logprobs equal the single-process server's."""

    def test_pp2_logprobs_and_penalties_equal_one_process(self):
        import shutil
        if not REAL:
            self.skipTest("real backend only")
        if not shutil.which("mpirun"):
            self.skipTest("mpirun (Debian openmpi-bin) is not installed")
        kw = dict(model=model_name(), messages=[{"role": "user", "content": "Say hello."}],
                  max_tokens=8, temperature=0, logprobs=True, top_logprobs=3,
                  frequency_penalty=0.5, logit_bias={"28": -5},
                  extra_body={"repetition_penalty": 1.3})
        want = client().chat.completions.create(**kw).choices[0]
        import openai
        with serve_test.MpiServer(2, "--model", MODEL_PATH, "--pp", "2", "--max-model-len", "256",
                                  "--max-num-seqs", "1", "--kernel-threads", "1") as srv:
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="none",
                              max_retries=3, timeout=300)
            got = c.chat.completions.create(**kw).choices[0]
        self.assertEqual(got.message.content, want.message.content)
        self.assertEqual(len(got.logprobs.content), len(want.logprobs.content))
        for a, b in zip(got.logprobs.content, want.logprobs.content):
            self.assertEqual(a.token, b.token)
            self.assertAlmostEqual(a.logprob, b.logprob, places=5)
            self.assertEqual([t.token for t in a.top_logprobs], [t.token for t in b.top_logprobs])


MODEL_PATH = None


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
    try:
        import openai  # noqa: F401
    except ImportError:
        print("SKIP: the openai package is not installed (python3 -m pip install openai)")
        return SKIP
    try:
        import text_generation  # noqa: F401
    except ImportError:
        print("SKIP: the text-generation package is not installed "
              "(python3 -m pip install text-generation)")
        return SKIP
    REAL = model is not None
    MODEL_PATH = model
    if REAL:
        SRV = Server("--model", model, "--max-model-len", "1024", "--max-num-seqs", "4",
                     backend="real", start_timeout=120)
    else:
        SRV = Server("--speed", "20")
    try:
        prog = unittest.main(exit=False, verbosity=2)
        ok = prog.result.wasSuccessful()
    finally:
        SRV.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
