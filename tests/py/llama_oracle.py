#!/usr/bin/env python3
"""Independent NumPy forward pass of Llama-family models (GGUF `llama` and `qwen2`), the
correctness oracle for Kestrel's Llama path.

Written from the models' definitions (Hugging Face LlamaForCausalLM / Qwen2ForCausalLM) and
llama.cpp's GGUF conventions, not from Kestrel's C++ code. Weights come from the GGUF through
gguf-py (oracle_gguf.read_llama_*) and are dequantized once with gguf.quants.dequantize; all
arithmetic is float64, so results differ from an exact evaluation of the quantized model only by
float64 rounding. Logits are written as float32.

The model: token_embd; per layer RMSNorm (attn_norm), Q/K/V projections (+ biases when present,
as in qwen2), RoPE on Q and K, causal grouped-query attention scaled by 1/sqrt(head_dim),
attn_output, residual; RMSNorm (ffn_norm), SiLU-gated FFN (ffn_gate, ffn_up, ffn_down), residual;
output_norm; LM head output.weight, or token_embd when the file has no output.weight (tied).

RoPE layout, checked against llama.cpp (src/llama-model.cpp llama_model_rope_type, and
ggml/src/ggml-cpu/ops.cpp ggml_compute_forward_rope_flt / rotate_pairs):
  - `llama` is LLAMA_ROPE_TYPE_NORM: rotate_pairs(n_dims, 1, ...) rotates adjacent pairs
    (x[2i], x[2i+1]). convert_hf_to_gguf.py permutes a Llama's attn_q/attn_k rows so this equals
    HF's rotate_half on the unpermuted weights.
  - `qwen2` is LLAMA_ROPE_TYPE_NEOX: rotate_pairs(n_dims, n_dims/2, ...) rotates (x[i], x[i+n/2]).
  Both use theta_i = pos * base^(-2i/n_rot) for pair i (ggml: theta_scale = powf(freq_base,
  -2.0f/n_dims), theta *= theta_scale per pair); dims past n_rot are copied unchanged.
  Scaling: linear divides positions by rope.scaling.factor (ggml's freq_scale = 1/factor);
  Llama 3 frequency factors (tensor rope_freqs.weight) divide theta_i by ff[i] (ggml:
  rope_yarn(theta/ff, ...)). Other scaling types (yarn, longrope) raise an error.

  llama_oracle.py --gguf M.gguf --tokens-file IN.i32 --logits-out OUT.f32
                  [--positions all|last] [--generate N --generated-out GEN.i32]
                  [--generated-gaps-out GAPS.f32] [--rope-type auto|norm|neox]

IN.i32 holds raw little-endian int32 token ids (BOS included by the caller when wanted; Llama-
family GGUFs such as SmolLM2 set add_bos_token false). OUT.f32 receives raw little-endian float32
logits [n_positions, vocab] for every prompt position (or only the last). --generate continues
greedily (argmax, lowest id on ties) for exactly N tokens, without stopping at EOS, and writes
them as raw int32. --rope-type overrides the architecture's layout, only for ablations.
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_decoding  # noqa: E402
from oracle_decoding import KVCache  # noqa: E402
from oracle_gguf import describe_llama, open_llama_model  # noqa: E402
# The generic pieces are shared with the Gemma 3 oracle: RMSNorm (x / rms * weight) and causal
# GQA attention (query head h reads KV head h // (n_heads / n_kv)).
from gemma3_oracle import attention, rms_norm  # noqa: E402
# GPT-2's byte-to-unicode alphabet of byte-level BPE, kept in one place for writer and reader.
from make_tiny_llama import bytes_to_unicode  # noqa: E402

LM_HEAD_CHUNK = 64  # positions per LM-head matmul: [64, 49152] float64 is 24 MiB


# ---------------------------------------------------------------------------------------------
# Building blocks. Shapes: n = tokens in this call, ctx = cached positions so far + n.

def silu(x):
    return x / (1.0 + np.exp(-x))


def rope(x, positions, cfg, freq_factors, rope_type):
    """Rotates the first cfg.n_rot dims of each head; the rest pass through.

    x: [n, heads, head_dim]; positions: [n] float64. Pair i turns by
    positions / divisor * theta^(-2i/n_rot) / freq_factors[i].
    rope_type "norm": pairs (2i, 2i+1); "neox": pairs (i, i + n_rot/2).
    """
    n_rot = cfg.n_rot
    half = n_rot // 2
    inv_freq = cfg.rope_theta ** (-np.arange(half, dtype=np.float64) * 2.0 / n_rot)   # [half]
    if freq_factors is not None:
        inv_freq = inv_freq / freq_factors
    angles = (positions / cfg.rope_position_divisor)[:, None] * inv_freq[None, :]    # [n, half]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]                # [n, 1, half]
    out = x.copy()
    if rope_type == "norm":
        x0, x1 = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = x0 * cos - x1 * sin
        out[..., 1:n_rot:2] = x0 * sin + x1 * cos
    elif rope_type == "neox":
        x0, x1 = x[..., :half], x[..., half:n_rot]
        out[..., :half] = x0 * cos - x1 * sin
        out[..., half:n_rot] = x0 * sin + x1 * cos
    else:
        raise ValueError(f"unknown rope type '{rope_type}'")
    return out


def linear(x, weight, bias):
    y = x @ weight.T
    return y if bias is None else y + bias


# ---------------------------------------------------------------------------------------------
# The model.

def forward(cfg, w, cache, tokens, rope_type):
    """Runs `tokens` at positions cache.length.. and returns the final-normed hidden [n, d]."""
    n = len(tokens)
    positions, all_positions = cache.positions(n)          # [n], [ctx]
    eps, hd = cfg.rms_eps, cfg.head_dim
    query_scale = hd ** -0.5

    h = w.embed[tokens]                                    # [n, d_model]; no embedding scale
    for il, layer in enumerate(w.layers):
        a = rms_norm(h, layer.attn_norm, eps)
        q = linear(a, layer.wq, layer.bq).reshape(n, cfg.n_heads, hd)
        k = linear(a, layer.wk, layer.bk).reshape(n, cfg.n_kv_heads, hd)
        v = linear(a, layer.wv, layer.bv).reshape(n, cfg.n_kv_heads, hd)
        q = rope(q, positions, cfg, w.rope_freq_factors, rope_type) * query_scale
        k = rope(k, positions, cfg, w.rope_freq_factors, rope_type)
        keys, values = cache.append(il, k, v)
        o = attention(q, keys, values, positions, all_positions, None)
        h = h + linear(o.reshape(n, -1), layer.wo, layer.bo)

        f = rms_norm(h, layer.ffn_norm, eps)
        h = h + (silu(f @ layer.w_gate.T) * (f @ layer.w_up.T)) @ layer.w_down.T

    cache.length += n
    return rms_norm(h, w.output_norm, eps)


def lm_head(w, hidden):
    """hidden [n, d_model] -> logits [n, vocab] float64 (output.weight or the tied embedding)."""
    return hidden @ w.output.T


def log_softmax(logits):
    m = logits.max(axis=-1, keepdims=True)
    return logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Decoding for the log line (byte-level BPE: GPT-2's byte-to-unicode alphabet).

def decode(reader, ids):
    field = reader.fields.get("tokenizer.ggml.tokens")
    if field is None:
        return ""
    model = reader.fields.get("tokenizer.ggml.model")
    byte_level = model is not None and model.contents() == "gpt2"
    to_byte = {c: b for b, c in bytes_to_unicode().items()}
    out = bytearray()
    for i in ids:
        piece = bytes(field.parts[field.data[i]]).decode("utf-8")
        if byte_level and all(c in to_byte for c in piece):
            out += bytes(to_byte[c] for c in piece)
        else:  # control tokens, or a SentencePiece-style vocabulary
            out += piece.replace("\u2581", " ").encode("utf-8")
    return out.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Command line.

def main():
    ap = oracle_decoding.argument_parser(__doc__)
    ap.add_argument("--rope-type", choices=["auto", "norm", "neox"], default="auto",
                    help="RoPE pair layout; auto = llama.cpp's for the architecture (ablation only)")
    args = oracle_decoding.parse_args(ap)

    t_start = time.perf_counter()
    reader, cfg, w = open_llama_model(args.gguf)
    rope_type = cfg.rope_type if args.rope_type == "auto" else args.rope_type
    tokens, max_len = oracle_decoding.read_prompt(args, cfg)
    t_loaded = time.perf_counter()
    override = f" (rope overridden to {rope_type})" if rope_type != cfg.rope_type else ""
    print(f"llama_oracle: {describe_llama(cfg, w)}{override}; float64; "
          f"loaded in {t_loaded - t_start:.2f}s", file=sys.stderr)

    cache = KVCache(cfg, max_len)
    hidden = forward(cfg, w, cache, tokens, rope_type)                          # [n, d_model]
    t_prefill = time.perf_counter()

    rows = hidden if args.positions == "all" else hidden[-1:]
    nll, n_scored = 0.0, 0
    with open(args.logits_out, "wb") as out:
        for s in range(0, len(rows), LM_HEAD_CHUNK):
            logits = lm_head(w, rows[s:s + LM_HEAD_CHUNK])
            out.write(logits.astype("<f4").tobytes())
            if args.positions == "all":  # mean NLL of the prompt's own next tokens
                nxt = tokens[s + 1:s + 1 + len(logits)]
                if len(nxt):
                    lp = log_softmax(logits[:len(nxt)])
                    nll -= float(lp[np.arange(len(nxt)), nxt].sum())
                    n_scored += len(nxt)
    t_logits = time.perf_counter()

    def next_logits(token):
        return lm_head(w, forward(cfg, w, cache, np.array([token]), rope_type))[0]

    generated, gaps = [], []
    if args.generate:
        generated, gaps = oracle_decoding.generate(args, lm_head(w, hidden[-1:])[0], next_logits)
    t_end = time.perf_counter()

    notes = [f"prompt mean NLL {nll / n_scored:.4f} over {n_scored} next tokens "
             f"(perplexity {np.exp(nll / n_scored):.2f})"] if n_scored else []
    oracle_decoding.report("llama_oracle", (t_start, t_loaded, t_prefill, t_logits, t_end),
                           len(tokens), len(rows), cfg.vocab_size, generated, gaps,
                           lambda ids: decode(reader, ids), notes)


if __name__ == "__main__":
    main()
