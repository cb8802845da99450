#!/usr/bin/env python3
"""Kestrel's chat template rendering (minja, through tests/chat_template_render_main.cc) against
Python's jinja2 run the way Hugging Face transformers runs chat templates (apply_chat_template:
a sandboxed environment with trim_blocks, lstrip_blocks and loop controls; raise_exception,
strftime_now and a tojson that keeps non-ASCII), byte for byte.

Templates: the real models' own (tokenizer.chat_template of the GGUFs given with --gguf; the
Gemma 3 GGUF of scripts/fetch-model.sh carries none, so Gemma 3's comes from the fixtures), and
the fixtures in tests/data/chat_templates (Gemma 3, Gemma 2, Llama 3, Llama 3.2, Qwen2.5,
Qwen3, Phi-3.5, ChatML, SmolLM2, SmolLM3; Qwen3's and SmolLM3's also with enable_thinking false). Conversations: with and without a system prompt, one to three turns, with and
without the generation prompt, Unicode, surrounding whitespace, typed control tokens and Jinja
syntax. Also checks the split `kestrel chat` encodes by: the segments spell the rendering, and
the last user message is one segment of text (never parsed for control tokens).

  compare_chat_templates.py --tool BIN [--gguf FILE ...] [--fixtures DIR]
"""
import argparse
import datetime
import json
import os
import struct
import subprocess
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = 1_700_000_000  # 2023-11-14: a fixed strftime_now, the same on both sides

# Fixture file -> (bos_token, eos_token), as each model's tokenizer_config.json has them.
FIXTURES = {
    "gemma3.jinja": ("<bos>", "<eos>"),
    "llama3.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen2.5.jinja": ("", "<|im_end|>"),
    "phi3.5.jinja": ("<s>", "<|endoftext|>"),
    "chatml.jinja": ("", "<|im_end|>"),
    "smollm2.jinja": ("<|im_start|>", "<|im_end|>"),
    "qwen3.jinja": ("", "<|im_end|>"),
    "smollm3.jinja": ("", "<|im_end|>"),
    "gemma2.jinja": ("<bos>", "<eos>"),
}
# Templates that read enable_thinking (Qwen3's, SmolLM3's) are rendered a second time with it
# false, as `kestrel chat --no-think` and the server's chat_template_kwargs pass it.
THINKING_VARIABLE = "enable_thinking"


def hf_environment():
    """transformers.utils.chat_template_utils._compile_jinja_template's environment."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def conversations():
    """(name, messages, add_generation_prompt)."""
    sys_ = {"role": "system", "content": "You are a terse assistant. Answer in one line."}
    u1 = {"role": "user", "content": "What is the capital of France?"}
    a1 = {"role": "assistant", "content": "Paris."}
    u2 = {"role": "user", "content": "And of Italy?"}
    a2 = {"role": "assistant", "content": "Rome.\n"}
    u3 = {"role": "user", "content": "Thanks!"}
    uni = {"role": "user", "content": "Grüße aus Köln — 世界 🙂\nzweite Zeile\tmit Tab"}
    pad = {"role": "user", "content": "  padded on both sides \n"}
    typed = {"role": "user",
             "content": "<|im_end|><end_of_turn><|eot_id|><|end|> {{ not jinja }} {% raw %}"}
    return [
        ("one turn", [u1], True),
        ("system, one turn", [sys_, u1], True),
        ("system, two turns", [sys_, u1, a1, u2], True),
        ("three turns", [u1, a1, u2, a2, u3], True),
        ("system, three turns", [sys_, u1, a1, u2, a2, u3], True),
        ("history without generation prompt", [sys_, u1, a1], False),
        ("three turns without generation prompt", [u1, a1, u2, a2, u3, a1], False),
        ("unicode", [sys_, uni], True),
        ("unicode system", [{"role": "system", "content": "Réponds en français, s'il te plaît."},
                            uni, {"role": "assistant", "content": "D'accord — ça marche."}, u3],
         True),
        ("surrounding whitespace", [pad, {"role": "assistant", "content": "\n ok \n"}, pad], True),
        ("typed control tokens", [typed], True),
        ("empty system", [{"role": "system", "content": ""}, u1], True),
    ]


def gguf_metadata(path):
    """The GGUF's metadata as {key: value}, read straight from its header (gguf.GGUFReader
    would also index every tensor: 12 s for Gemma 3's 262k-token vocabulary)."""
    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
               10: "<Q", 11: "<q", 12: "<d"}
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # the metadata of our models is far smaller

    def read(fmt, at):
        return struct.unpack_from(fmt, data, at)[0], at + struct.calcsize(fmt)

    def string(at):
        n, at = read("<Q", at)
        return data[at:at + n], at + n

    def value(kind, at):
        if kind == 8:
            return string(at)
        if kind == 9:
            item, at = read("<I", at)
            n, at = read("<Q", at)
            items = []
            for _ in range(n):
                v, at = value(item, at)
                items.append(v)
            return items, at
        return read(scalars[kind], at)

    if data[:4] != b"GGUF":
        sys.exit(f"FAIL: {path} is not a GGUF file")
    at = 8 + 8  # magic, version, tensor count
    n_kv, at = read("<Q", at)
    meta = {}
    for _ in range(n_kv):
        key, at = string(at)
        kind, at = read("<I", at)
        meta[key.decode()], at = value(kind, at)
    return meta


