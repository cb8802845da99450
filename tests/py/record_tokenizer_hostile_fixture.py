#!/usr/bin/env python3
"""Records llama.cpp's token ids for the hostile corpus (tests/py/tokenizer_hostile_corpus.py)
into the fixture tests/model_tokenizer_hostile_test.cc compares Kestrel against in CI, where
llama-cpp-python cannot be built. Runs in .venv-bench (scripts/setup-bench.sh):

  .venv-bench/bin/python tests/py/record_tokenizer_hostile_fixture.py \\
      --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf --out tests/data/tokenizer_hostile_smollm2.jsonl
  .venv-bench/bin/python tests/py/record_tokenizer_hostile_fixture.py \\
      --gguf models/gemma-3-270m-q4_k_m.gguf --out tests/data/tokenizer_hostile_gemma3.jsonl

With --tool, llama.cpp itself answers instead of llama-cpp-python: tests/py/llama_cpp_logits.cc
(its --tokenize mode) compiled against a llama.cpp build (scripts/build-llama-cpp.sh), in the
project's .venv. The real Qwen vocabulary (tests/py/qwen_vocab_gguf.py), both corpora:

  c++ -std=c++17 -O1 -I build/llama.cpp/src/include -I build/llama.cpp/src/ggml/include \\
      tests/py/llama_cpp_logits.cc -o /tmp/llama_cpp_logits -L build/llama.cpp/build/bin \\
      -lllama -lggml -lggml-base -Wl,-rpath,$PWD/build/llama.cpp/build/bin
  .venv/bin/python tests/py/qwen_vocab_gguf.py --tiktoken models/qwen-vocabulary/qwen.tiktoken \\
      --out /tmp/qwen-vocabulary.gguf
  .venv/bin/python tests/py/record_tokenizer_hostile_fixture.py --gguf /tmp/qwen-vocabulary.gguf \\
      --tool /tmp/llama_cpp_logits --corpus hostile,mixed --out tests/data/tokenizer_qwen.jsonl

--corpus mixed adds the mixed text of tests/py/tokenizer_corpus.py (cases named mixed-N).

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
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_corpus  # noqa: E402
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


def tool_tokenize(tool, gguf_path, texts):
    """llama_cpp_logits --tokenize's ids for each text, special parsing on then off:
    [(on, off), ...]."""
    with tempfile.TemporaryDirectory() as tmp:
        cases, out = Path(tmp) / "cases.bin", Path(tmp) / "ids.txt"
        with open(cases, "wb") as f:
            for data in texts:
                for special in (1, 0):
                    f.write(f"{special} {len(data)}\n".encode() + data + b"\n")
        subprocess.run([str(tool), "--tokenize", str(gguf_path), str(cases), str(out)], check=True)
        lines = out.read_text().split("\n")[:2 * len(texts)]
    ids = [[int(x) for x in line.split()] for line in lines]
    return list(zip(ids[0::2], ids[1::2]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--tool", type=Path, help="a compiled tests/py/llama_cpp_logits.cc")
    ap.add_argument("--corpus", default="hostile", help="hostile, mixed or both (hostile,mixed)")
    args = ap.parse_args()
    reader_metadata = {}
    if args.tool:
        import gguf
        reader = gguf.GGUFReader(args.gguf)
        for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
            reader_metadata[key] = reader.fields[key].contents() if key in reader.fields else "-"
        built = sorted(p.name[len("built-"):] for p in (REPO / "build/llama.cpp").glob("built-*"))
        how = (f"# llama.cpp token ids (tests/py/llama_cpp_logits.cc --tokenize against "
               f"build/llama.cpp, {', '.join(built) or 'version unknown'}: vocab_only, llama_tokenize(text, "
               f"add_special=false, parse_special))")
    else:
        import llama_cpp
        llm = llama_cpp.Llama(model_path=str(args.gguf), vocab_only=True, verbose=False)
        reader_metadata = llm.metadata
        how = (f"# llama.cpp token ids (llama-cpp-python {llama_cpp.__version__}, "
               f"Llama(vocab_only=True).tokenize(text, add_bos=False, special=parse_special))")
    model = reader_metadata.get("tokenizer.ggml.model")
    bpe = model == "gpt2"
    corpora = args.corpus.split(",")
    lines = [
        how,
        f"# GGUF: {args.gguf.name} (sha256 {sha256(args.gguf)}), tokenizer.ggml.model {model}, "
        f"pre {reader_metadata.get('tokenizer.ggml.pre', '-')}",
        f"# corpus: {args.corpus} (tests/py/tokenizer_hostile_corpus.py, tokenizer_corpus.py); "
        f"written by: tests/py/record_tokenizer_hostile_fixture.py --gguf {args.gguf.name} "
        f"--corpus {args.corpus}{' --tool' if args.tool else ''} --out {args.out.as_posix()}",
    ]
    named = []
    if "hostile" in corpora:
        named += [(name, data) for name, data, bpe_aborts in tokenizer_hostile_corpus.cases()
                  if not (bpe and bpe_aborts)]
    if "mixed" in corpora:
        named += [(f"mixed-{i}", text.encode()) for i, text in enumerate(tokenizer_corpus.cases())]
    if args.tool:
        answers = tool_tokenize(args.tool, args.gguf, [data for _, data in named])
    else:
        answers = [(llm.tokenize(data, add_bos=False, special=True),
                    llm.tokenize(data, add_bos=False, special=False)) for _, data in named]
    n = 0
    for (name, data), (ids_special, ids_plain) in zip(named, answers):
        record = {"name": name, "text": text_segments(data)}
        assert expand(record["text"]) == data, name
        record["ids_special"], record["ids_plain"] = id_runs(ids_special), id_runs(ids_plain)
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=True))
        n += 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {n} cases, {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
