#!/usr/bin/env python3
"""Kestrel's tokenizer against llama.cpp's on the same GGUF vocabulary (the acceptance check of
the tokenizers; llama-cpp-python is too slow to build for CI, so this runs by hand, in
.venv-bench from scripts/setup-bench.sh).

For every case of tests/py/tokenizer_corpus.py (over 20,000 characters of mixed text; with
--corpus hostile, the bytes of tests/py/tokenizer_hostile_corpus.py: control characters, invalid
UTF-8, surrogates, NUL, long runs), with and without parsing special-token strings, it compares
  llama.cpp:  Llama(GGUF, vocab_only=True).tokenize(text, add_bos=False, special=...)
  Kestrel:    kestrel tokenize KES --ids --no-bos [--no-parse-special] -f CASE
and prints the counts and the first differences.

  .venv-bench/bin/python tests/py/compare_tokenizer_llama_cpp.py --gguf M.gguf --kes M.kes \
      [--corpus hostile]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402
import tokenizer_hostile_corpus  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def kestrel_ids(kestrel, kes, data, parse_special):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        cmd = [str(kestrel), "tokenize", str(kes), "--ids", "--no-bos", "-f", path]
        if not parse_special:
            cmd.append("--no-parse-special")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    finally:
        os.unlink(path)
    return [int(x) for x in out.strip("[]").split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True, type=Path)
    ap.add_argument("--kes", required=True, type=Path)
    ap.add_argument("--kestrel", type=Path, default=REPO / "build" / "release" / "kestrel")
    ap.add_argument("--corpus", choices=("mixed", "hostile"), default="mixed")
    args = ap.parse_args()
    import llama_cpp
    llm = llama_cpp.Llama(model_path=str(args.gguf), vocab_only=True, verbose=False)
    if args.corpus == "mixed":
        cases = [text.encode() for text in tokenizer_corpus.cases()]
    else:
        bpe = llm.metadata.get("tokenizer.ggml.model") == "gpt2"
        cases = [data for _, data, bpe_aborts in tokenizer_hostile_corpus.cases()
                 if not (bpe and bpe_aborts)]
    chars = tokens = mismatches = 0
    for i, data in enumerate(cases):
        text = data.decode(errors="backslashreplace")
        for special in (True, False):
            want = llm.tokenize(data, add_bos=False, special=special)
            got = kestrel_ids(args.kestrel, args.kes, data, special)
            chars += len(data)
            tokens += len(want)
            if got != want:
                mismatches += 1
                k = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b),
                         min(len(got), len(want)))
                print(f"case {i} special={special}: differs at token {k}: "
                      f"kestrel {got[max(0, k - 2):k + 4]} llama.cpp {want[max(0, k - 2):k + 4]}; "
                      f"text {text[:80]!r}")
    print(f"{args.gguf.name}: {len(cases)} cases x 2 (special on/off), {chars} bytes, "
          f"{tokens} llama.cpp tokens, {mismatches} cases differ ({args.corpus} corpus)")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
