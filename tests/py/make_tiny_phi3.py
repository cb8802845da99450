#!/usr/bin/env python3
"""Writes a tiny, random-weight Phi-3 GGUF (architecture `phi3`) for the logits test against
llama.cpp (tests/convert_phi3_test.cc).

The keys and tensor names are those llama.cpp reads for phi3 (src/models/phi3.cpp) and
convert_hf_to_gguf.py writes (conversion/phi.py): the fused blk.N.attn_qkv ([q; k; v] rows) and
blk.N.ffn_up ([gate; up] rows, no ffn_gate), a separate output.weight, NEOX RoPE, no biases.
Sizes: 4 layers, d_model 64, 4 query heads and 2 KV heads of 16 (so the three parts of attn_qkv
differ in size), FFN 160, every matrix F32; the byte-level BPE vocabulary of make_tiny_llama.py
(its qwen2 layout), as the tokenizer is not what this file tests.

With --original-context N the file is a LongRoPE (128k) model: rope_factors_short.weight and
rope_factors_long.weight ([head_dim / 2] divisors: short ones near 1, long ones growing to 8 as
the 128k models' do), rope.scaling.original_context_length N and rope.scaling.attn_factor (the
square root convert_hf_to_gguf.py writes for a context of 32 x the original: about 1.19 with
N 4096; here --attn-factor, default 1.3 so that it shows in tiny models' scores). llama.cpp uses
the long factors when its context is longer than N. A sliding_window key is written too, as
Phi-3-mini's file has one; llama.cpp ignores it for phi3.

With --rotary-dims N (even, below 16) only each head's first N elements turn (partial rotary,
as Phi-4-mini turns 96 of 128): rope.dimension_count N, and LongRoPE factors N / 2 long.

--phi3-name names the model "Phi-3-mini-4k-instruct" and adds Phi-3's special tokens (<s>, </s>,
<unk>, <|system|>, <|user|>, <|assistant|>, <|end|>) to the vocabulary: llama.cpp gives the
special tokens of a model so named an rstrip attribute (whitespace after them is dropped; not
after <s>, <unk> and <|endoftext|>), which tests/convert_phi3_test.cc checks Kestrel's tokenizer
against.

--q8 stores every matrix as Q8_0 (rows of 64 and 160 are whole blocks), and --split-qkv writes
separate attn_q, attn_k and attn_v (which llama.cpp's phi3 also reads) holding the very rows
attn_qkv would hold: the same model, so a converter that splits attn_qkv must give the same
.kes from both.

usage: make_tiny_phi3.py OUT.gguf [--seed N] [--context N] [--merges N]
                         [--original-context N] [--attn-factor F] [--rotary-dims N] [--q8]
                         [--split-qkv] [--phi3-name]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_tiny_llama as tiny  # noqa: E402
import tiny_gguf  # noqa: E402
from tiny_gguf import D_MODEL, FFN_DIM, HEAD_DIM, N_HEADS, N_KV_HEADS  # noqa: E402

ARCH = "phi3"
N_LAYERS = 4
RMS_EPS = 1e-5
ROPE_BASE = 10000.0
SLIDING_WINDOW = 32


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--merges", type=int, default=64)
    parser.add_argument("--original-context", type=int, default=0)
    parser.add_argument("--attn-factor", type=float, default=1.3)
    parser.add_argument("--rotary-dims", type=int, default=HEAD_DIM)
    parser.add_argument("--q8", action="store_true", help="every matrix Q8_0")
    parser.add_argument("--split-qkv", action="store_true", help="attn_q/k/v, not attn_qkv")
    parser.add_argument("--phi3-name", action="store_true",
                        help="general.name Phi-3-mini-4k-instruct, with Phi-3's special tokens")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    # Not "phi3" or "phi-3" unless asked: llama.cpp gives the special tokens of a model so named
    # an rstrip attribute (and looks up <s>, </s> and <unk>, which only --phi3-name adds).
    name = "Phi-3-mini-4k-instruct" if args.phi3_name else "tiny-random-phi"
    w = tiny_gguf.new_writer(args.out, ARCH, name, N_LAYERS, D_MODEL, FFN_DIM, N_HEADS,
                             N_KV_HEADS, args.context)
    w.add_float32(f"{ARCH}.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_float32(f"{ARCH}.rope.freq_base", ROPE_BASE)
    w.add_uint32(f"{ARCH}.rope.dimension_count", args.rotary_dims)
    w.add_uint32(f"{ARCH}.attention.sliding_window", SLIDING_WINDOW)
    if args.original_context:
        w.add_uint32(f"{ARCH}.rope.scaling.original_context_length", args.original_context)
        w.add_float32(f"{ARCH}.rope.scaling.attn_factor", args.attn_factor)

    phi3_tokens = ["<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    vocab_size = tiny.add_qwen2_bpe_tokenizer(w, ARCH, args.merges,
                                              phi3_tokens if args.phi3_name else (),
                                              "<unk>" if args.phi3_name else None)

    matrix, vector = tiny_gguf.random_tensors(rng)

    def add_matrix(name, values):
        if args.q8:
            w.add_tensor(name, gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, values)

    w.add_tensor("token_embd.weight", matrix(vocab_size, D_MODEL, 0.2))
    w.add_tensor("output_norm.weight", vector(D_MODEL, 1.0, 0.1))
    add_matrix("output.weight", matrix(vocab_size, D_MODEL, 0.2))
    if args.original_context:
        pairs = args.rotary_dims // 2
        short = 1.0 + 0.2 * rng.random(pairs)
        long = np.geomspace(1.0, 8.0, pairs) * (1.0 + 0.1 * rng.random(pairs))
        w.add_tensor("rope_factors_short.weight", short.astype(np.float32))
        w.add_tensor("rope_factors_long.weight", long.astype(np.float32))
    q_dim, kv_dim = N_HEADS * HEAD_DIM, N_KV_HEADS * HEAD_DIM
    for layer in range(N_LAYERS):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", vector(D_MODEL, 1.0, 0.1))
        w.add_tensor(p + "ffn_norm.weight", vector(D_MODEL, 1.0, 0.1))
        # Wide q and k: sharp attention, so that positions (RoPE) change the logits.
        qkv = np.concatenate([matrix(q_dim, D_MODEL, 0.3), matrix(kv_dim, D_MODEL, 0.3),
                              matrix(kv_dim, D_MODEL, 0.08)])
        if args.split_qkv:
            add_matrix(p + "attn_q.weight", qkv[:q_dim])
            add_matrix(p + "attn_k.weight", qkv[q_dim:q_dim + kv_dim])
            add_matrix(p + "attn_v.weight", qkv[q_dim + kv_dim:])
        else:
            add_matrix(p + "attn_qkv.weight", qkv)
        add_matrix(p + "attn_output.weight", matrix(D_MODEL, q_dim, 0.08))
        add_matrix(p + "ffn_up.weight", matrix(2 * FFN_DIM, D_MODEL, 0.08))
        add_matrix(p + "ffn_down.weight", matrix(D_MODEL, FFN_DIM, 0.08))

    tiny_gguf.write(w)


if __name__ == "__main__":
    main()
