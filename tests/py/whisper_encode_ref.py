#!/usr/bin/env python3
"""Whisper's encoder as CTranslate2 runs it (the engine under faster-whisper), for
tests/model_whisper_encoder_test.cc: one window of log-mel features in, hidden states out.

  whisper_encode_ref.py --folder MODEL_DIR --mel IN.f32 --n-mels 80 --out OUT.f32
IN: little-endian float32 [n_mels, 3000]; OUT: float32 [positions, d_model]. compute_type
float32, one thread: the reference the acceptance names (ctranslate2's Whisper.encode).
"""
import argparse

import ctranslate2
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--mel", required=True)
    ap.add_argument("--n-mels", type=int, default=80)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    mel = np.fromfile(a.mel, dtype="<f4").reshape(1, a.n_mels, -1)
    model = ctranslate2.models.Whisper(a.folder, device="cpu", compute_type="float32",
                                       intra_threads=1)
    out = model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(mel)), to_cpu=True)
    np.asarray(out, dtype="<f4")[0].tofile(a.out)


if __name__ == "__main__":
    main()
