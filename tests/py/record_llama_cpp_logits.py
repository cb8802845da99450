#!/usr/bin/env python3
"""Records llama.cpp's logits on a tiny random model into the fixture a CI test compares Kestrel
against (CI cannot build llama.cpp, nor llama-cpp-python). Runs by hand, after
scripts/build-llama-cpp.sh (llama.cpp of the pinned llama-cpp-python sdist):

  .venv/bin/python tests/py/record_llama_cpp_logits.py \\
      --out tests/data/qwen3_tiny_llama_cpp_logits.bin \\
      --make-args "--arch qwen3 --f32 --head-dim 32 --merges 64 --context 512 --seed 2"

(Seed 2: llama.cpp's top two logits are at least 7.8e-4 apart at every position, so the top-token
check cannot hinge on a near-tie; seed 1 has one 1.3e-5 apart. The script prints the gap.)

tests/data/smollm3_tiny_llama_cpp_logits.bin (tests/convert_smollm3_test.cc; top-2 gap 6.7e-3):

  --make-args "--arch smollm3 --f32 --head-dim 32 --merges 64 --context 512 --layers 8 --seed 2"

tests/data/gemma2_tiny_llama_cpp_logits.bin (tests/convert_gemma2_test.cc; top-2 gap 4.3e-4):

  --maker make_tiny_gemma2.py --make-args "--seed 3 --final-softcap 2"

tests/data/phi3_tiny_llama_cpp_logits.bin, phi3_long_tiny_llama_cpp_logits.bin and
phi3_partial_tiny_llama_cpp_logits.bin (tests/convert_phi3_test.cc; top-2 gaps 8.2e-4, 3.9e-3
and 6.3e-4):

  --maker make_tiny_phi3.py --make-args "--seed 2"
  --maker make_tiny_phi3.py --make-args "--seed 2 --original-context 128"
  --maker make_tiny_phi3.py --make-args "--seed 2 --original-context 128 --rotary-dims 12"

tests/data/gemma3_4b_tiny_llama_cpp_logits.bin (tests/convert_gemma3_sizes_test.cc; top-2 gap
1.7e-3):

  --maker make_tiny_gemma3.py --make-args "--seed 2 --f32 --context 512 --window 32
      --linear-rope 8 --freq-base-swa 10000"

It writes the GGUF with tests/py/make_tiny_llama.py MAKE_ARGS, or with --maker's script (the
same arguments always give the same bytes), compiles tests/py/llama_cpp_logits.cc against
build/llama.cpp, runs it on a fixed text of plain English, digits, punctuation and ChatML control
tokens, and keeps the first --tokens positions. The fixture (little-endian) holds everything the
test needs to rebuild the GGUF and score the same tokens:

  char[8] "KESLGT1\\0"
  uint32 n, then n bytes, four times: the make_tiny_llama.py arguments, the text, the
         provenance (llama.cpp version, tool), the GGUF file name it was recorded from
  uint64 FNV-1a 64 of the GGUF's bytes (the test refuses a GGUF that differs)
  uint32 text_tokens (how many tokens llama.cpp made of the whole text), n_tokens, n_vocab
  int32  tokens[n_tokens], top[n_tokens] (llama.cpp's f32 argmax per position)
  per position: float lo, float step, uint16 q[n_vocab]: logit = lo + step * q (step =
         (max - min) / 65535: the rounding is at most step / 2, ~4e-5 here, far below what the
         KL divergence bound of 1e-5 can see)
"""
import argparse
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MAGIC = b"KESLGT1\0"


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def sample_text():
    """Plain English with capitals, digits, punctuation and newlines, inside a ChatML turn."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import make_tiny_llama  # noqa: E402
    words = make_tiny_llama.WORDS
    state, out = 12345, ["<|im_start|>user\n"]
    for i in range(90):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        word = words[(state >> 16) % 200]
        if i % 9 == 0:
            word = word.capitalize()
        if i % 23 == 7:
            word += f" {state % 1000}"
        out.append(word)
        out.append(".\n" if i % 13 == 12 else (", " if i % 5 == 4 else " "))
        if i == 40:
            out.append("<|im_end|>\n<|im_start|>assistant\n")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--make-args", required=True)
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--maker", default="make_tiny_llama.py",
                    help="the tests/py script that writes the GGUF (make_tiny_gemma2.py: Gemma 2)")
    ap.add_argument("--llama-cpp", type=Path, default=REPO / "build" / "llama.cpp")
    args = ap.parse_args()
    src, lib = args.llama_cpp / "src", args.llama_cpp / "build" / "bin"
    version = next(p.name[len("built-"):] for p in args.llama_cpp.glob("built-*"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        gguf_path, tool = tmp / "model.gguf", tmp / "llama_cpp_logits"
        subprocess.run([sys.executable, str(REPO / "tests/py" / args.maker), str(gguf_path)]
                       + args.make_args.split(), check=True)
        subprocess.run(["c++", "-std=c++17", "-O1", "-I", str(src / "include"),
                        "-I", str(src / "ggml/include"), str(REPO / "tests/py/llama_cpp_logits.cc"),
                        "-o", str(tool), "-L", str(lib), "-lllama", "-lggml", "-lggml-base",
                        f"-Wl,-rpath,{lib}"], check=True)
        text = sample_text()
        (tmp / "text.txt").write_bytes(text.encode())
        subprocess.run([str(tool), str(gguf_path), str(tmp / "text.txt"), str(tmp / "out.bin")],
                       check=True)
        raw = (tmp / "out.bin").read_bytes()
        gguf_bytes = gguf_path.read_bytes()
    n_all, vocab = struct.unpack_from("<II", raw)
    tokens = np.frombuffer(raw, "<i4", n_all, 8)
    logits = np.frombuffer(raw, "<f4", n_all * vocab, 8 + 4 * n_all).reshape(n_all, vocab)
    if n_all < args.tokens:
        sys.exit(f"the text is {n_all} tokens, fewer than --tokens {args.tokens}")
    n = args.tokens
    tokens, logits = tokens[:n], logits[:n].astype(np.float64)
    top = logits.argmax(axis=1).astype("<i4")
    sorted_rows = np.sort(logits, axis=1)
    gap = (sorted_rows[:, -1] - sorted_rows[:, -2]).min()
    lo = logits.min(axis=1).astype(np.float32)
    step = ((logits.max(axis=1) - lo) / 65535.0).astype(np.float32)
    q = np.clip(np.rint((logits - lo[:, None]) / step[:, None]), 0, 65535).astype("<u2")
    provenance = (f"llama.cpp of llama-cpp-python {version} (scripts/build-llama-cpp.sh), "
                  "tests/py/llama_cpp_logits.cc: CPU, f32 KV cache, no flash attention, one batch")

    def blob(s):
        b = s.encode()
        return struct.pack("<I", len(b)) + b
    out = bytearray(MAGIC)
    for s in (args.make_args, text, provenance, "model.gguf"):
        out += blob(s)
    out += struct.pack("<QIII", fnv1a64(gguf_bytes), n_all, n, vocab)
    out += tokens.astype("<i4").tobytes() + top.tobytes()
    for row in range(n):
        out += struct.pack("<ff", lo[row], step[row]) + q[row].tobytes()
    args.out.write_bytes(bytes(out))
    print(f"wrote {args.out}: {n} of {n_all} tokens, vocabulary {vocab}, {len(out)} bytes; "
          f"smallest top-2 logit gap {gap:.2e}, largest rounding step {step.max():.2e}")


if __name__ == "__main__":
    main()
