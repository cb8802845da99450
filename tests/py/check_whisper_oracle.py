#!/usr/bin/env python3
"""Checks tests/py/whisper_oracle.py (float64 NumPy Whisper, greedy) against faster-whisper on
the real Whisper-tiny CTranslate2 folder: token ids identical on espeak-ng clips of several
voices, speeds and lengths, one in German (ctest whisper_oracle_matches_faster_whisper). The
decoding settings are the acceptance's: compute_type float32, beam_size 1, temperature 0,
without_timestamps, condition_on_previous_text off, no VAD.

  check_whisper_oracle.py MODEL_DIR
"""
import sys
import tempfile

import numpy as np
from faster_whisper import WhisperModel, decode_audio
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens

import whisper_oracle
import ct2_model
from whisper_clips import CLIPS as ALL_CLIPS, make_clips

# The clips of one window (the oracle decodes the first 30 seconds only).
CLIPS = ALL_CLIPS[:5]


def main():
    folder = sys.argv[1]
    model = WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=1)
    tok = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe",
                    language="en")
    suppress = list(get_suppressed_tokens(tok, [-1]))
    prompt = list(tok.sot_sequence) + [tok.no_timestamps]
    blank = tok.encode(" ") + [tok.eot]
    weights, _ = ct2_model.read_model_bin(folder + "/model.bin")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for (voice, speed, _), wav in zip(CLIPS, make_clips(tmp, CLIPS)):
            segments, _ = model.transcribe(str(wav), beam_size=1, temperature=0.0,
                                           without_timestamps=True,
                                           condition_on_previous_text=False, vad_filter=False)
            want = [t for s in segments for t in s.tokens]
            features = model.feature_extractor(decode_audio(str(wav)))[:, :3000]
            window = np.zeros((features.shape[0], 3000))
            window[:, :features.shape[1]] = features
            got = whisper_oracle.greedy(weights, whisper_oracle.encode(weights, window), prompt,
                                        suppress, blank, tok.eot, 448)
            same = got == want
            failures += not same
            print(f"{voice} {speed} wpm: {len(want)} tokens, {'identical' if same else 'DIFFERENT'}"
                  f"{'' if same else f': faster-whisper {want}, oracle {got}'}")
    print(f"{len(CLIPS) - failures} of {len(CLIPS)} clips identical")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
