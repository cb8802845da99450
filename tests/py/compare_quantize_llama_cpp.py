#!/usr/bin/env python3
"""By hand (needs llama.cpp's llama-quantize, which CI does not build): kestrel-convert's
--weights q4_k_m | q4_k | q5_k | q6_k against llama.cpp's own quantizer on the same F32 GGUF.

For each choice, llama-quantize writes its GGUF (Q4_K_M; --pure Q4_K_S, Q5_K_S, Q6_K for the
single types), kestrel-convert converts that file with --weights keep (every tensor moved, bit
for bit) and the F32 source with the choice; both inputs are given the same file name, so when
every tensor has the same type and the same blocks the two .kes files are byte-identical. The
per-tensor types of llama.cpp's file are printed (from gguf-py) as a table by type.

usage: compare_quantize_llama_cpp.py F32.gguf --llama-quantize PATH
           [--kestrel-convert build/release/kestrel-convert] [--weights q4_k_m,q4_k,q5_k,q6_k]
"""
import argparse
import collections
import filecmp
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

LLAMA_ARGS = {"q4_k_m": ["Q4_K_M"], "q4_k": ["--pure", "Q4_K_S"],
              "q5_k": ["--pure", "Q5_K_S"], "q6_k": ["--pure", "Q6_K"]}


def run(args):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{result.stdout}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--llama-quantize", required=True)
    parser.add_argument("--kestrel-convert",
                        default=os.path.join(root, "build", "release", "kestrel-convert"))
    parser.add_argument("--weights", default="q4_k_m,q4_k,q5_k,q6_k")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for choice in args.weights.split(","):
            ours_dir, theirs_dir = os.path.join(tmp, "ours"), os.path.join(tmp, "llama")
            for d in (ours_dir, theirs_dir):
                os.makedirs(d, exist_ok=True)
            ours_in, theirs_in = (os.path.join(d, "model.gguf") for d in (ours_dir, theirs_dir))
            if os.path.lexists(ours_in):
                os.remove(ours_in)
            os.symlink(os.path.abspath(args.source), ours_in)
            run([args.llama_quantize] + LLAMA_ARGS[choice][:-1] +
                [args.source, theirs_in, LLAMA_ARGS[choice][-1]])
            ours_kes, theirs_kes = (os.path.join(d, "model.kes") for d in (ours_dir, theirs_dir))
            run([args.kestrel_convert, ours_in, ours_kes, "--weights", choice])
            run([args.kestrel_convert, theirs_in, theirs_kes, "--weights", "keep"])
            types = collections.Counter(t.tensor_type.name for t in GGUFReader(theirs_in).tensors)
            same = filecmp.cmp(ours_kes, theirs_kes, shallow=False)
            failed |= not same
            print(f"{choice}: llama.cpp's tensors {dict(sorted(types.items()))}; .kes files "
                  f"{'byte-identical' if same else 'DIFFER'}")
            os.remove(theirs_in)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
