#!/usr/bin/env python3
"""Greedy generation of Kestrel against llama.cpp on the same F32 weights (the end-to-end
acceptance check; llama-cpp-python is too slow to build for CI, so this runs by hand, in
.venv-bench from scripts/setup-bench.sh).

For each prompt both runtimes generate -n tokens greedily, past EOS:
  llama.cpp:  Llama(F32 GGUF, f32 KV cache), eval + argmax, detokenized;
  Kestrel:    kestrel run KES -p PROMPT -n N --temp 0 --ignore-eos --kv-type f32 (the .kes
              converted from the same F32 GGUF with --weights f32; an f32 cache as llama.cpp's
              here, not the default f16).
The texts must be identical.

  .venv-bench/bin/python tests/py/compare_greedy_llama_cpp.py --gguf F32.gguf --kes F32.kes
"""
import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n",
    "<|im_start|>user\nName three birds of prey.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    "Explain what a kestrel is in one sentence.<|im_end|>\n<|im_start|>assistant\n",
]
GGML_TYPE_F32 = 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", required=True, type=Path, help="the F32 GGUF llama.cpp runs")
    ap.add_argument("--kes", required=True, type=Path, help="its --weights f32 conversion")
    ap.add_argument("--kestrel", type=Path, default=REPO / "build" / "release" / "kestrel")
    ap.add_argument("-n", type=int, default=32)
    args = ap.parse_args()
    import llama_cpp
    import numpy as np
    llm = llama_cpp.Llama(model_path=str(args.gguf), n_ctx=512, n_threads=2, verbose=False,
                          type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, logits_all=False)
    differ = 0
    for prompt in PROMPTS:
        llm.reset()
        tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.eval(tokens)
        out = []
        for _ in range(args.n):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                           shape=(llm.n_vocab(),))
            out.append(int(np.argmax(logits)))
            llm.eval([out[-1]])
        want = llm.detokenize(out, special=False).decode(errors="replace")
        r = subprocess.run([str(args.kestrel), "run", str(args.kes), "-p", prompt, "-n",
                            str(args.n), "--temp", "0", "--ignore-eos", "--kv-type", "f32"],
                           capture_output=True, check=True)
        got = r.stdout.decode(errors="replace")[len(prompt):]
        got = got[:-1] if got.endswith("\n") else got  # the newline `kestrel run` ends with
        same = got == want
        differ += not same
        print(f"{'same' if same else 'DIFFERENT'}: {prompt[:40]!r}\n  llama.cpp: {want!r}\n"
              f"  kestrel:   {got!r}")
    print(f"{len(PROMPTS) - differ} of {len(PROMPTS)} prompts: {args.n} greedy tokens identical")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
