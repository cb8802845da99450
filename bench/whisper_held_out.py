#!/usr/bin/env python3
"""How often a Kestrel Whisper file gives faster-whisper float32's very token ids on twelve
espeak-ng clips the tests never use (other texts and voices than tests/py/whisper_clips.py, one
in French): the held-out check behind the README's q8 figures. A weight format's agreement on
the ten test clips alone says little, since which clips a rounding flips is luck (Whisper-tiny
is unsure of espeak speech); this gives a second, independent sample. faster-whisper's own int8
is counted the same way, for comparison.

Settings as the acceptance's: beam_size 1, temperature 0, without_timestamps,
condition_on_previous_text off, no VAD; Kestrel through `kestrel transcribe --json -t 2`.

    .venv/bin/python bench/whisper_held_out.py --kestrel build/release/kestrel \\
        --convert build/release/kestrel-convert --weights q8,f32
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "py"))

from faster_whisper import WhisperModel  # noqa: E402

from faster_whisper_transcripts import transcribe  # noqa: E402
from whisper_clips import make_clips  # noqa: E402

HELD_OUT = [
    ("en-us+m1", 160, "The library opens at nine in the morning and closes at six in the "
                      "evening, except on Sundays."),
    ("en-gb+m3", 140, "Fresh bread, a little butter and a cup of tea make a simple breakfast for "
                      "a busy day."),
    ("en-us+f2", 175, "Our team finished the new bridge two weeks early, and the city held a "
                      "small party to celebrate."),
    ("en-029", 150, "The river rose quickly after the storm, so the farmers moved their animals "
                    "to higher ground."),
    ("en-gb-x-rp", 130, "Please send the report to the office before Friday, and call me if "
                        "anything is missing."),
    ("en-us+m2", 190, "Computers store numbers in binary, using only zeros and ones to represent "
                      "every value."),
    ("en-gb+f4", 155, "The museum has a large collection of old maps, coins and paintings from "
                      "many countries."),
    ("en-us", 145, "Every evening the old fisherman walked along the harbour, watching the boats "
                   "come home with their catch, and telling stories to anyone who would listen "
                   "about the great storms of his youth."),
    ("fr", 140, "Bonjour, je voudrais un café et un croissant, s'il vous plaît."),
    ("en-sc+m4", 165, "Mountains cover most of the north, while the south is flat and green, with "
                      "wide rivers and many small towns."),
    ("en-us+f4", 150, "Remember to water the plants twice a week during the summer, and move "
                      "them out of the direct sun."),
    ("en-gb", 185, "The new train line will connect the airport with the city centre in less "
                   "than fifteen minutes."),
]


def faster_whisper_tokens(model, wav):
    return [t for _, _, tokens in transcribe(model, wav, timestamps=False) for t in tokens]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--convert", required=True, help="the kestrel-convert binary")
    ap.add_argument("--folder", default=str(REPO / "models" / "whisper-tiny-ct2"))
    ap.add_argument("--weights", default="q8", help="comma-separated --weights choices")
    ap.add_argument("--work-dir", default=None, help="clips and .kes files (a temp dir)")
    args = ap.parse_args()

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="kestrel-whisper-held-out-"))
    wavs = make_clips(work, HELD_OUT)
    reference = WhisperModel(args.folder, device="cpu", compute_type="float32", cpu_threads=2)
    want = [faster_whisper_tokens(reference, wav) for wav in wavs]
    int8 = WhisperModel(args.folder, device="cpu", compute_type="int8", cpu_threads=2)
    same = sum(faster_whisper_tokens(int8, wav) == w for wav, w in zip(wavs, want))
    print(f"faster-whisper int8: {same} of {len(wavs)} held-out clips identical to its float32")
    for weights in args.weights.split(","):
        kes = work / f"whisper-{weights}.kes"
        subprocess.run([args.convert, args.folder, str(kes), "--weights", weights], check=True,
                       stdout=subprocess.DEVNULL)
        differ = []
        for i, (wav, w) in enumerate(zip(wavs, want)):
            r = subprocess.run([args.kestrel, "transcribe", str(kes), str(wav), "--json", "-t",
                                "2"], capture_output=True, text=True, check=True)
            got = [t for s in json.loads(r.stdout)["segments"] for t in s["tokens"]]
            if got != w:
                differ.append(i)
        print(f"kestrel {weights}: {len(wavs) - len(differ)} of {len(wavs)} held-out clips "
              f"identical to faster-whisper float32 (different: {differ or 'none'})")


if __name__ == "__main__":
    main()
