#!/usr/bin/env python3
"""faster-whisper's transcripts of espeak-ng clips, the reference of Kestrel's Whisper decoding
(tests/model_whisper_decoder_test.cc). Writes the clips (16 kHz 16-bit WAV) to OUT_DIR and one
line per clip to OUT_DIR/reference.txt:
  WAV|PROMPT|SUPPRESS|BLANK|EOT|TOKENS   (id lists comma-separated)
PROMPT, SUPPRESS and BLANK are what faster-whisper hands CTranslate2's generate (its
get_prompt, get_suppressed_tokens and suppress_blank); TOKENS what it transcribed, with the
acceptance's settings: compute_type float32, beam_size 1, temperature 0, without_timestamps,
condition_on_previous_text off, no VAD.

  faster_whisper_ref.py MODEL_DIR OUT_DIR
"""
import subprocess
import sys
from pathlib import Path

from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens

from check_whisper_oracle import CLIPS


def main():
    folder, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    model = WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=1)
    tok = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe",
                    language="en")
    suppress = get_suppressed_tokens(tok, [-1])
    prompt = list(tok.sot_sequence) + [tok.no_timestamps]
    blank = tok.encode(" ") + [tok.eot]
    join = lambda ids: ",".join(map(str, ids))  # noqa: E731
    lines = []
    for i, (voice, speed, text) in enumerate(CLIPS):
        raw, wav = out / f"{i}-22k.wav", out / f"clip{i}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text],
                       check=True)
        subprocess.run(["sox", str(raw), "-r", "16000", "-b", "16", str(wav)], check=True)
        raw.unlink()
        segments, _ = model.transcribe(str(wav), beam_size=1, temperature=0.0,
                                       without_timestamps=True,
                                       condition_on_previous_text=False, vad_filter=False)
        tokens = [t for s in segments for t in s.tokens]
        lines.append(f"{wav}|{join(prompt)}|{join(suppress)}|{join(blank)}|{tok.eot}|"
                     f"{join(tokens)}")
    (out / "reference.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
