#!/usr/bin/env python3
"""`kestrel transcribe` next to faster-whisper on this machine, on the same Whisper weights and
the same audio (issue 13's speed point): whole transcriptions, side by side.

For each clip, thread count and format pair (Kestrel f32 with faster-whisper float32, q8 with
int8), the two runtimes alternate --reps times and the median of each is kept:
  - Kestrel: `KESTREL transcribe MODEL.kes CLIP.wav --json -t N`, its "total_seconds" (log-mel
    spectrogram, encoder and decoder; not the model load or the WAV read);
  - faster-whisper: `WhisperModel(folder, compute_type=..., cpu_threads=N)` loaded once, then
    list(model.transcribe(samples, ...)) timed from Python, the samples decoded beforehand (so
    its time has no file decoding either), with the acceptance's settings: beam_size 1,
    temperature 0, without_timestamps, condition_on_previous_text off, no VAD.
One untimed run of each warms the caches first. The real-time factor is audio seconds per
compute second; the ratio is Kestrel's over faster-whisper's (above 1: Kestrel is faster).
Both transcripts are compared too (token ids), so a speed figure never hides a different result.

Run it on a quiet machine (the load average is printed).

    .venv/bin/python bench/compare_faster_whisper.py --kestrel build/release/kestrel \\
        --folder models/whisper-tiny-ct2 --kes-f32 whisper-f32.kes --kes-q8 whisper-q8.kes \\
        --clips 9,8,3 --threads 1,2 --reps 3
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "py"))

try:
    from faster_whisper import WhisperModel, decode_audio
except ImportError:
    sys.exit("compare_faster_whisper.py: error: faster_whisper is missing; run it with "
             ".venv/bin/python after scripts/install-deps.sh")

from faster_whisper_transcripts import transcribe  # noqa: E402
from whisper_clips import make_clips  # noqa: E402

# Kestrel format -> faster-whisper compute_type.
FORMATS = {"f32": "float32", "q8": "int8"}


def kestrel_run(kestrel, kes, wav, threads):
    r = subprocess.run([kestrel, "transcribe", str(kes), str(wav), "--json", "-t", str(threads)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compare_faster_whisper.py: error: kestrel transcribe failed: {r.stderr}")
    out = json.loads(r.stdout)
    tokens = [t for s in out["segments"] for t in s["tokens"]]
    return out["total_seconds"], out["audio_seconds"], tokens


def faster_whisper_run(model, samples):
    start = time.perf_counter()
    segments = transcribe(model, samples, timestamps=False)
    seconds = time.perf_counter() - start
    return seconds, [t for _, _, tokens in segments for t in tokens]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kestrel", required=True, help="the kestrel binary")
    ap.add_argument("--folder", default=str(REPO / "models" / "whisper-tiny-ct2"),
                    help="the CTranslate2 Whisper folder both .kes files were converted from")
    ap.add_argument("--kes-f32", help="the folder converted with --weights f32")
    ap.add_argument("--kes-q8", help="the folder converted with --weights q8")
    ap.add_argument("--clips", default="9,8",
                    help="indices into tests/py/whisper_clips.py's CLIPS (default: the two "
                         "longest, two windows each)")
    ap.add_argument("--clip-dir", default=None, help="where the clips are written (a temp dir)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    kes = {"f32": args.kes_f32, "q8": args.kes_q8}
    formats = [f for f in FORMATS if kes[f]]
    if not formats:
        sys.exit("compare_faster_whisper.py: error: give --kes-f32 and/or --kes-q8")
    clip_dir = Path(args.clip_dir or tempfile.mkdtemp(prefix="kestrel-whisper-clips-"))
    wavs = make_clips(clip_dir)
    chosen = [int(i) for i in args.clips.split(",")]
    threads = [int(t) for t in args.threads.split(",")]

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; kestrel {args.kestrel}; faster-whisper on "
          f"{args.folder}; median of {args.reps}")
    print()
    print("| clip | threads | format | Kestrel s | faster-whisper s | Kestrel RTF | "
          "faster-whisper RTF | ratio | same tokens |")
    print("|---|--:|---|--:|--:|--:|--:|--:|---|")
    for n in threads:
        for fmt in formats:
            model = WhisperModel(args.folder, device="cpu", compute_type=FORMATS[fmt],
                                 cpu_threads=n)
            for i in chosen:
                wav = wavs[i]
                samples = decode_audio(str(wav))
                kestrel_run(args.kestrel, kes[fmt], wav, n)  # warm-up, untimed
                faster_whisper_run(model, samples)
                ours, theirs = [], []
                for _ in range(args.reps):
                    seconds, audio, our_tokens = kestrel_run(args.kestrel, kes[fmt], wav, n)
                    ours.append(seconds)
                    seconds, their_tokens = faster_whisper_run(model, samples)
                    theirs.append(seconds)
                k, f = statistics.median(ours), statistics.median(theirs)
                print(f"| clip{i} ({audio:.1f} s) | {n} | {fmt} vs {FORMATS[fmt]} | {k:.3f} | "
                      f"{f:.3f} | {audio / k:.1f} | {audio / f:.1f} | {f / k:.2f}x | "
                      f"{'yes' if our_tokens == their_tokens else 'no'} |", flush=True)
            del model


if __name__ == "__main__":
    main()
