#!/usr/bin/env bash
# A long generation past the context, checking that it runs in constant memory at a steady speed
# (issue 11's acceptance run; minutes, not a ctest test):
#   scripts/long-generation.sh MODEL.kes [-n 100000] [--ctx 4096] [-t 1] [--kv-type f16]
#       [--window 1000] [--early 4000] [--kestrel build/release/kestrel] [--timings FILE]
# Generates n tokens with --ignore-eos, then compares the process's peak resident memory after
# early + window tokens with that at the end (equal within 1 MiB) and the p99 decode latency of
# tokens [early, early + window) with that of the last `window` tokens (within 10%), and prints the
# p50/p99 of every window of `window` tokens past the early mark. --timings keeps the per-token
# file (`kestrel run --timings`); otherwise it is deleted.
set -euo pipefail

model="" n=100000 ctx=4096 threads=1 kv=f16 window=1000 early=4000
kestrel=build/release/kestrel keep_timings=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    --ctx) ctx="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    --kv-type) kv="$2"; shift 2 ;;
    --window) window="$2"; shift 2 ;;
    --early) early="$2"; shift 2 ;;
    --kestrel) kestrel="$2"; shift 2 ;;
    --timings) keep_timings="$2"; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) model="$1"; shift ;;
  esac
done
[[ -n "$model" ]] || { echo "usage: $0 MODEL.kes [-n N] [--ctx N] [-t N] [--kv-type T]" >&2; exit 2; }
(( n >= early + 2 * window )) || { echo "-n must be at least early + 2 * window" >&2; exit 2; }

if [[ -n "$keep_timings" ]]; then
  timings=$keep_timings
else
  timings=$(mktemp)
  trap 'rm -f "$timings"' EXIT
fi
"$kestrel" run "$model" -p "Once upon a time" -n "$n" --ctx "$ctx" -t "$threads" --kv-type "$kv" \
  --ignore-eos --seed 1 --timings "$timings" > /dev/null

python3 - "$timings" "$n" "$early" "$window" <<'PY'
import re, sys
path, n, early, window = sys.argv[1], *map(int, sys.argv[2:])
latency, resident = {}, {}
for line in open(path):
    m = re.match(r"# resident after (\d+) tokens: peak (-?\d+) KiB, current (-?\d+) KiB", line)
    if m:
        resident[int(m[1])] = (int(m[2]), int(m[3]))
    elif not line.startswith("#"):
        i, ms = line.split()
        latency[int(i)] = float(ms)
def p99(first, last):
    xs = sorted(latency[i] for i in range(first, last))
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]
def p50(first, last):
    xs = sorted(latency[i] for i in range(first, last))
    return xs[len(xs) // 2]
mark = early + window
early_p99, late_p99 = p99(early, mark), p99(n - window, n)
steps = list(range(early, n - window + 1, window))
print("window p50/p99 ms: " + " ".join(f"{a // 1000}k {p50(a, a + window):.2f}/{p99(a, a + window):.2f}"
                                       for a in steps[::max(1, len(steps) // 12)]))
marks = sorted(resident)
peak_mark = resident[max(m for m in marks if m <= mark)][0]
peak_end = resident[marks[-1]][0]
print(f"tokens: {n}; peak resident after {mark}: {peak_mark} KiB, after {marks[-1]}: {peak_end} KiB "
      f"(difference {peak_end - peak_mark} KiB)")
print(f"p99 decode latency: tokens {early}-{mark}: {early_p99:.2f} ms, last {window}: {late_p99:.2f} ms "
      f"(ratio {late_p99 / early_p99:.3f})")
ok = peak_end - peak_mark <= 1024 and late_p99 <= 1.10 * early_p99
print("PASS" if ok else "FAIL: memory grew or decode slowed")
sys.exit(0 if ok else 1)
PY
