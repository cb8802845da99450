#!/usr/bin/env python3
"""Writes a tiny, random-weight Gemma 2 GGUF (architecture `gemma2`) for the logits test against
llama.cpp (tests/convert_gemma2_test.cc).

The keys and tensor names are those llama.cpp reads for gemma2 (src/models/gemma2.cpp): no
QK-norm, RMSNorms after attention (post_attention_norm) and after the FFN (post_ffw_norm), tied
LM head, one RoPE base, sliding-window layers alternating with global ones (llama.cpp's pattern
2: even layers slide), and both soft-caps. Sizes: 4 layers, d_model 64, 4 query heads and 2 KV
heads of 16, FFN 160, every matrix F32; the byte-level BPE vocabulary of make_tiny_llama.py
(its qwen2 layout: control tokens last).

The released models cap the attention scores at 50 and the logits at 30, values these tiny
random weights never reach; the file asks for caps of 4 and 2 instead and the q/k and
embedding weights are wide enough that scores and logits often pass them, so a runtime that
skips a cap or applies it in the wrong place gives different logits.

usage: make_tiny_gemma2.py OUT.gguf [--seed N] [--window N] [--context N] [--merges N]
                           [--attn-softcap C] [--final-softcap C]
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_tiny_llama as tiny  # noqa: E402
import tiny_gguf  # noqa: E402
from tiny_gguf import D_MODEL, FFN_DIM, HEAD_DIM, N_HEADS, N_KV_HEADS  # noqa: E402

ARCH = "gemma2"
N_LAYERS = 4
RMS_EPS = 1e-6
ROPE_BASE = 10000.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--merges", type=int, default=64)
    parser.add_argument("--attn-softcap", type=float, default=4.0)
    parser.add_argument("--final-softcap", type=float, default=2.0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    w = tiny_gguf.new_writer(args.out, ARCH, "tiny-gemma2-random", N_LAYERS, D_MODEL, FFN_DIM,
                             N_HEADS, N_KV_HEADS, args.context, HEAD_DIM)
    w.add_float32(f"{ARCH}.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_float32(f"{ARCH}.rope.freq_base", ROPE_BASE)
    w.add_uint32(f"{ARCH}.rope.dimension_count", HEAD_DIM)
    w.add_uint32(f"{ARCH}.attention.sliding_window", args.window)
    w.add_float32(f"{ARCH}.attn_logit_softcapping", args.attn_softcap)
    w.add_float32(f"{ARCH}.final_logit_softcapping", args.final_softcap)

    vocab_size = tiny.add_qwen2_bpe_tokenizer(w, ARCH, args.merges)

    matrix, vector = tiny_gguf.random_tensors(rng)

    w.add_tensor("token_embd.weight", matrix(vocab_size, D_MODEL, 0.2))  # also the LM head
    w.add_tensor("output_norm.weight", vector(D_MODEL, 1.0, 0.1))
    q_dim, kv_dim = N_HEADS * HEAD_DIM, N_KV_HEADS * HEAD_DIM
    for layer in range(N_LAYERS):
        p = f"blk.{layer}."
        for norm in ["attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"]:
            w.add_tensor(p + norm + ".weight", vector(D_MODEL, 1.0, 0.1))
        # Wide q and k: scaled scores of standard deviation about 5 against a cap of 4.
        w.add_tensor(p + "attn_q.weight", matrix(q_dim, D_MODEL, 0.3))
        w.add_tensor(p + "attn_k.weight", matrix(kv_dim, D_MODEL, 0.3))
        w.add_tensor(p + "attn_v.weight", matrix(kv_dim, D_MODEL, 0.08))
        w.add_tensor(p + "attn_output.weight", matrix(D_MODEL, q_dim, 0.08))
        w.add_tensor(p + "ffn_gate.weight", matrix(FFN_DIM, D_MODEL, 0.08))
        w.add_tensor(p + "ffn_up.weight", matrix(FFN_DIM, D_MODEL, 0.08))
        w.add_tensor(p + "ffn_down.weight", matrix(D_MODEL, FFN_DIM, 0.08))

    tiny_gguf.write(w)


if __name__ == "__main__":
    main()
