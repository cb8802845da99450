#!/usr/bin/env python3
"""`kestrel transcribe --json` against faster-whisper on the espeak-ng clips
(reference.json from tests/py/faster_whisper_transcripts.py): converts the CTranslate2 Whisper
folder with --weights WEIGHTS, transcribes each clip (with --timestamps in mode "timestamps",
--previous-text in mode "previous") and counts the clips whose token ids are faster-whisper's,
segment times included; fails when fewer than MIN_IDENTICAL are.

With NEAR_TIE (quantized weights), every clip that is not identical must first part from the
reference at a step where faster-whisper's float32 model itself all but ties the two tokens: its
logits for the reference's token and for ours within NEAR_TIE of each other. Whisper-tiny has such
steps (two measured at 0.011 and 0.014), and any 8-bit rounding of the weights moves logits by
more than that, so which way they fall depends on the CPU's order of float sums, not on a fault;
a fault parts at a step the float32 model is sure of, and fails.

  check_transcribe.py KESTREL KESTREL_CONVERT MODEL_DIR REFERENCE_DIR WEIGHTS MODE MIN_IDENTICAL
                      [NEAR_TIE]
"""
import json
import subprocess
import sys
from pathlib import Path


def first_difference(ours, want):
    """(segment index, token index) where two [[start, end, tokens], ...] lists part, or None."""
    for i, (a, b) in enumerate(zip(ours, want)):
        if a == b:
            continue
        k = next((j for j in range(min(len(a[2]), len(b[2]))) if a[2][j] != b[2][j]),
                 min(len(a[2]), len(b[2])))
        return i, k
    if len(ours) != len(want):
        return min(len(ours), len(want)), 0
    return None


class Float32Model:
    """faster-whisper's float32 model, run on one window with a forced prefix of tokens."""

    def __init__(self, folder):
        from faster_whisper import WhisperModel
        self.model = WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=2)

    def logits(self, wav, start, language, prefix):
        """The logits of the token after `prefix` in the window starting at `start` seconds
        (the plain settings: no timestamps, no previous text)."""
        import ctranslate2
        import numpy as np
        from faster_whisper import decode_audio
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer
        tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                              task="transcribe", language=language)
        features = self.model.feature_extractor(decode_audio(wav))
        seek = int(round(start * 100))  # 100 frames per second
        window = pad_or_trim(features[:, seek:seek + self.model.feature_extractor.nb_max_frames])
        window = ctranslate2.StorageView.from_array(np.ascontiguousarray(window[None]))
        prompt = list(tokenizer.sot_sequence) + [tokenizer.no_timestamps] + list(prefix)
        result = self.model.model.generate(window, [prompt], beam_size=1, max_length=448,
                                           return_logits_vocab=True, suppress_blank=False,
                                           suppress_tokens=[])
        # The logits come for every token after the prompt's <|notimestamps|>, prefix included.
        return np.asarray(result[0].logits[0][len(prefix)]), tokenizer.eot


def near_tie(model, clip, got, ours, want, mode, limit):
    """Whether ours first parts from want at a step where the float32 model's logits for the two
    tokens are within limit; prints the step either way."""
    if mode != "plain":
        return False
    part = first_difference(ours, want)
    if part is None or part[0] >= min(len(ours), len(want)):
        print("  parts in the segments' count or times, not at a token: not a near-tie")
        return False
    segment, k = part
    if ours[segment][:2] != want[segment][:2] and k == min(len(ours[segment][2]),
                                                         len(want[segment][2])):
        print("  parts in a segment's times, not at a token: not a near-tie")
        return False
    prefix = want[segment][2][:k]
    logits, eot = model.logits(clip["wav"], want[segment][0], got["language"], prefix)
    theirs = want[segment][2][k] if k < len(want[segment][2]) else eot
    mine = ours[segment][2][k] if k < len(ours[segment][2]) else eot
    best = int(logits.argmax())
    if best != theirs:
        print(f"  float32 rerun of segment {segment} token {k} prefers {best}, not the "
              f"reference's {theirs}: the rerun does not reproduce faster-whisper")
        return False
    margin = logits[theirs] - logits[mine]
    print(f"  parts at segment {segment} token {k}: {mine} for {theirs}, float32 logits "
          f"{logits[mine]:.4f} and {logits[theirs]:.4f}, margin {margin:.4f} "
          f"({'a near-tie' if margin <= limit else 'MORE than'} {limit})")
    return margin <= limit


def main():
    kestrel, convert, folder, ref_dir, weights, mode, minimum = sys.argv[1:8]
    tie_limit = float(sys.argv[8]) if len(sys.argv) > 8 else None
    ref_dir = Path(ref_dir)
    clips = json.loads((ref_dir / "reference.json").read_text())["clips"]
    kes = ref_dir / f"whisper-tiny-{weights}-{mode}.kes"
    subprocess.run([convert, folder, str(kes) + ".tmp", "--weights", weights], check=True,
                   stdout=subprocess.DEVNULL)
    Path(str(kes) + ".tmp").rename(kes)
    flags = {"plain": [], "timestamps": ["--timestamps"], "previous": ["--previous-text"]}[mode]
    clips = [clip for clip in clips if mode in clip]  # "previous": the long clips only
    identical = 0
    unexplained = []
    float32 = None
    for clip in clips:
        r = subprocess.run([kestrel, "transcribe", str(kes), clip["wav"], "--json", "-t", "2"]
                           + flags, capture_output=True, text=True)
        name = Path(clip["wav"]).name
        if r.returncode != 0:
            print(f"{clip['wav']}: kestrel failed ({r.returncode}): {r.stderr}")
            unexplained.append(name)
            continue
        got = json.loads(r.stdout)
        ours = [[s["start"], s["end"], s["tokens"]] for s in got["segments"]]
        want = clip[mode]
        same = ours == want
        identical += same
        print(f"{name} ({got['audio_seconds']:.1f} s, {got['windows']} windows, "
              f"real-time factor {got['real_time_factor']:.1f}): "
              f"{'identical' if same else 'DIFFERENT'}: {got['text']!r}")
        if same:
            continue
        print(f"  faster-whisper: {want}\n  kestrel:        {ours}")
        if tie_limit is not None:
            float32 = float32 or Float32Model(folder)
            if near_tie(float32, clip, got, ours, want, mode, tie_limit):
                continue
        unexplained.append(name)
    print(f"{weights} weights, {mode}: {identical} of {len(clips)} clips identical to "
          f"faster-whisper (at least {minimum} required)")
    if tie_limit is not None:
        print(f"clips parting other than at a float32 near-tie (logits within {tie_limit}): "
              f"{len(unexplained)} {unexplained} (none allowed)")
    sys.exit(0 if identical >= int(minimum) and (tie_limit is None or not unexplained) else 1)


if __name__ == "__main__":
    main()
