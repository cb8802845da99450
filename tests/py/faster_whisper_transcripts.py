#!/usr/bin/env python3
"""faster-whisper's transcripts of the espeak-ng clips (tests/py/whisper_clips.py), the reference
of `kestrel transcribe` (tests/py/check_transcribe.py). Writes the clips to OUT_DIR and
OUT_DIR/reference.json: per clip its WAV path and, for each mode, the segments as
[start, end, tokens]:
  "plain":      the acceptance's settings: compute_type float32, beam_size 1, temperature 0,
                without_timestamps, condition_on_previous_text off, no VAD;
  "timestamps": the same with timestamps;
  "previous":   the plain settings with condition_on_previous_text on, for the clips longer
                than one window only (in one window it changes nothing).

  faster_whisper_transcripts.py MODEL_DIR OUT_DIR
"""
import json
import sys
import wave
from pathlib import Path

from faster_whisper import WhisperModel

from whisper_clips import make_clips


def transcribe(model, wav, timestamps, previous=False):
    """wav: a WAV file's path, or its samples already decoded (16 kHz floats)."""
    audio = str(wav) if isinstance(wav, (str, Path)) else wav
    segments, _ = model.transcribe(audio, beam_size=1, temperature=0.0,
                                   without_timestamps=not timestamps,
                                   condition_on_previous_text=previous, vad_filter=False)
    return [[round(s.start, 2), round(s.end, 2), list(s.tokens)] for s in segments]


def main():
    folder, out = sys.argv[1], Path(sys.argv[2])
    model = WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=1)
    clips = []
    for wav in make_clips(out):
        clip = {"wav": str(wav), "plain": transcribe(model, wav, False),
                "timestamps": transcribe(model, wav, True)}
        if wave.open(str(wav)).getnframes() > 30 * 16000:
            clip["previous"] = transcribe(model, wav, False, True)
        clips.append(clip)
    tmp = out / "reference.json.tmp"
    tmp.write_text(json.dumps({"clips": clips}, indent=1))
    tmp.rename(out / "reference.json")


if __name__ == "__main__":
    main()
