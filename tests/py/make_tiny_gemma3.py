#!/usr/bin/env python3
"""Writes a tiny, random-weight, Gemma-3-shaped GGUF for tests that need a whole model quickly.

The file has every key and tensor name converters/arch/gemma3.cc reads, with the real model's
layout (GGUF ne = [in, out]) but tiny sizes: 6 layers (layer 5 global, the rest sliding-window
with a window of 8 so KV rings wrap in short tests), d_model 64, 4 query heads and 2 KV heads of
16, FFN 160, a 410-token SentencePiece-style vocabulary. Matrices use a mix of the GGML types
gguf-py can quantize, so every dequantizer the converter has for them is exercised; K-quants are
left out because their 256-value blocks do not divide rows of 64 or 160.

The same seed always gives the same bytes.

The options give the hyper-parameters by which the larger Gemma 3 files differ from 270M and 1B
(the logits test against llama.cpp, tests/convert_gemma3_sizes_test.cc): --linear-rope F writes
rope.scaling.type "linear" with factor F, which 4B, 12B and 27B have (8: their global layers
only), --freq-base-swa B the sliding layers' own RoPE base, --window N another window (1024 in
4B-27B, 512 in 1B), --context N, and --f32 every matrix F32.

usage: make_tiny_gemma3.py OUT.gguf [--seed N] [--f32] [--context N] [--window N]
                           [--linear-rope F] [--freq-base-swa B]
"""
import argparse

import numpy as np
from gguf import GGMLQuantizationType as Q

import tiny_gguf
# Globals of this module, not looked up in tiny_gguf: fuzz/make_seeds.py may replace them here.
from tiny_gguf import D_MODEL, FFN_DIM, HEAD_DIM, MATRIX_TYPES, N_HEADS, N_KV_HEADS, quantize

ARCH = "gemma3"
N_LAYERS = 6
CONTEXT = 256
WINDOW = 8
RMS_EPS = 1e-6
ROPE_BASE = 1e6

CONTROL = 3
NORMAL = 1
UNKNOWN = 2
BYTE = 6
SPACE = "\u2581"

# Normal pieces: lower-case letters, digits and punctuation, then common English bigrams and words (spaces as U+2581). Longer pieces
# score higher, so BPE merges prefer them, as in a real SentencePiece vocabulary. Upper-case
# letters and other characters are left out on purpose: they take the byte-token fallback.
NORMAL_PIECES = (
    [SPACE] + list("etaoinshrdlucmfwypvbgkjqxz") + list(".,!?'-:;0123456789") +
    ["th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of",
     "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io", "le",
     "ll", "lo", "el", "wo", "rl",
     SPACE + "t", SPACE + "a", SPACE + "s", SPACE + "w", SPACE + "o", SPACE + "i", SPACE + "h",
     SPACE + "th", SPACE + "the", SPACE + "and", SPACE + "of", SPACE + "to", SPACE + "in",
     SPACE + "is", SPACE + "it", SPACE + "he", SPACE + "wor", SPACE + "world", "hel", "hell",
     "hello", SPACE + "hello", "the", "ing", "ion", "ent", "her", "for", "tha", "ter", "ere",
     SPACE + "for", SPACE + "that", SPACE + "with", SPACE + "was", SPACE + "on", SPACE + "be",
     SPACE + "at", SPACE + "you", SPACE + "are", SPACE + "this", SPACE + "have", SPACE + "from",
     SPACE + "one", SPACE + "all", SPACE + "not", SPACE + "but", SPACE + "they", SPACE + "what",
     SPACE + "when", SPACE + "there", SPACE + "time", SPACE + "cat", SPACE + "dog", SPACE + "sat",
     SPACE + "mat", SPACE + "sun", SPACE + "day", SPACE + "good", SPACE + "long", SPACE + "text",
     "\n", SPACE + SPACE, "ly", "ment", "ness", "tion"])


def build_vocab():
    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<mask>"]
    types = [CONTROL, CONTROL, CONTROL, UNKNOWN, CONTROL, CONTROL, CONTROL]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    scores = [0.0] * len(pieces)
    for i, piece in enumerate(NORMAL_PIECES):
        pieces.append(piece)
        types.append(NORMAL)
        # Longer pieces first, then earlier ones; all distinct so merges have no ties by score.
        scores.append(-1000.0 + 10.0 * len(piece) - 0.01 * i)
    assert len(set(pieces)) == len(pieces), "duplicate pieces"
    return pieces, scores, types


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--f32", action="store_true", help="every matrix F32")
    parser.add_argument("--context", type=int, default=CONTEXT)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--linear-rope", type=float, default=0.0)
    parser.add_argument("--freq-base-swa", type=float, default=0.0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    w = tiny_gguf.new_writer(args.out, ARCH, "tiny-gemma3-random", N_LAYERS, D_MODEL, FFN_DIM,
                             N_HEADS, N_KV_HEADS, args.context, HEAD_DIM)
    w.add_uint32(f"{ARCH}.attention.sliding_window", args.window)
    w.add_float32(f"{ARCH}.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_float32(f"{ARCH}.rope.freq_base", ROPE_BASE)
    if args.freq_base_swa:
        w.add_float32(f"{ARCH}.rope.freq_base_swa", args.freq_base_swa)
    if args.linear_rope:
        w.add_string(f"{ARCH}.rope.scaling.type", "linear")
        w.add_float32(f"{ARCH}.rope.scaling.factor", args.linear_rope)

    pieces, scores, types = build_vocab()
    vocab_size = len(pieces)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_pad_token_id(0)
    w.add_eos_token_id(1)
    w.add_bos_token_id(2)
    w.add_unk_token_id(3)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)

    matrix, vector = tiny_gguf.random_tensors(rng)

    def norm(n):
        # The GGUF stores Gemma's norm weights with the +1 already applied.
        return vector(n, 1.0, 0.1)

    # token_embd: [vocab, d_model] rows; the tied LM head reads it too. Q8_0, as in the real model.
    emb, emb_type = quantize(matrix(vocab_size, D_MODEL, std=0.1), Q.F32 if args.f32 else Q.Q8_0)
    w.add_tensor("token_embd.weight", emb, raw_dtype=emb_type)
    w.add_tensor("output_norm.weight", norm(D_MODEL))

    q_dim, kv_dim = N_HEADS * HEAD_DIM, N_KV_HEADS * HEAD_DIM
    types = [Q.F32] if args.f32 else MATRIX_TYPES
    for layer in range(N_LAYERS):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", norm(D_MODEL))
        w.add_tensor(p + "attn_q_norm.weight", norm(HEAD_DIM))
        w.add_tensor(p + "attn_k_norm.weight", norm(HEAD_DIM))
        w.add_tensor(p + "post_attention_norm.weight", norm(D_MODEL))
        w.add_tensor(p + "ffn_norm.weight", norm(D_MODEL))
        w.add_tensor(p + "post_ffw_norm.weight", norm(D_MODEL))
        for name, out_features, in_features, qtype in tiny_gguf.layer_matrices(
                layer, D_MODEL, FFN_DIM, q_dim, kv_dim, types):
            data, raw = quantize(matrix(out_features, in_features), qtype)
            w.add_tensor(p + name + ".weight", data, raw_dtype=raw)

    tiny_gguf.write(w)


if __name__ == "__main__":
    main()
