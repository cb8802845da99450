#!/usr/bin/env python3
"""`kestrel transcribe --json` against faster-whisper on the espeak-ng clips
(reference.json from tests/py/faster_whisper_transcripts.py): converts the CTranslate2 Whisper
folder with --weights WEIGHTS, transcribes each clip (with --timestamps in mode "timestamps",
--previous-text in mode "previous")
and counts the clips whose token ids are faster-whisper's, segment times included; fails when
fewer than MIN_IDENTICAL are.

  check_transcribe.py KESTREL KESTREL_CONVERT MODEL_DIR REFERENCE_DIR WEIGHTS MODE MIN_IDENTICAL
"""
import json
import subprocess
import sys
from pathlib import Path


def main():
    kestrel, convert, folder, ref_dir, weights, mode, minimum = sys.argv[1:8]
    ref_dir = Path(ref_dir)
    clips = json.loads((ref_dir / "reference.json").read_text())["clips"]
    kes = ref_dir / f"whisper-tiny-{weights}-{mode}.kes"
    subprocess.run([convert, folder, str(kes) + ".tmp", "--weights", weights], check=True,
                   stdout=subprocess.DEVNULL)
    Path(str(kes) + ".tmp").rename(kes)
    flags = {"plain": [], "timestamps": ["--timestamps"], "previous": ["--previous-text"]}[mode]
    clips = [clip for clip in clips if mode in clip]  # "previous": the long clips only
    identical = 0
    for clip in clips:
        r = subprocess.run([kestrel, "transcribe", str(kes), clip["wav"], "--json", "-t", "2"]
                           + flags, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{clip['wav']}: kestrel failed ({r.returncode}): {r.stderr}")
            continue
        got = json.loads(r.stdout)
        ours = [[s["start"], s["end"], s["tokens"]] for s in got["segments"]]
        want = clip[mode]
        same = ours == want
        identical += same
        print(f"{Path(clip['wav']).name} ({got['audio_seconds']:.1f} s, {got['windows']} windows, "
              f"real-time factor {got['real_time_factor']:.1f}): "
              f"{'identical' if same else 'DIFFERENT'}: {got['text']!r}")
        if not same:
            print(f"  faster-whisper: {want}\n  kestrel:        {ours}")
    print(f"{weights} weights, {mode}: {identical} of {len(clips)} clips identical to "
          f"faster-whisper (at least {minimum} required)")
    sys.exit(0 if identical >= int(minimum) else 1)


if __name__ == "__main__":
    main()
