#!/usr/bin/env python3
"""Whisper in float64 NumPy, written from OpenAI's whisper/model.py (AudioEncoder), reading a
CTranslate2 folder's model.bin (tests/py/ct2_model.py): the reference for the tiny Whisper
tests on every target (tests/whisper_tiny_test.cc).

  whisper_oracle.py encode --folder DIR --mel IN.f32 --out OUT.f32
IN: little-endian float32 [n_mels, 3000]; OUT: float32 [positions, width].
"""
import argparse
import math

import numpy as np

import ct2_model

_erf = np.vectorize(math.erf)


def gelu(x):  # nn.GELU(): the erf form
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def conv1d(x, w, b, stride):
    """x [channels, frames], w [out, channels, 3], padding 1, as nn.Conv1d."""
    padded = np.pad(x, ((0, 0), (1, 1)))
    frames = (x.shape[1] + 2 - 3) // stride + 1
    taps = np.stack([padded[:, j:j + stride * frames:stride] for j in range(3)], axis=1)
    return np.einsum("ocj,cjt->ot", w, taps) + b[:, None]


def attention(q, k, v, heads):
    d = q.shape[1] // heads
    out = np.empty_like(q)
    for h in range(heads):
        s = slice(h * d, (h + 1) * d)
        scores = q[:, s] @ k[:, s].T / math.sqrt(d)
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        out[:, s] = p @ v[:, s]
    return out


def encode(w, mel):
    f = lambda name: w[name].astype(np.float64)  # noqa: E731
    heads = int(w["encoder/num_heads"])
    x = gelu(conv1d(mel, f("encoder/conv1/weight"), f("encoder/conv1/bias"), 1))
    x = gelu(conv1d(x, f("encoder/conv2/weight"), f("encoder/conv2/bias"), 2)).T
    x = x + f("encoder/position_encodings/encodings")[:x.shape[0]]
    width = x.shape[1]
    layer = 0
    while f"encoder/layer_{layer}/ffn/linear_0/weight" in w:
        p = f"encoder/layer_{layer}/"
        h = layer_norm(x, f(p + "self_attention/layer_norm/gamma"),
                       f(p + "self_attention/layer_norm/beta"))
        qkv = h @ f(p + "self_attention/linear_0/weight").T + f(p + "self_attention/linear_0/bias")
        a = attention(qkv[:, :width], qkv[:, width:2 * width], qkv[:, 2 * width:], heads)
        x = x + a @ f(p + "self_attention/linear_1/weight").T + f(p + "self_attention/linear_1/bias")
        h = layer_norm(x, f(p + "ffn/layer_norm/gamma"), f(p + "ffn/layer_norm/beta"))
        h = gelu(h @ f(p + "ffn/linear_0/weight").T + f(p + "ffn/linear_0/bias"))
        x = x + h @ f(p + "ffn/linear_1/weight").T + f(p + "ffn/linear_1/bias")
        layer += 1
    return layer_norm(x, f("encoder/layer_norm/gamma"), f("encoder/layer_norm/beta"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["encode"])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--mel", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w, spec = ct2_model.read_model_bin(a.folder + "/model.bin")
    assert spec == "WhisperSpec", spec
    n_mels = w["encoder/conv1/weight"].shape[1]
    mel = np.fromfile(a.mel, dtype="<f4").astype(np.float64).reshape(n_mels, -1)
    encode(w, mel).astype("<f4").tofile(a.out)


if __name__ == "__main__":
    main()
