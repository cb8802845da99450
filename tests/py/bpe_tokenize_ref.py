#!/usr/bin/env python3
"""Reference tokenizer for GGUF byte-level BPE vocabularies (tokenizer.ggml.model "gpt2"), the
oracle for Kestrel's in CI: Hugging Face `tokenizers` (Rust, its own regex engine), built from
the GGUF's pieces and merges with the pre-tokenizer llama.cpp uses for tokenizer.ggml.pre:
  smollm:    Split(\\p{N}, isolated) then ByteLevel (GPT-2's expression)
  gpt2:      ByteLevel
  llama-bpe: Split(Llama 3's expression) then ByteLevel without its own expression; whole-word
             vocabulary hits win over merges (ignore_merges), as llama.cpp does for Llama 3
  qwen2:     the same with Qwen2's expression
Control tokens become added tokens when special parsing is on; user-defined ones always.

It tokenizes the cases of tests/py/tokenizer_corpus.py, each with special parsing on and off,
and writes them and the ids for a C++ test to compare with:

  bpe_tokenize_ref.py --gguf M.gguf --cases CASES.bin --out IDS.txt

CASES.bin: records "<parse_special 0|1> <n_bytes>\\n" + UTF-8 text + "\\n" (tokenize_ref.py's
format); IDS.txt: one line of space-separated ids per case.
"""
import argparse
import sys
from pathlib import Path

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402

CONTROL, USER_DEFINED = 3, 4
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")


def field(reader, key):
    return reader.fields[key].contents() if key in reader.fields else None


def build(reader, parse_special):
    pieces = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    pre = field(reader, "tokenizer.ggml.pre") or "gpt2"
    vocab = {}
    for i, p in enumerate(pieces):
        vocab.setdefault(p, i)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=pre in ("gpt2", "smollm"))
    if pre == "smollm":
        split = [pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"), byte_level]
    elif pre == "gpt2":
        split = [byte_level]
    elif pre in ("llama-bpe", "qwen2"):
        expr = LLAMA3 if pre == "llama-bpe" else QWEN2
        split = [pre_tokenizers.Split(Regex(expr), behavior="isolated"), byte_level]
    else:
        raise SystemExit(f"bpe_tokenize_ref: unsupported pre-tokenizer {pre!r}")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=pre == "llama-bpe"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(split)
    added = [AddedToken(p, special=True, normalized=False) for p, t in zip(pieces, types)
             if t == USER_DEFINED or (parse_special and t == CONTROL)]
    if added:
        tok.add_special_tokens(added)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.gguf)
    tokenizers = {special: build(reader, special) for special in (True, False)}
    with open(args.cases, "wb") as cases, open(args.out, "w") as out:
        for text in tokenizer_corpus.cases():
            for special in (True, False):
                data = text.encode()
                cases.write(f"{int(special)} {len(data)}\n".encode() + data + b"\n")
                ids = tokenizers[special].encode(text, add_special_tokens=False).ids
                out.write(" ".join(map(str, ids)) + "\n")


if __name__ == "__main__":
    main()