def gguf_template(path):
    meta = gguf_metadata(path)
    if "tokenizer.chat_template" not in meta:
        return None
    tokens = meta["tokenizer.ggml.tokens"]

    def piece(key):
        return tokens[meta[key]].decode("utf-8") if key in meta else ""

    return (meta["tokenizer.chat_template"].decode("utf-8"), piece("tokenizer.ggml.bos_token_id"),
            piece("tokenizer.ggml.eos_token_id"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--gguf", action="append", default=[])
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(__file__), "..", "data",
                                                       "chat_templates"))
    args = ap.parse_args()

    templates = []  # (name, source, bos, eos)
    for path in args.gguf:
        if not os.path.exists(path):
            sys.exit(f"FAIL: {path} is missing (scripts/fetch-model.sh fetches it)")
        found = gguf_template(path)
        if found is None:
            print(f"{os.path.basename(path)}: no chat template in the file; its fixture stands in")
            continue
        templates.append((os.path.basename(path),) + found)
    for name, (bos, eos) in FIXTURES.items():
        with open(os.path.join(args.fixtures, name), encoding="utf-8") as f:
            templates.append((name, f.read(), bos, eos))

    env = hf_environment()
    cases, expected, labels = [], [], []
    for tname, source, bos, eos in templates:
        compiled = env.from_string(source)
        thinking_settings = [None] + ([False] if THINKING_VARIABLE in source else [])
        for thinking in thinking_settings:
            extra = {} if thinking is None else {THINKING_VARIABLE: thinking}
            for cname, messages, agp in conversations():
                try:
                    want = compiled.render(messages=messages, tools=None, documents=None,
                                           add_generation_prompt=agp, bos_token=bos,
                                           eos_token=eos, **extra)
                except jinja2.exceptions.TemplateError as e:
                    want = ("error", str(e))
                cases.append({"template": source, "bos_token": bos, "eos_token": eos,
                              "now": NOW, "messages": messages, "add_generation_prompt": agp,
                              **extra})
                expected.append(want)
                labels.append(f"{tname} / {cname}" + ("" if thinking is None else " / no think"))

    proc = subprocess.run([args.tool], input=json.dumps({"cases": cases}).encode("utf-8"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {args.tool} exited {proc.returncode}: {proc.stderr.decode()}")
    results = json.loads(proc.stdout.decode("utf-8"))
    assert len(results) == len(cases), (len(results), len(cases))

    failures = 0
    for label, case, want, got in zip(labels, cases, expected, results):
        if isinstance(want, tuple):
            if "error" not in got:
                failures += 1
                print(f"FAIL {label}: jinja2 raises ({want[1]}), Kestrel renders {got['text']!r}")
            continue
        if "error" in got:
            failures += 1
            print(f"FAIL {label}: Kestrel fails: {got['error']}")
            continue
        if got["text"] != want:
            failures += 1
            print(f"FAIL {label}:\n  jinja2:  {want!r}\n  Kestrel: {got['text']!r}")
            continue
        if "".join(text for _, text in got["segments"]) != want:
            failures += 1
            print(f"FAIL {label}: the segments do not spell the rendering: {got['segments']!r}")
            continue
        last = case["messages"][-1]
        if case["add_generation_prompt"] and last["role"] == "user":
            words = [text for markup, text in got["segments"] if not markup]
            if last["content"] not in words and last["content"].strip(" \t\n\r") not in words:
                failures += 1
                print(f"FAIL {label}: the last user message is not a text segment: "
                      f"{got['segments']!r}")
    print(f"{len(cases) - failures} of {len(cases)} renderings equal jinja2's "
          f"({len(templates)} templates)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
