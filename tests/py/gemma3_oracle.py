#!/usr/bin/env python3
"""Independent NumPy forward pass of Gemma 3 (text), the correctness oracle for Kestrel.

Written from the model's definition (Hugging Face Gemma3ForCausalLM text path and the Gemma 3
technical report), not from Kestrel's C++ code. Weights come from the GGUF through gguf-py and
are dequantized with gguf.quants.dequantize; all arithmetic is float64, so results differ from
an exact evaluation of the quantized model only by float64 rounding. Logits are written as
float32.

  gemma3_oracle.py --gguf M.gguf --tokens-file IN.i32 --logits-out OUT.f32
                   [--positions all|last] [--generate N --generated-out GEN.i32]

IN.i32 holds raw little-endian int32 token ids (BOS included by the caller). OUT.f32 receives
raw little-endian float32 logits [n_positions, vocab] for every prompt position (or only the
last). --generate continues greedily (argmax, lowest id on ties) for exactly N tokens, without
stopping at EOS, and writes them as raw int32.
"""

import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_decoding  # noqa: E402
from oracle_decoding import KVCache  # noqa: E402
from oracle_gguf import describe, open_model  # noqa: E402
from oracle_vocab import decode, read_vocab  # noqa: E402

LM_HEAD_CHUNK = 32  # positions per LM-head matmul: [32, vocab] float64 is 64 MiB for 262k vocab


# ---------------------------------------------------------------------------------------------
# Building blocks. Shapes: n = tokens in this call, ctx = cached positions so far + n.

