#!/usr/bin/env bash
# Configures and builds one flavour: scripts/build.sh FLAVOUR [ninja targets...]
#   release: optimized, warnings as errors;
#   asan:    Debug (assertions, -O1 so model-sized tests finish) with AddressSanitizer and
#            UndefinedBehaviorSanitizer, warnings as errors;
#   aarch64: Release cross-compiled for 64-bit ARM (tests run under qemu-aarch64);
#   armv7:   Release cross-compiled for 32-bit ARMv7 with NEON (tests run under qemu-arm).
# The cross flavours need `scripts/install-deps.sh --cross`. For binaries to copy to a board,
# see scripts/build-board.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:?usage: scripts/build.sh release|asan|aarch64|armv7 [targets...]}
shift
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DKESTREL_SANITIZE=ON "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1"
               -DKESTREL_BUILD_BENCH=OFF) ;;
  aarch64) flags=(-DCMAKE_BUILD_TYPE=Release
                  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake) ;;
  armv7) flags=(-DCMAKE_BUILD_TYPE=Release
                -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake) ;;
  *) echo "scripts/build.sh: error: unknown flavour '$flavour' (release, asan, aarch64 or armv7)" >&2
     exit 2 ;;
esac
cmake -S . -B "build/$flavour" -G Ninja -DKESTREL_WERROR=ON "${flags[@]}" > /dev/null
if [ $# -gt 0 ]; then
  cmake --build "build/$flavour" -j "$(nproc)" --target "$@"
else
  cmake --build "build/$flavour" -j "$(nproc)"
fi
