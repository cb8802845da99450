#!/usr/bin/env python3
"""Checks tests/py/whisper_oracle.py (float64 NumPy Whisper, greedy) against faster-whisper on
the real Whisper-tiny CTranslate2 folder: token ids identical on three of the espeak-ng clips
(two voices and speeds, one in German), whose faster-whisper transcripts
tests/py/faster_whisper_transcripts.py wrote to REFERENCE_DIR (ctest
whisper_oracle_matches_faster_whisper, after the whisper_transcripts fixture). The decoding
settings are the acceptance's: compute_type float32, beam_size 1, temperature 0,
without_timestamps, condition_on_previous_text off, no VAD.

  check_whisper_oracle.py MODEL_DIR REFERENCE_DIR
"""
import json
import sys
from pathlib import Path

import numpy as np
from faster_whisper import WhisperModel, decode_audio
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens

import whisper_oracle
import ct2_model
from whisper_clips import CLIPS as ALL_CLIPS

# Clips of one window (the oracle decodes the first 30 seconds only): float64 NumPy decoding
# is slow, and the CLI is checked on all ten (tests/py/check_transcribe.py).
CLIPS = [0, 2, 4]


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
    reference = json.loads((Path(sys.argv[2]) / "reference.json").read_text())["clips"]
    for i in CLIPS:
        wav = reference[i]["wav"]
        want = [t for segment in reference[i]["plain"] for t in segment[2]]
        features = model.feature_extractor(decode_audio(wav))[:, :3000]
        window = np.zeros((features.shape[0], 3000))
        window[:, :features.shape[1]] = features
        got = whisper_oracle.greedy(weights, whisper_oracle.encode(weights, window), prompt,
                                    suppress, blank, tok.eot, 448)
        same = got == want
        failures += not same
        voice, speed, _ = ALL_CLIPS[i]
        print(f"{voice} {speed} wpm: {len(want)} tokens, {'identical' if same else 'DIFFERENT'}"
              f"{'' if same else f': faster-whisper {want}, oracle {got}'}")
    print(f"{len(CLIPS) - failures} of {len(CLIPS)} clips identical")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