def rms_norm(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight, over the last axis (weight already includes +1)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rope_neox(x, positions, theta):
    """Rotates pairs (i, i + half) of each head by positions * theta^(-2i/head_dim).

    x: [n, heads, head_dim]; positions: [n] (float, already divided by any linear scale).
    """
    head_dim = x.shape[-1]
    half = head_dim // 2
    inv_freq = theta ** (-np.arange(half, dtype=np.float64) * 2.0 / head_dim)  # [half]
    angles = positions[:, None] * inv_freq[None, :]                            # [n, half]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]         # [n, 1, half]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def attention(q, k, v, q_pos, k_pos, window):
    """Causal (optionally sliding-window) grouped-query attention.

    q: [n, n_heads, hd] (already scaled); k: [ctx, n_kv, hd]; v: [ctx, n_kv, hd_v].
    Query head h reads kv head h // (n_heads / n_kv). A key is visible iff
    0 <= q_pos - k_pos, and q_pos - k_pos < window when window is set.
    Returns [n, n_heads, hd_v].
    """
    n_heads, n_kv = q.shape[1], k.shape[1]
    kv_of_head = np.arange(n_heads) // (n_heads // n_kv)
    k_h = k[:, kv_of_head, :].transpose(1, 2, 0)           # [n_heads, hd, ctx]
    v_h = v[:, kv_of_head, :].transpose(1, 0, 2)           # [n_heads, ctx, hd_v]
    scores = q.transpose(1, 0, 2) @ k_h                     # [n_heads, n, ctx]

    distance = q_pos[:, None] - k_pos[None, :]              # [n, ctx]
    hidden = distance < 0
    if window is not None:
        hidden |= distance >= window
    scores = np.where(hidden[None, :, :], -np.inf, scores)

    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    return (probs @ v_h).transpose(1, 0, 2)                 # [n, n_heads, hd_v]


# ---------------------------------------------------------------------------------------------
# The model.

def forward(cfg, w, cache, tokens, query_scale):
    """Runs `tokens` at positions cache.length.. and returns the final-normed hidden [n, d]."""
    n = len(tokens)
    positions, all_positions = cache.positions(n)          # [n], [ctx]
    eps = cfg.rms_eps

    h = w.embed[tokens] * math.sqrt(cfg.d_model)           # [n, d_model]
    for il, layer in enumerate(w.layers):
        sliding = cfg.is_sliding[il]
        if sliding:
            theta, rope_positions = cfg.rope_theta_local, positions
        else:
            theta, rope_positions = cfg.rope_theta_global, positions / cfg.global_position_divisor

        # Attention block: pre-norm, QKV, QK-norm, RoPE, attention, output, post-norm.
        a = rms_norm(h, layer.attn_norm, eps)                                  # [n, d_model]
        q = (a @ layer.wq.T).reshape(n, cfg.n_heads, cfg.head_dim)
        k = (a @ layer.wk.T).reshape(n, cfg.n_kv_heads, cfg.head_dim)
        v = (a @ layer.wv.T).reshape(n, cfg.n_kv_heads, cfg.head_dim_v)
        q = rope_neox(rms_norm(q, layer.q_norm, eps), rope_positions, theta) * query_scale
        k = rope_neox(rms_norm(k, layer.k_norm, eps), rope_positions, theta)
        keys, values = cache.append(il, k, v)
        o = attention(q, keys, values, positions, all_positions,
                      cfg.sliding_window if sliding else None)                # [n, heads, hd_v]
        attn = o.reshape(n, -1) @ layer.wo.T                                   # [n, d_model]
        h = h + rms_norm(attn, layer.post_attn_norm, eps)

        # Feed-forward block: pre-norm, GeGLU (tanh GELU), post-norm.
        f = rms_norm(h, layer.ffn_norm, eps)
        f = (gelu_tanh(f @ layer.w_gate.T) * (f @ layer.w_up.T)) @ layer.w_down.T
        h = h + rms_norm(f, layer.post_ffw_norm, eps)

    cache.length += n
    return rms_norm(h, w.output_norm, eps)


def lm_head(cfg, w, hidden):
    """hidden [n, d_model] -> logits [n, vocab] float64, through the tied embedding."""
    logits = hidden @ w.embed.T
    if cfg.final_logit_softcap > 0:
        logits = cfg.final_logit_softcap * np.tanh(logits / cfg.final_logit_softcap)
    return logits


# ---------------------------------------------------------------------------------------------
# Command line.

def main():
    ap = oracle_decoding.argument_parser(__doc__)
    ap.add_argument("--query-pre-attn-scalar", type=float, default=None,
                    help="queries are scaled by its -1/2 power; GGUF does not store it and "
                         "Gemma 3 uses head_dim except for the 27B model (default: key_length)")
    args = oracle_decoding.parse_args(ap)

    t_start = time.perf_counter()
    reader, cfg, w = open_model(args.gguf)
    tokens, max_len = oracle_decoding.read_prompt(args, cfg)
    query_scale = (args.query_pre_attn_scalar or cfg.head_dim) ** -0.5
    t_loaded = time.perf_counter()
    print(f"gemma3_oracle: {describe(cfg)}; float64; loaded in {t_loaded - t_start:.2f}s",
          file=sys.stderr)

    cache = KVCache(cfg, max_len)
    hidden = forward(cfg, w, cache, tokens, query_scale)                       # [n, d_model]
    t_prefill = time.perf_counter()

    rows = hidden if args.positions == "all" else hidden[-1:]
    with open(args.logits_out, "wb") as out:
        for s in range(0, len(rows), LM_HEAD_CHUNK):
            out.write(lm_head(cfg, w, rows[s:s + LM_HEAD_CHUNK]).astype("<f4").tobytes())
    t_logits = time.perf_counter()

    def next_logits(token):
        return lm_head(cfg, w, forward(cfg, w, cache, np.array([token]), query_scale))[0]

    generated, gaps = [], []
    if args.generate:
        generated, gaps = oracle_decoding.generate(args, lm_head(cfg, w, hidden[-1:])[0],
                                                   next_logits)
    t_end = time.perf_counter()

    oracle_decoding.report("gemma3_oracle", (t_start, t_loaded, t_prefill, t_logits, t_end),
                           len(tokens), len(rows), cfg.vocab_size, generated, gaps,
                           lambda ids: decode(read_vocab(reader)[0], ids))


if __name__ == "__main__":
    main()
