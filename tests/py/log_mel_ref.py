#!/usr/bin/env python3
"""Whisper's log-mel spectrogram in float64 NumPy, written from the formula (OpenAI whisper's
audio.py and faster-whisper's feature_extractor.py describe the same computation), independent of
Kestrel's C++ (runtime/audio/log_mel.cc), for tests/log_mel_test.cc.

  log_mel_ref.py --samples IN.f32 --n-mels 80 --out OUT.f64   spectrogram [n_mels, frames]
  log_mel_ref.py --filters OUT.f64 --n-mels 80                 mel filter bank [n_mels, 201]
IN: little-endian float32 samples at 16 kHz; OUT: little-endian float64, row-major.
"""
import argparse

import numpy as np

SR, N_FFT, HOP = 16000, 400, 160


def hz_to_mel(f):  # Slaney: linear to 1 kHz, then logarithmic (librosa, htk=False)
    f = np.asarray(f, dtype=np.float64)
    lin = f / (200.0 / 3)
    log = 15.0 + np.log(np.maximum(f, 1e-300) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(f >= 1000.0, log, lin)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= 15.0, 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0)), m * 200.0 / 3)


def mel_filters(n_mels):
    bins = np.arange(N_FFT // 2 + 1) * SR / N_FFT
    edges = mel_to_hz(np.linspace(0.0, float(hz_to_mel(SR / 2)), n_mels + 2))
    out = np.zeros((n_mels, bins.size))
    for m in range(n_mels):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        tri = np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid))
        out[m] = np.maximum(tri, 0.0) * 2.0 / (hi - lo)
    return out


def log_mel(samples, n_mels):
    x = np.concatenate([samples.astype(np.float64), np.zeros(160)])  # faster-whisper's padding
    x = np.pad(x, N_FFT // 2, mode="reflect")
    frames = 1 + (x.size - N_FFT) // HOP
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(frames)[:, None]
    spectrum = np.fft.rfft(x[idx] * window, axis=-1)
    power = (np.abs(spectrum) ** 2)[:-1].T  # [bins, frames - 1]: the last frame is dropped
    mel = mel_filters(n_mels) @ power
    logs = np.log10(np.maximum(mel, 1e-10))
    logs = np.maximum(logs, logs.max() - 8.0)
    return (logs + 4.0) / 4.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples")
    ap.add_argument("--out")
    ap.add_argument("--filters")
    ap.add_argument("--n-mels", type=int, default=80)
    a = ap.parse_args()
    if a.filters:
        mel_filters(a.n_mels).astype("<f8").tofile(a.filters)
    if a.samples:
        samples = np.fromfile(a.samples, dtype="<f4")
        log_mel(samples, a.n_mels).astype("<f8").tofile(a.out)


if __name__ == "__main__":
    main()
