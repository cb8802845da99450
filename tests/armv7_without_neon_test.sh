#!/usr/bin/env bash
# The armv7 build on a CPU without NEON or VFPv4: kestrel and kestrel-convert must refuse to start
# with one clear line on stderr and exit status 1 (tools/require_neon.cc), never die on an illegal
# instruction. Run by the armv7 cross build's ctest (and by scripts/test-cross.sh on the static
# board binaries) under qemu-arm CPUs that lack each feature:
#   cortex-a15,neon=off  VFPv4 without NEON,
#   cortex-a9            NEON with VFPv3 only (no VFPv4),
#   cortex-a8,neon=off   neither,
# and on cortex-a7 (both), where the programs must start as usual. With --static (the board
# binaries of scripts/build-board.sh armv7) also under qemu's arm1176, an ARMv6 core (Raspberry
# Pi 1 and Zero), with the same error.
#
# Why only static programs on ARMv6: Debian's armhf glibc, its dynamic loader and its static
# start code are Thumb-2 ARMv7 code, which ARMv6 lacks (it has Thumb-1 only): under `qemu-arm
# -cpu arm1176` (qemu 7.2) a dynamically linked build dies of SIGILL on the first instruction of
# ld-linux-armhf.so.3's _dl_start (a 32-bit Thumb-2 push.w), before any code of ours runs. A
# static program starts where its ELF entry says, so the board binaries start in
# tools/armv7_entry.S, ARMv5 code that makes the check before glibc's _start.
#
#   armv7_without_neon_test.sh [--static] KESTREL KESTREL_CONVERT EMULATOR [EMULATOR ARGS...]
#   armv7_without_neon_test.sh --probe PROBE EMULATOR [EMULATOR ARGS...]
# --probe: a static board build's programs refuse in tools/armv7_entry.S, before the constructor
# of tools/require_neon.cc could; PROBE (tests/require_neon_probe.cc) is that constructor in a
# dynamically linked program, as `scripts/build.sh armv7` links kestrel: it must refuse the same
# way, and on cortex-a7 start and print "started".
set -uo pipefail
usage="usage: armv7_without_neon_test.sh [--static] KESTREL KESTREL_CONVERT EMULATOR [ARGS...]
       armv7_without_neon_test.sh --probe PROBE EMULATOR [ARGS...]"
static=0
probe=""
if [ "${1:-}" = --static ]; then
  static=1
  shift
elif [ "${1:-}" = --probe ]; then
  probe=${2:?$usage}
  shift 2
fi
if [ -z "$probe" ]; then
  kestrel=${1:?$usage}
  convert=${2:?$usage}
  shift 2
fi
emulator=("$@")
[ ${#emulator[@]} -gt 0 ] || { echo "error: no emulator given" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

# run QEMU_CPU PROGRAM ARGS...: sets rc, and the output in $tmp/out and $tmp/err.
run() {
  local cpu=$1
  shift
  QEMU_CPU=$cpu "${emulator[@]}" "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
}

expect_refusal() {  # QEMU_CPU, program, what the message must say the CPU has
  local cpu=$1 program=$2 has=$3 name
  name=$(basename "$program")
  run "$cpu" "$program" --help
  local expected="$name: error: this build needs a CPU with NEON and VFPv4"
  echo "== QEMU_CPU=$cpu $name: exit status $rc, stderr: $(cat "$tmp/err")"
  if [ "$rc" != 1 ]; then
    fail "$name on $cpu: exit status $rc, expected 1 (128 + 4 would be SIGILL)"
  fi
  if [ "$(wc -l < "$tmp/err")" != 1 ] || ! grep -qF "$expected" "$tmp/err" ||
     ! grep -qF "; this CPU has $has" "$tmp/err"; then
    fail "$name on $cpu: expected one line with '$expected' and 'this CPU has $has'"
  fi
  if [ -s "$tmp/out" ]; then
    fail "$name on $cpu: wrote to stdout: $(head -c 200 "$tmp/out")"
  fi
}

if [ -n "$probe" ]; then programs=("$probe"); else programs=("$kestrel" "$convert"); fi
for program in "${programs[@]}"; do
  expect_refusal "cortex-a15,neon=off" "$program" "no NEON"
  expect_refusal "cortex-a9" "$program" "NEON but no VFPv4"
  expect_refusal "cortex-a8,neon=off" "$program" "neither NEON nor VFPv4"
  if [ "$static" = 1 ]; then
    expect_refusal arm1176 "$program" "neither NEON nor VFPv4"
  fi
done

# A CPU with both: the check lets the programs run.
if [ -n "$probe" ]; then
  run cortex-a7 "$probe"
  if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != started ] || [ -s "$tmp/err" ]; then
    fail "$(basename "$probe") on cortex-a7: exit status $rc: $(cat "$tmp/out" "$tmp/err")"
  fi
else
  run cortex-a7 "$kestrel" cpu
  if [ "$rc" != 0 ] || ! grep -q '^target chosen: *NEON$' "$tmp/out"; then
    fail "kestrel cpu on cortex-a7: exit status $rc: $(cat "$tmp/out" "$tmp/err")"
  fi
  run cortex-a7 "$convert" --help
  if [ "$rc" != 0 ] || [ -s "$tmp/err" ]; then
    fail "kestrel-convert --help on cortex-a7: exit status $rc: $(cat "$tmp/err")"
  fi
fi

if [ "$failures" != 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
if [ -n "$probe" ]; then
  echo "armv7 without NEON or VFPv4: a dynamically linked program refuses to start with a clear error"
elif [ "$static" = 1 ]; then
  echo "armv7 without NEON or VFPv4, and ARMv6: both programs refuse to start with a clear error"
else
  echo "armv7 without NEON or VFPv4: both programs refuse to start with a clear error"
fi
