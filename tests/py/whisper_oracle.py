#!/usr/bin/env python3
"""Whisper in float64 NumPy, written from OpenAI's whisper/model.py (AudioEncoder), reading a
CTranslate2 folder's model.bin (tests/py/ct2_model.py): the reference for the tiny Whisper
tests on every target (tests/whisper_tiny_test.cc).

  whisper_oracle.py encode --folder DIR --mel IN.f32 --out OUT.f32
IN: little-endian float32 [n_mels, 3000]; OUT: float32 [positions, width].
  whisper_oracle.py decode --folder DIR --mel IN.f32 --prompt 50257,50362 --suppress 1,2,...
                           --suppress-blank 220,50256 --eot 50256 [--max-length 448]
  whisper_oracle.py score --folder DIR --mel IN.f32 --tokens 50257,50362,11,... --first 2
                          --out OUT.f32
The logits after token first-1 and after each later one (teacher-forced), float32 rows.
Greedy decoding as CTranslate2's Whisper.generate does it with beam_size 1 (what faster-whisper
calls at temperature 0): the suppressed tokens never, the blank ones not as the first token,
until end of text or max-length tokens in all (prompt included). Prints the generated ids.
(TextDecoder of whisper/model.py: learned positions, causal self-attention, cross-attention over
the encoder's states, tied output projection.)
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


def linear(x, w, name, bias=True):
    y = x @ w[name + "/weight"].astype(np.float64).T
    return y + w[name + "/bias"].astype(np.float64) if bias else y


class Decoder:
    """One window's decoder: cross-attention keys and values computed once, self-attention keys
    and values cached as tokens are added."""

    def __init__(self, w, encoded):
        self.w = w
        self.heads = int(w["decoder/num_heads"])
        self.width = w["decoder/embeddings/weight"].shape[1]
        self.layers = 0
        while f"decoder/layer_{self.layers}/ffn/linear_0/weight" in w:
            self.layers += 1
        self.cross = []
        for layer in range(self.layers):
            kv = linear(encoded, w, f"decoder/layer_{layer}/attention/linear_1")
            self.cross.append((kv[:, :self.width], kv[:, self.width:]))
        self.keys = [np.zeros((0, self.width)) for _ in range(self.layers)]
        self.values = [np.zeros((0, self.width)) for _ in range(self.layers)]

    def step(self, tokens):
        """Logits of the last of `tokens` (new tokens after those already seen)."""
        w, d = self.w, self.width
        f = lambda name: w[name].astype(np.float64)  # noqa: E731
        start = self.keys[0].shape[0]
        x = f("decoder/embeddings/weight")[tokens]
        x = x + f("decoder/position_encodings/encodings")[start:start + len(tokens)]
        n = len(tokens)
        for layer in range(self.layers):
            p = f"decoder/layer_{layer}/"
            h = layer_norm(x, f(p + "self_attention/layer_norm/gamma"),
                           f(p + "self_attention/layer_norm/beta"))
            qkv = linear(h, w, p + "self_attention/linear_0")
            self.keys[layer] = np.concatenate([self.keys[layer], qkv[:, d:2 * d]])
            self.values[layer] = np.concatenate([self.values[layer], qkv[:, 2 * d:]])
            a = np.empty((n, d))
            for t in range(n):  # causal: token t sees positions 0 .. start + t
                seen = start + t + 1
                a[t] = attention(qkv[t:t + 1, :d], self.keys[layer][:seen],
                                 self.values[layer][:seen], self.heads)[0]
            x = x + linear(a, w, p + "self_attention/linear_1")
            h = layer_norm(x, f(p + "attention/layer_norm/gamma"), f(p + "attention/layer_norm/beta"))
            q = linear(h, w, p + "attention/linear_0")
            k, v = self.cross[layer]
            x = x + linear(attention(q, k, v, self.heads), w, p + "attention/linear_2")
            h = layer_norm(x, f(p + "ffn/layer_norm/gamma"), f(p + "ffn/layer_norm/beta"))
            h = gelu(linear(h, w, p + "ffn/linear_0"))
            x = x + linear(h, w, p + "ffn/linear_1")
        x = layer_norm(x[-1:], f("decoder/layer_norm/gamma"), f("decoder/layer_norm/beta"))
        return (x @ f("decoder/embeddings/weight").T)[0]


def greedy(w, encoded, prompt, suppress, suppress_blank, eot, max_length):
    decoder = Decoder(w, encoded)
    logits = decoder.step(prompt)
    out = []
    while len(prompt) + len(out) < max_length:
        logits[suppress] = -np.inf
        if not out:
            logits[suppress_blank] = -np.inf
        token = int(np.argmax(logits))
        if token == eot:
            break
        out.append(token)
        logits = decoder.step([token])
    return out


def score(w, encoded, tokens, first):
    """Logits after each of tokens[first - 1:], teacher-forced: [len(tokens) - first + 1, vocab]."""
    decoder = Decoder(w, encoded)
    rows = [decoder.step(tokens[:first])]
    for token in tokens[first:]:
        rows.append(decoder.step([token]))
    return np.stack(rows)


def ids(text):
    return [int(t) for t in text.split(",") if t]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["encode", "decode", "score"])
    ap.add_argument("--tokens", default="")
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--prompt", default="")
    ap.add_argument("--suppress", default="")
    ap.add_argument("--suppress-blank", default="")
    ap.add_argument("--eot", type=int, default=-1)
    ap.add_argument("--max-length", type=int, default=448)
    ap.add_argument("--folder", required=True)
    ap.add_argument("--mel", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    w, spec = ct2_model.read_model_bin(a.folder + "/model.bin")
    assert spec == "WhisperSpec", spec
    n_mels = w["encoder/conv1/weight"].shape[1]
    mel = np.fromfile(a.mel, dtype="<f4").astype(np.float64).reshape(n_mels, -1)
    encoded = encode(w, mel)
    if a.command == "encode":
        encoded.astype("<f4").tofile(a.out)
        return
    if a.command == "score":
        score(w, encoded, ids(a.tokens), a.first).astype("<f4").tofile(a.out)
        return
    print(" ".join(map(str, greedy(w, encoded, ids(a.prompt), ids(a.suppress),
                                   ids(a.suppress_blank), a.eot, a.max_length))))


if __name__ == "__main__":
    main()
