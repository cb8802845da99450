#!/usr/bin/env bash
# Configures and builds one flavour: scripts/build.sh release|asan [ninja targets...]
#   release: optimized, warnings as errors;
#   asan:    Debug (assertions, -O1 so model-sized tests finish) with AddressSanitizer and
#            UndefinedBehaviorSanitizer, warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:?usage: scripts/build.sh release|asan [targets...]}
shift
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DKESTREL_SANITIZE=ON "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1"
               -DKESTREL_BUILD_BENCH=OFF) ;;
  *) echo "unknown flavour '$flavour' (release or asan)" >&2; exit 2 ;;
esac
cmake -S . -B "build/$flavour" -G Ninja -DKESTREL_WERROR=ON "${flags[@]}" > /dev/null
if [ $# -gt 0 ]; then
  cmake --build "build/$flavour" -j "$(nproc)" --target "$@"
else
  cmake --build "build/$flavour" -j "$(nproc)"
fi
