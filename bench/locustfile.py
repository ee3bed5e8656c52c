"""Load test of `prima serve` in the style of seed 001's locust test: each user posts a short
prompt to TGI's POST /generate with max_new_tokens 128 (responses are checked, not just
counted).

    prima serve --backend sim --scenario scenarios/seed_claims/seed001_llama2_13b_a100_node.json &
    locust -f bench/locustfile.py --headless -u 50 -r 50 -t 30s --host http://127.0.0.1:8000

PRIMA_API_KEY, when set, is sent as the bearer token. PRIMA_MAX_NEW_TOKENS overrides 128.
"""
import os

from locust import HttpUser, constant, task

MAX_NEW_TOKENS = int(os.environ.get("PRIMA_MAX_NEW_TOKENS", "128"))
PROMPTS = ["What is deep learning?", "Explain continuous batching in two sentences.",
           "Write a haiku about GPUs.", "Why is the KV cache paged?"]


class GenerateUser(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.i = 0
        key = os.environ.get("PRIMA_API_KEY")
        if key:
            self.client.headers["Authorization"] = f"Bearer {key}"

    @task
    def generate(self):
        self.i += 1
        body = {"inputs": PROMPTS[self.i % len(PROMPTS)],
                "parameters": {"max_new_tokens": MAX_NEW_TOKENS}}
        with self.client.post("/generate", json=body, name="/generate",
                              catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"HTTP {r.status_code}: {r.text[:200]}")
                return
            text = r.json().get("generated_text")
            if not isinstance(text, str) or not text:
                r.failure(f"no generated_text in {r.text[:200]}")
            elif r.headers.get("x-generated-tokens") != str(MAX_NEW_TOKENS):
                r.failure(f"generated {r.headers.get('x-generated-tokens')} tokens, "
                          f"asked {MAX_NEW_TOKENS}")
            else:
                r.success()
