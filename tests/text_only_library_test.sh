#!/bin/bash
# A text-only Kestrel (KESTREL_WITH_AUDIO=OFF) leaves the audio front end out: this checks the
# library the tests link from the same objects as libkestrel.so but with the transcriber's
# refusals (capi/transcribe_without_audio_c.cc) and without kestrel_audio, against the full one.
#  - The text-only library needs neither kissfft nor libsamplerate (no NEEDED entry, no symbol
#    of theirs, defined or not) and holds no audio code (log-mel, resampling, the transcriber);
#    the full library has all of them, so the check would see them come back.
#  - Both export the very same kes_* calls: the ABI does not depend on the option.
#  - A C program linked with it (tests/text_only_probe.c) tokenizes and generates with a tiny
#    decoder, and each transcriber call answers KES_UNSUPPORTED, naming KESTREL_WITH_AUDIO.
# Usage: text_only_library_test.sh FULL.so TEXT_ONLY.so PROBE MODEL.kes
set -euo pipefail
full=$1 text_only=$2 probe=$3 model=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
for f in "$full" "$text_only" "$probe" "$model"; do [[ -f "$f" ]] || fail "no file $f"; done

needed() { readelf -d "$1" | awk '/\(NEEDED\)/ {print $NF}'; }
# Every symbol the library defines or refers to, demangled, one name a line (its static symbol
# table: the exported ones are only the kes_* calls).
symbols() { nm -C "$1" | sed -E 's/^[0-9a-f]* *[A-Za-z] //'; }
audio_libs='kissfft|samplerate'
audio_symbols='^kiss_fft|^src_(new|process|simple|delete|strerror)(@|$)|LogMelSpectrogram|'
audio_symbols+='kestrel::audio::|kestrel::Transcriber::'

# (Each listing into a variable first: grep -q stopping early would fail the pipe under pipefail.)
full_needed=$(needed "$full") full_symbols=$(symbols "$full")
grep -Eq "$audio_libs" <<<"$full_needed" ||
  fail "$full needs no kissfft or libsamplerate: the check below would prove nothing"
grep -Eq "$audio_symbols" <<<"$full_symbols" ||
  fail "$full has no audio symbols: the check below would prove nothing"

found=$(grep -E "$audio_libs" <<<"$(needed "$text_only")" || true)
[[ -z "$found" ]] || fail "$text_only needs $found"
found=$(grep -E "$audio_symbols" <<<"$(symbols "$text_only")" | sort -u | head -5 || true)
[[ -z "$found" ]] || fail "$text_only has audio code: $found"

exports() { nm -D --defined-only "$1" | awk '$3 ~ /^kes_/ {print $3}' | sort; }
diff <(exports "$full") <(exports "$text_only") >&2 ||
  fail "$full and $text_only export different kes_* calls (above: < full, > text-only)"
grep -qx kes_transcriber_create <(exports "$text_only") ||
  fail "$text_only does not export kes_transcriber_create"

"$probe" "$model" || fail "$probe $model"
echo "OK: $text_only: no kissfft or libsamplerate, the same $(exports "$full" | wc -l) kes_* calls"
