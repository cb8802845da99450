#!/usr/bin/env python3
"""Float64 NumPy embeddings of a decoder embedding model (Qwen3-Embedding and the like), the
oracle of Kestrel's `encode` plan for GGUF decoders with a pooling_type.

Written from Hugging Face's definitions, not from Kestrel's code: Qwen3Model (Qwen2Model without
Q/K/V biases, with RMSNorm of each query and key head before RoPE), run over each text alone,
then sentence-transformers' Pooling (lasttoken, mean or cls) and Normalize modules, as
Qwen3-Embedding's model card computes them (last_token_pool, then F.normalize). Attention is
causal unless the file says <arch>.attention.causal false. RoPE is NEOX (rotate_half), as
Qwen2/Qwen3 GGUFs keep it; llama and smollm3 files rotate adjacent pairs (their converter
permuted q and k). Weights come from the GGUF through gguf-py (oracle_gguf), dequantized once.

  decoder_embedding_oracle.py --gguf M.gguf --sequences IN.i32 --out OUT.f32

IN.i32: little-endian int32, for each text its length and then its ids. OUT.f32: little-endian
float32 [texts, d_model], each row unit length.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemma3_oracle import rms_norm  # noqa: E402  (x / rms * weight)
from oracle_gguf import _load, _meta, _tensor_map, open_reader  # noqa: E402

ADJACENT_ROPE_ARCHS = ("llama", "smollm3")
POOLING = {1: "mean", 2: "cls", 3: "last"}  # llama.cpp's enum llama_pooling_type


def rope(x, theta, adjacent):
    """x: [n, heads, head_dim] at positions 0..n-1; pair i turns by p * theta^(-2i/head_dim)."""
    n, _, head_dim = x.shape
    half = head_dim // 2
    inv_freq = theta ** (-np.arange(half, dtype=np.float64) * 2.0 / head_dim)
    angles = np.arange(n, dtype=np.float64)[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    out = x.copy()
    if adjacent:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out[..., 0::2], out[..., 1::2] = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    else:  # rotate_half
        x0, x1 = x[..., :half], x[..., half:]
        out[..., :half], out[..., half:] = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    return out


def attention(q, k, v, causal):
    """q: [n, heads, hd] (scaled); k, v: [n, kv_heads, hd]; query head h reads kv head
    h // (heads / kv_heads)."""
    n, heads, _ = q.shape
    kv_of_head = np.arange(heads) // (heads // k.shape[1])
    scores = q.transpose(1, 0, 2) @ k[:, kv_of_head, :].transpose(1, 2, 0)  # [heads, n, n]
    if causal:
        scores = np.where(np.triu(np.ones((n, n), dtype=bool), 1)[None], -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    return (probs @ v[:, kv_of_head, :].transpose(1, 0, 2)).transpose(1, 0, 2)


class Model:
    def __init__(self, path):
        reader = open_reader(path)
        a = _meta(reader, "general.architecture")
        self.pooling = POOLING[int(_meta(reader, f"{a}.pooling_type"))]
        self.causal = bool(_meta(reader, f"{a}.attention.causal", True))
        self.adjacent = a in ADJACENT_ROPE_ARCHS
        self.n_layers = int(_meta(reader, f"{a}.block_count"))
        d = self.d = int(_meta(reader, f"{a}.embedding_length"))
        self.heads = int(_meta(reader, f"{a}.attention.head_count"))
        self.kv_heads = int(_meta(reader, f"{a}.attention.head_count_kv", self.heads))
        self.head_dim = int(_meta(reader, f"{a}.attention.key_length", d // self.heads))
        self.eps = float(_meta(reader, f"{a}.attention.layer_norm_rms_epsilon"))
        self.theta = float(_meta(reader, f"{a}.rope.freq_base", 10000.0))
        ffn = int(_meta(reader, f"{a}.feed_forward_length"))
        t = _tensor_map(reader)
        vocab = int(t["token_embd.weight"].shape[1])
        q_dim, kv_dim, hd = self.heads * self.head_dim, self.kv_heads * self.head_dim, self.head_dim

        def optional(name, shape):
            return _load(t, name, shape) if name in t else None

        self.embed = _load(t, "token_embd.weight", (vocab, d))
        self.output_norm = _load(t, "output_norm.weight", (d,))
        self.layers = []
        for il in range(self.n_layers):
            p = f"blk.{il}."
            self.layers.append(dict(
                attn_norm=_load(t, p + "attn_norm.weight", (d,)),
                wq=_load(t, p + "attn_q.weight", (q_dim, d)),
                wk=_load(t, p + "attn_k.weight", (kv_dim, d)),
                wv=_load(t, p + "attn_v.weight", (kv_dim, d)),
                bq=optional(p + "attn_q.bias", (q_dim,)),
                bk=optional(p + "attn_k.bias", (kv_dim,)),
                bv=optional(p + "attn_v.bias", (kv_dim,)),
                q_norm=optional(p + "attn_q_norm.weight", (hd,)),
                k_norm=optional(p + "attn_k_norm.weight", (hd,)),
                wo=_load(t, p + "attn_output.weight", (d, q_dim)),
                ffn_norm=_load(t, p + "ffn_norm.weight", (d,)),
                gate=_load(t, p + "ffn_gate.weight", (ffn, d)),
                up=_load(t, p + "ffn_up.weight", (ffn, d)),
                down=_load(t, p + "ffn_down.weight", (d, ffn)),
            ))

    def embed_text(self, ids):
        n, hd = len(ids), self.head_dim
        h = self.embed[ids]
        for layer in self.layers:
            a = rms_norm(h, layer["attn_norm"], self.eps)

            def project(w, b, heads):
                y = a @ w.T
                return (y if b is None else y + b).reshape(n, heads, hd)
            q = project(layer["wq"], layer["bq"], self.heads)
            k = project(layer["wk"], layer["bk"], self.kv_heads)
            v = project(layer["wv"], layer["bv"], self.kv_heads)
            if layer["q_norm"] is not None:
                q = rms_norm(q, layer["q_norm"], self.eps)
                k = rms_norm(k, layer["k_norm"], self.eps)
            q = rope(q, self.theta, self.adjacent) * hd ** -0.5
            k = rope(k, self.theta, self.adjacent)
            h = h + attention(q, k, v, self.causal).reshape(n, -1) @ layer["wo"].T
            f = rms_norm(h, layer["ffn_norm"], self.eps)
            gate = f @ layer["gate"].T
            h = h + (gate / (1.0 + np.exp(-gate)) * (f @ layer["up"].T)) @ layer["down"].T
        h = rms_norm(h, self.output_norm, self.eps)
        pooled = {"last": h[-1], "cls": h[0], "mean": h.mean(axis=0)}[self.pooling]
        return pooled / max(np.linalg.norm(pooled), 1e-12)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--sequences", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    model = Model(args.gguf)
    flat = np.fromfile(args.sequences, dtype="<i4")
    rows, i = [], 0
    while i < len(flat):
        n = int(flat[i])
        rows.append(model.embed_text(flat[i + 1:i + 1 + n]))
        i += 1 + n
    np.asarray(rows, dtype="<f4").tofile(args.out)


if __name__ == "__main__":
    main()
