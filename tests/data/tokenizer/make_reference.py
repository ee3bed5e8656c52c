#!/usr/bin/env python3
"""Reference fixtures for the tokenizer tests (tests/backends/real/tokenizer_*_test.cpp).

smollm2_reference.json: token ids that llama.cpp (through llama-cpp-python, vocab only) gives
for varied strings on models/SmolLM2-135M-Instruct.Q4_1.gguf, with special-token parsing on
and off.
smollm2_chat_reference.json: what Python jinja2 renders with the model's own
tokenizer.chat_template (read with the PyPI package gguf) for several message lists, plus
the canonical templates of other families (written out below) for the family renderers.
pretokenize_reference.json: the pieces Python's regex module gives for the gpt2, smollm and
llama3 pre-tokenizer expressions on the same strings.

Usage: python3 tests/data/tokenizer/make_reference.py [model.gguf]
Needs: pip install llama-cpp-python gguf jinja2 regex
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog. In 1969, Apollo 11 landed on the Moon; "
    "Neil Armstrong's words were: \"That's one small step for [a] man, one giant leap for "
    "mankind.\" Prices rose 3.75% to $1,234,567.89 (up from 1,190,000) on 2024-03-15T12:34:56Z. "
    "def f(x):\n    return x ** 2  # squares\n\tindented\twith\ttabs\n\n\n"
    "Ünïcödé façade, naïve café — «quotes» and “smart quotes” ‘too’. Привет, мир! "
    "こんにちは世界。你好，世界！안녕하세요 🙂🚀👍🏽 x² ½ ① Ⅻ ٣٤٥ "
)
LONG = (PARAGRAPH * 10)[:2000]

STRINGS = [
    "Hello world",
    "Hello, world!",
    "hello",
    " hello",
    "  hello",
    "hello ",
    "hello   ",
    "   leading and trailing   ",
    "multiple     spaces    between words",
    "",
    " ",
    "\t",
    "\n",
    "line one\nline two\n\nline four",
    "tabs\tand\ttabs\t\t end",
    "\r\nwindows\r\nnewlines\r\n",
    "12345",
    "3.14159265358979",
    "Call 555-0123 or +1 (800) 555-0199",
    "The year 2024 had 366 days",
    "1000000000000000000000",
    "!!!???...,,,;;;",
    "a--b==c++d**e//f",
    "I'm sure it's what they've said; we'll see, you'd agree, they're right",
    "I'M SHOUTING, IT'S LOUD",
    "don't won't can't shouldn't",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += v[i]; }",
    "#include <vector>\nint main() { return 0; }",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2#frag",
    "email: someone@example.com",
    "Crème brûlée, naïve façade, São Paulo, Zürich",
    "Привет, как дела? Всё хорошо.",
    "日本語のテキストと中文文本",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "Emoji: 😀🎉👍🏽 ❤️ 🇫🇷",
    "Mixed: English, русский, 中文, العربية, 123",
    "x² + y² = z², ½ ¾ ① Ⅻ",
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "text <|endoftext|> more text",
    "<|im_end|><|im_end|>",
    "<repo_name>prima<file_sep>main.cpp",
    "not special: <|im_start, <|im_end|",
    "ends with a special<|im_end|>",
    "   <|im_start|>   spaced   <|im_end|>   ",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "zero\u200bwidth joiner\u200d",
    "e\u0301 combining acute, a\u0308",
    LONG,
]


def make_tokens():
    import llama_cpp
    llm = llama_cpp.Llama(model_path=MODEL, vocab_only=True, verbose=False)
    cases = []
    for s in STRINGS:
        for special in (False, True):
            ids = llm.tokenize(s.encode("utf-8"), add_bos=False, special=special)
            cases.append({"text": s, "parse_special": special, "ids": ids})
    out = {
        "model": os.path.basename(MODEL),
        "generator": "llama-cpp-python %s: Llama(vocab_only=True).tokenize(text.encode(), "
                     "add_bos=False, special=parse_special)" % llama_cpp.__version__,
        "cases": cases,
    }
    with open(os.path.join(HERE, "smollm2_reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote %d token cases" % len(cases))


PRE_EXPRESSIONS = {
    "gpt2": [r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"],
    "smollm": [r"\p{N}",
               r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"],
    "llama3": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
}


def regex_split(expressions, text):
    """Applies the expressions in sequence; unmatched stretches stay pieces of their own."""
    import regex
    pieces = [text] if text else []
    for expr in expressions:
        out = []
        for p in pieces:
            pos = 0
            for m in regex.finditer(expr, p):
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(m.group(0))
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    return pieces


def make_pretokenize():
    cases = [{"pre": name, "text": s, "pieces": regex_split(exprs, s)}
             for name, exprs in PRE_EXPRESSIONS.items() for s in STRINGS]
    out = {"generator": "Python regex %s: the pre-tokenizer expressions, applied in sequence"
                        % __import__("regex").__version__, "cases": cases}
    with open(os.path.join(HERE, "pretokenize_reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote %d pre-tokenizer cases" % len(cases))


# Canonical templates of other families, for the family renderers (rendered with jinja2 too).
OTHER_TEMPLATES = {
    "llama3": (
        "{% set loop_messages = messages %}{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
        "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
        "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
        "{% endif %}",
        "<|begin_of_text|>", "<|end_of_text|>"),
    "llama2": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}"
        "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
        "{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
        "{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + "
        "message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + "
        "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + "
        "' ' + eos_token }}{% endif %}{% endfor %}",
        "<s>", "</s>"),
    "zephyr": (
        "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
        "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n"
        "{{ '<|system|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'assistant' %}\n"
        "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
        "{% endfor %}",
        "<s>", "</s>"),
    "gemma": (
        "{{ bos_token }}{% for message in messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
        "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
        "{% else %}{% set role = message['role'] %}{% endif %}"
        "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
        "<bos>", "<eos>"),
}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
     {"role": "user", "content": "  And 3+3?  "}],
    [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a joke"},
     {"role": "assistant", "content": "Why did the chicken cross the road?"},
     {"role": "user", "content": "Why?\nI don't know."}],
    [{"role": "user", "content": "Unicode: café, Привет, 你好 🙂"}],
]


def render(template, messages, add_gen, bos, eos):
    import jinja2
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(msg):
        raise ValueError(msg)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_gen,
                                            bos_token=bos, eos_token=eos)


def make_chat():
    from gguf import GGUFReader
    reader = GGUFReader(MODEL)
    field = reader.fields["tokenizer.chat_template"]
    template = field.contents()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    bos = tokens[int(reader.fields["tokenizer.ggml.bos_token_id"].contents())]
    eos = tokens[int(reader.fields["tokenizer.ggml.eos_token_id"].contents())]
    cases = []
    templates = [("model", template, bos, eos)] + [
        (fam, t, b, e) for fam, (t, b, e) in OTHER_TEMPLATES.items()]
    for name, tmpl, b, e in templates:
        for msgs in CONVERSATIONS:
            for add_gen in (False, True):
                try:
                    text = render(tmpl, msgs, add_gen, b, e)
                except ValueError as err:
                    text = None
                    print("%s: %s" % (name, err))
                cases.append({"template": name, "messages": msgs, "add_generation_prompt": add_gen,
                              "rendered": text})
    out = {
        "model": os.path.basename(MODEL),
        "generator": "jinja2 (trim_blocks, lstrip_blocks, as transformers renders) on the "
                     "model's tokenizer.chat_template and the templates in make_reference.py",
        "templates": {fam: {"template": t, "bos": b, "eos": e}
                      for fam, (t, b, e) in OTHER_TEMPLATES.items()},
        "cases": cases,
    }
    with open(os.path.join(HERE, "smollm2_chat_reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote %d chat cases" % len(cases))


if __name__ == "__main__":
    make_pretokenize()
    make_chat()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        sys.exit("llama_cpp is not importable: token references not written")
    make_tokens()
