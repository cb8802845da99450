#!/usr/bin/env bash
# Builds Kestrel for 64-bit ARM (aarch64) and 32-bit ARMv7 and runs the tests under qemu-user,
# once per emulated CPU, so that every Highway target an ARM board can dispatch to is tested:
#   aarch64, qemu's default CPU (SVE2, 512-bit vectors): the whole suite; the ops tests run on
#            SVE2, SVE and NEON in turn;
#   aarch64, -cpu max,sve-default-vector-length=32 (SVE_256), =16 (SVE2_128), and cortex-a72
#            (NEON only): the ops tests on that CPU's own target, the thread pool, the CLI and
#            the tiny-model end-to-end test;
#   armv7 (NEON, chosen at compile time): the whole suite.
# Then it builds the static board binaries the README describes (scripts/build-board.sh) and
# runs them (`kestrel run` and `kestrel bench`) on the tiny model, with no ARM libraries on the
# library path.
# Needs scripts/install-deps.sh --cross, and the native Release build's tests run first: the
# tiny-model test compares the ARM logits with the reference that build wrote.
set -euo pipefail
cd "$(dirname "$0")/.."

# ctest -R pattern of the tests repeated on each extra emulated CPU.
subset='^(Ops|Attention|ThreadPool|TinyModel|TinyRun|TinyBert|Cli|MatMulQ|QuantizeRows|EmbedQuant)'

check_target() {  # build dir, expected chosen target
  local chosen
  chosen=$("${emulator[@]}" "$1/kestrel" cpu | sed -n 's/^target chosen: *//p')
  echo "== $1, QEMU_CPU=${QEMU_CPU:-default}: Highway target chosen: $chosen"
  if [ "$chosen" != "$2" ]; then
    echo "error: expected the emulated CPU to get $2, found '$chosen'" >&2
    exit 1
  fi
}

for arch in aarch64 armv7; do
  start=$(date +%s)
  bash scripts/build.sh "$arch"
  echo "== $arch: built in $(( $(date +%s) - start )) s"
  start=$(date +%s)
  if [ "$arch" = aarch64 ]; then
    emulator=(qemu-aarch64)
    unset QEMU_CPU
    check_target build/aarch64 SVE2
    (cd build/aarch64 && ctest --output-on-failure --timeout 900 -j "$(nproc)")
    for config in "max,sve-default-vector-length=32 SVE_256" \
                  "max,sve-default-vector-length=16 SVE2_128" "cortex-a72 NEON"; do
      export QEMU_CPU=${config% *} KESTREL_TEST_TARGETS=${config#* }
      check_target build/aarch64 "$KESTREL_TEST_TARGETS"
      (cd build/aarch64 && ctest --output-on-failure --timeout 900 -j "$(nproc)" -R "$subset")
    done
    unset QEMU_CPU KESTREL_TEST_TARGETS
  else
    emulator=(qemu-arm)
    check_target build/armv7 NEON
    (cd build/armv7 && ctest --output-on-failure --timeout 900 -j "$(nproc)")
  fi
  echo "== $arch: tests ran in $(( $(date +%s) - start )) s"
done

# The README's board binaries: statically linked, run here with nothing but the emulator.
tiny=build/release/test-tmp/reference/tiny.kes
for board in "aarch64 -mcpu=cortex-a76 qemu-aarch64" "armv7 -mtune=cortex-a7 qemu-arm"; do
  read -r arch flags emu <<< "$board"
  start=$(date +%s)
  bash scripts/build-board.sh "$arch" "$flags"
  if ! file "dist/$arch/kestrel" | grep -q "statically linked"; then
    echo "error: dist/$arch/kestrel is not statically linked" >&2
    exit 1
  fi
  QEMU_LD_PREFIX=/nonexistent "$emu" "dist/$arch/kestrel" run "$tiny" -p "hello" -n 8 --temp 0 \
    --threads 2
  QEMU_LD_PREFIX=/nonexistent "$emu" "dist/$arch/kestrel" bench "$tiny" -p 32 -n 16 -t 1,2 -r 2
  echo "== board binaries for $arch ($flags): built and ran in $(( $(date +%s) - start )) s"
done
