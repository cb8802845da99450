#!/usr/bin/env python3
"""Records llama.cpp's token ids for the hostile corpus (tests/py/tokenizer_hostile_corpus.py)
into the fixture tests/model_tokenizer_hostile_test.cc compares Kestrel against in CI, where
llama-cpp-python cannot be built. Runs in .venv-bench (scripts/setup-bench.sh):

  .venv-bench/bin/python tests/py/record_tokenizer_hostile_fixture.py \\
      --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf --out tests/data/tokenizer_hostile_smollm2.jsonl
  .venv-bench/bin/python tests/py/record_tokenizer_hostile_fixture.py \\
      --gguf models/gemma-3-270m-q4_k_m.gguf --out tests/data/tokenizer_hostile_gemma3.jsonl

The fixture starts with '#' comment lines (llama.cpp version, GGUF, command), then one JSON
object per case and line: {"name", "text", "ids_special", "ids_plain"}: the ids with
special-token parsing on and off, no BOS. Runs are written once with a count, so the long-run
cases stay small: "text" is a list of segments, each a hex string of bytes or [hex, count] (the
bytes count times); in the id lists, [id, count] stands for id count times. Cases on which
llama.cpp's byte-level BPE aborts are left out for BPE vocabularies (the corpus marks them).
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_hostile_corpus  # noqa: E402


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_segments(data, min_run=16):
    """data as segments: literal hex, or [unit hex, count] for a unit of 1-4 bytes repeated."""
    out, literal, i = [], bytearray(), 0
    while i < len(data):
        best = (1, 1)  # (count, unit length)
        for unit in range(1, 5):
            piece = data[i:i + unit]
            if len(piece) < unit:
                break
            count = 1
            while data[i + count * unit:i + (count + 1) * unit] == piece:
                count += 1
            if count * unit >= min_run and count * unit > best[0] * best[1]:
                best = (count, unit)
        count, unit = best
        if count * unit >= min_run:
            if literal:
                out.append(literal.hex())
                literal = bytearray()
            out.append([data[i:i + unit].hex(), count])
            i += count * unit
        else:
            literal.append(data[i])
            i += 1
    if literal:
        out.append(literal.hex())
    return out


def id_runs(ids, min_run=4):
    out, i = [], 0
    while i < len(ids):
        j = i
        while j < len(ids) and ids[j] == ids[i]:
            j += 1
        out.extend([[ids[i], j - i]] if j - i >= min_run else ids[i:j])
        i = j
    return out


def expand(segments):
    return b"".join(bytes.fromhex(s) if isinstance(s, str) else bytes.fromhex(s[0]) * s[1]
                    for s in segments)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    import llama_cpp
    llm = llama_cpp.Llama(model_path=str(args.gguf), vocab_only=True, verbose=False)
    model = llm.metadata.get("tokenizer.ggml.model")
    bpe = model == "gpt2"
    lines = [
        f"# llama.cpp token ids (llama-cpp-python {llama_cpp.__version__}, "
        f"Llama(vocab_only=True).tokenize(text, add_bos=False, special=parse_special))",
        f"# GGUF: {args.gguf.name} (sha256 {sha256(args.gguf)}), tokenizer.ggml.model {model}, "
        f"pre {llm.metadata.get('tokenizer.ggml.pre', '-')}",
        "# corpus: tests/py/tokenizer_hostile_corpus.py; written by: .venv-bench/bin/python "
        f"tests/py/record_tokenizer_hostile_fixture.py --gguf models/{args.gguf.name} "
        f"--out {args.out.as_posix()}",
    ]
    n = 0
    for name, data, bpe_aborts in tokenizer_hostile_corpus.cases():
        if bpe and bpe_aborts:
            continue
        record = {"name": name, "text": text_segments(data)}
        assert expand(record["text"]) == data, name
        for key, special in (("ids_special", True), ("ids_plain", False)):
            record[key] = id_runs(llm.tokenize(data, add_bos=False, special=special))
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=True))
        n += 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {n} cases, {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
