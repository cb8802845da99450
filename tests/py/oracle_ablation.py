#!/usr/bin/env python3
"""Checks the oracle's modelling choices against the weights themselves.

A trained model predicts ordinary English well only when its forward pass is the one it was
trained with. This script measures the oracle's mean next-token loss (nats) on a fixed English
paragraph, then again with one modelling choice changed at a time (RoPE pairing, RoPE thetas,
query scale, which layers are global, window size, activation). The unmodified oracle should
have the lowest loss of all. It needs no other implementation, so it stays independent of
Kestrel's C++ code. Takes a few minutes on two cores.

  oracle_ablation.py --gguf M.gguf
"""

import argparse
import copy
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma3_oracle as oracle  # noqa: E402
from oracle_gguf import open_model  # noqa: E402
from oracle_vocab import read_vocab  # noqa: E402

PARAGRAPH = (
    "The river runs through the middle of the old town, and most of the houses on its banks "
    "were built by merchants who grew rich on the wool trade. In the spring, when the snow "
    "melts in the mountains, the water rises quickly and sometimes floods the lower streets. "
    "For this reason the ground floors of many buildings are used as storerooms rather than "
    "as living space. Visitors often arrive by train from the capital, which takes a little "
    "more than two hours, and spend the afternoon walking along the river before having "
    "dinner in one of the small restaurants near the main square. The town hall, a large "
    "stone building with a clock tower, was finished in the sixteenth century and still "
    "houses the local government. Every year in September there is a market where farmers "
    "from the surrounding villages sell cheese, honey, apples and bread. Children are given "
    "the day off school, and in the evening there is music and dancing in the square until "
    "late at night. Although the town has grown in recent decades, its centre has changed "
    "very little, and people who left it as children say that it looks almost exactly the "
    "same when they come back to visit their families."
)


def tokenize_by_scores(text, pieces, scores):
    """SentencePiece-style BPE from the GGUF scores: merge the best-scoring adjacent pair.

    Good enough to give the model natural token sequences; not a reference tokenizer.
    """
    index = {p: i for i, p in enumerate(pieces)}
    symbols = list(text.replace(" ", "\u2581"))
    while True:
        best_score, best_at = None, -1
        for j in range(len(symbols) - 1):
            i = index.get(symbols[j] + symbols[j + 1])
            if i is not None and (best_score is None or scores[i] > best_score):
                best_score, best_at = scores[i], j
        if best_at < 0:
            return [index[s] for s in symbols]
        symbols[best_at:best_at + 2] = [symbols[best_at] + symbols[best_at + 1]]


def mean_loss(cfg, w, tokens, query_scale):
    """Mean cross-entropy (nats) of predicting tokens[1:] from their prefixes."""
    hidden = oracle.forward(cfg, w, oracle.KVCache(cfg, len(tokens)), tokens, query_scale)
    logits = oracle.lm_head(cfg, w, hidden[:-1])                        # [n-1, vocab]
    logits -= logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits).sum(axis=-1))
    return float(np.mean(log_z - logits[np.arange(len(logits)), tokens[1:]]))


def rope_interleaved(x, positions, theta):
    """GPT-J style RoPE: rotates pairs (2i, 2i+1) instead of (i, i + half)."""
    head_dim = x.shape[-1]
    inv_freq = theta ** (-np.arange(head_dim // 2, dtype=np.float64) * 2.0 / head_dim)
    angles = positions[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 1::2] * cos + x[..., 0::2] * sin
    return out


def variants(cfg):
    """Yields (name, config, query scale, patches); patches replace oracle module functions."""
    def changed(**fields):
        c = copy.copy(cfg)
        for k, v in fields.items():
            setattr(c, k, v)
        return c

    scale = cfg.head_dim ** -0.5
    yield "oracle as written", cfg, scale, {}
    yield "RoPE pairs (2i, 2i+1)", cfg, scale, {"rope_neox": rope_interleaved}
    yield "RoPE thetas swapped", changed(rope_theta_local=cfg.rope_theta_global,
                                         rope_theta_global=cfg.rope_theta_local), scale, {}
    yield "query scale 1/sqrt(d/heads)", cfg, (cfg.d_model / cfg.n_heads) ** -0.5, {}
    yield "global layers shifted by 1", changed(
        is_sliding=cfg.is_sliding[1:] + cfg.is_sliding[:1]), scale, {}
    yield "all layers global", changed(is_sliding=[False] * cfg.n_layers), scale, {}
    yield "window 32", changed(sliding_window=32), scale, {}
    yield "SiLU instead of tanh-GELU", cfg, scale, {"gelu_tanh": lambda x: x / (1.0 + np.exp(-x))}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    args = ap.parse_args()

    reader, cfg, w = open_model(args.gguf)
    pieces, bos = read_vocab(reader)
    scores = reader.fields["tokenizer.ggml.scores"].contents()
    tokens = np.array([bos] + tokenize_by_scores(PARAGRAPH, pieces, scores))
    print(f"{len(tokens)} tokens", file=sys.stderr)

    losses = {}
    for name, variant_cfg, query_scale, patches in variants(cfg):
        saved = {k: getattr(oracle, k) for k in patches}
        for k, fn in patches.items():
            setattr(oracle, k, fn)
        try:
            losses[name] = mean_loss(variant_cfg, w, tokens, query_scale)
        finally:
            for k, fn in saved.items():
                setattr(oracle, k, fn)
        print(f"{name:32s} mean loss {losses[name]:.4f} nats", file=sys.stderr, flush=True)

    baseline = losses["oracle as written"]
    rivals = [n for n, v in losses.items() if n != "oracle as written" and v <= baseline]
    if rivals:
        sys.exit(f"FAIL: these variants fit the weights at least as well: {rivals}")
    print("OK: the oracle as written has the lowest loss", file=sys.stderr)


if __name__ == "__main__":
    main()
