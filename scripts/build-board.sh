#!/usr/bin/env bash
# Builds statically linked `kestrel` and `kestrel-convert` for an ARM board (or this machine),
# ready to copy over and run with no libraries installed:
#
#   scripts/build-board.sh [--tests] aarch64|armv7|native [compiler flags for the core...]
#
# e.g. scripts/build-board.sh aarch64 -mcpu=cortex-a76   (Raspberry Pi 5; has dotprod)
#      scripts/build-board.sh aarch64 -mcpu=cortex-a72   (Raspberry Pi 4)
#      scripts/build-board.sh armv7 -mtune=cortex-a7     (32-bit OS; armv7 takes -mtune: the
#                                                     architecture flags are fixed, see the toolchain)
# The binaries land in dist/<arch>/. Needs scripts/install-deps.sh --cross (for ARM).
# --tests also builds the test suite in the same tree (build/board-<arch>), so that ctest there
# tests the very libraries the board binaries are linked from (scripts/test-cross.sh does, under
# qemu); KESTREL_TEST_EXECUTABLES in the environment limits which test executables it builds
# (scripts/test-executables.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/build-board.sh [--tests] aarch64|armv7|native [compiler flags...]"
tests=OFF
if [ "${1:-}" = --tests ]; then
  tests=ON
  shift
fi
arch=${1:?$usage}
shift
case "$arch" in
  aarch64) toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake) ;;
  armv7) toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake) ;;
  native) toolchain=() ;;
  *) echo "build-board.sh: error: unknown architecture '$arch' (aarch64, armv7 or native)" >&2
     exit 2 ;;
esac
bash scripts/fetch-debian-sources.sh
build=build/board-$arch
cmake -S . -B "$build" -G Ninja "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release -DKESTREL_STATIC=ON \
  "-DKESTREL_BUILD_TESTS=$tests" -DKESTREL_BUILD_BENCH=OFF -DKESTREL_WERROR=ON \
  "-DKESTREL_CPU_FLAGS=$*" "-DKESTREL_TEST_EXECUTABLES=${KESTREL_TEST_EXECUTABLES:-}" > /dev/null
if [ "$tests" = ON ]; then
  cmake --build "$build" -j "$(nproc)"
else
  cmake --build "$build" -j "$(nproc)" --target kestrel kestrel-convert
fi
mkdir -p "dist/$arch"
cp "$build/kestrel" "$build/kestrel-convert" "dist/$arch/"
for f in "dist/$arch/kestrel" "dist/$arch/kestrel-convert"; do
  if command -v file > /dev/null; then file "$f"; else ls -l "$f"; fi
done
