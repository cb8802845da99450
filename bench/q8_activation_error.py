#!/usr/bin/env python3
"""Where a q8 BERT encoder's error comes from, simulated in NumPy float64 (issue 10's q8 bar).

Runs the oracle of tests/py/bert_oracle.py with Kestrel's q8 arithmetic simulated in its linear
layers (Q8_0 weights: int8 per 32 along k with an f16 scale; activations the same, as
ops/quantize_rows.h makes them) on the 120 texts of tests/py/embed_corpus.py, and prints the
min and mean cosine similarity to the float64 embeddings for:
  weights      Q8_0 weights only (float activations)
  q8           weights and activations, as `--weights q8` runs
  q8 - SITE    q8 with the activations of one kind of linear layer left in float
  smooth       q8 after SmoothQuant (each linear layer's input channel j divided by
               s_j = max|x_j|^alpha / max|W_:,j|^(1 - alpha), alpha 0.5 by default, and the
               weight column multiplied by it; Q, K and V share s), with max|x_j| calibrated on
               --calibration texts (the corpus's first 40, random token ids, or a file of
               texts, one per line). The converter smooths q8 and q4 encoders this way
               (converters/hf/smooth_quant.h).

A measurement tool, not a test: a run takes a few minutes on one core.

usage: q8_activation_error.py [--checkpoint models/all-MiniLM-L6-v2]
                              [--calibration corpus|random|FILE] [--alpha A] [--only-smooth]
"""
import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "py"))
import bert_oracle  # noqa: E402
from embed_corpus import TEXTS  # noqa: E402

# The inputs of each kind of linear layer, by the end of its name.
SITES = {"qkv (LayerNorm out)": ("query", "key", "value"),
         "attention output (context)": ("attention.output.dense",),
         "ffn up (LayerNorm out)": ("intermediate.dense",),
         "ffn down (GELU out)": ("output.dense",)}


def q8_blocks(x):
    """Rounds the last axis to int8 blocks of 32 with an f16 scale, as Q8_0 and Q8_ACT do."""
    shape = x.shape
    blocks = x.reshape(shape[:-1] + (shape[-1] // 32, 32))
    scale = (np.abs(blocks).max(axis=-1, keepdims=True) / 127).astype(np.float16)
    scale = scale.astype(np.float64)
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.round(blocks / safe), -127, 127) * (scale > 0)
    return (q * scale).reshape(shape)


def site_of(prefix):
    # In SITES' order, so "attention.output.dense" is taken before "output.dense" could match.
    for site, ends in SITES.items():
        if prefix.startswith("encoder.") and prefix.endswith(ends):
            return site
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--calibration", default="corpus",
                    help="corpus, random, or a file of texts, one per line")
    ap.add_argument("--only-smooth", action="store_true", help="skip the per-site runs")
    ap.add_argument("--alpha", type=float, default=0.5, help="SmoothQuant's migration strength")
    args = ap.parse_args()

    ckpt = bert_oracle.Checkpoint.load(args.checkpoint)
    ids = bert_oracle.tokenize(ckpt, TEXTS)
    exact_linear = bert_oracle.linear
    reference = bert_oracle.embed(ckpt, ids)

    # Per-channel input maxima of every linear layer on the calibration texts.
    if args.calibration == "corpus":
        calibration = ids[:40]
    elif args.calibration != "random":
        lines = Path(args.calibration).read_text(encoding="utf-8").splitlines()
        calibration = bert_oracle.tokenize(ckpt, [t for t in lines if t.strip()])
    else:
        rng = random.Random(1)
        vocab = ckpt.config["vocab_size"]
        calibration = [[ids[0][0]] + [rng.randrange(1000, vocab)
                                      for _ in range(rng.choice([6, 14, 30, 62, 126]))]
                       + [ids[0][-1]] for _ in range(40)]
    x_max = {}

    def record(x, w, prefix):
        m = np.abs(x).reshape(-1, x.shape[-1]).max(axis=0)
        x_max[prefix] = np.maximum(x_max.get(prefix, 0.0), m)
        return exact_linear(x, w, prefix)
    bert_oracle.linear = record
    bert_oracle.embed(ckpt, calibration)

    def run(name, quantize_weights, float_sites=(), all_float=False, smooth=False):
        def linear(x, w, prefix):
            weight = w[prefix + ".weight"]
            if smooth and prefix in x_max:
                # Q, K and V read one quantized copy of their input, so they share s: the
                # weight maximum is taken over the three.
                group = [prefix]
                if prefix.endswith(("query", "key", "value")):
                    base = prefix.rsplit(".", 1)[0]
                    group = [base + ".query", base + ".key", base + ".value"]
                w_max = np.maximum(np.max([np.abs(w[g + ".weight"]).max(axis=0) for g in group],
                                          axis=0), 1e-6)
                s = x_max[prefix] ** args.alpha / w_max ** (1 - args.alpha)
                s = np.maximum(s, 1e-3)
                x, weight = x / s, weight * s
            if quantize_weights and prefix.startswith("encoder."):
                weight = q8_blocks(weight)
            if not all_float and site_of(prefix) not in float_sites:
                x = q8_blocks(x)
            return x @ weight.T + w[prefix + ".bias"]
        bert_oracle.linear = linear
        got = bert_oracle.embed(ckpt, ids)
        cos = (got * reference).sum(axis=1) / (np.linalg.norm(got, axis=1) *
                                               np.linalg.norm(reference, axis=1))
        worst = int(np.argmin(cos))
        print(f"{name:40s} min {cos.min():.5f}  mean {cos.mean():.5f}  worst {TEXTS[worst][:24]!r}",
              flush=True)

    if not args.only_smooth:
        run("weights", True, all_float=True)
        run("q8", True)
        for site in SITES:
            run(f"q8 - {site}", True, float_sites=(site,))
    run(f"smooth ({args.calibration} calibration)", True, smooth=True)


if __name__ == "__main__":
    main()
