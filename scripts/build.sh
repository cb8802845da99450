#!/usr/bin/env bash
# Configures and builds one flavour: scripts/build.sh FLAVOUR [ninja targets...]
#   release: optimized, warnings as errors;
#   asan:    Debug (assertions, -O1 so model-sized tests finish, line tables only: a sanitizer
#            report still names file and line, and the ~40 statically linked test binaries take
#            a fraction of full -g's 3 GB, which once filled a CI machine's disk) with
#            AddressSanitizer and UndefinedBehaviorSanitizer, warnings as errors; the kernels
#            compiled only for the SIMD targets this machine runs (on x86, the AVX-512 ones only
#            where /proc/cpuinfo has them), less x86's SSSE3 (SSE4's vector width): its tests
#            run here, and only on those;
#   tsan:    Debug (assertions, -O1, line tables only) with ThreadSanitizer, warnings as errors;
#            the kernels compiled for fewer SIMD targets (x86: AVX2 and SCALAR; elsewhere the
#            static target; see KESTREL_TSAN in CMakeLists.txt). scripts/test.sh builds only the
#            threaded tests in it (thread pool, sessions and encoders sharing a model, the split
#            attention, tiny-model logits with 2 threads) and fails on any ThreadSanitizer report;
#   o0:      Debug at -O0, no tests: what a program's Debug build (or add_subdirectory with no
#            build type) compiles Kestrel with; intrinsics that take an immediate must get a
#            literal there, where -O1 and up would fold a loop index into one;
#   aarch64: Release cross-compiled for 64-bit ARM (tests run under qemu-aarch64);
#   armv7:   Release cross-compiled for 32-bit ARMv7 with NEON (tests run under qemu-arm);
#   fuzz:    the libFuzzer targets (fuzz/), clang with ASan and UBSan at -O1; kernels compiled
#            for one SIMD target only (HWY_COMPILE_ONLY_STATIC; on x86 AVX2: x86-64-v3 with AES and
#            CLMUL, which Highway 1.0.3 also requires for it): the
#            fuzzers search the parsers, checks and plan execution, not the per-target kernels
#            the tests cover, and one target builds in a fraction of the time. Not SCALAR:
#            there Highway's exp/tanh convert NaN to int in plain C++ (undefined behaviour
#            UBSan reports on any model whose weights make NaN), while every SIMD target's
#            conversion is defined; no CPU Kestrel runs on uses SCALAR. Run them with
#            scripts/fuzz.sh.
# The cross flavours need `scripts/install-deps.sh --cross`. For binaries to copy to a board,
# see scripts/build-board.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:?usage: scripts/build.sh release|asan|tsan|o0|aarch64|armv7|fuzz [targets...]}
shift
fuzz_cpu_flags=""
if [ "$(uname -m)" = x86_64 ]; then fuzz_cpu_flags="-march=x86-64-v3 -maes -mpclmul"; fi
# The x86 Highway targets the ASan flavour leaves out, as KESTREL_HWY_DISABLED_TARGETS wants
# them (empty elsewhere): those this CPU cannot run (Highway 1.0.3's requirements for each), and
# SSSE3, whose vectors are SSE4's 128 bits: the kernels have no code of their own for either, so
# SSE4 makes the same loads and stores, and the Release build tests SSSE3's results.
asan_disabled_targets() {
  [ "$(uname -m)" = x86_64 ] || return 0
  local flags lacks=(HWY_SSSE3) f
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
  has avx2 fma bmi2 f16c || lacks+=(HWY_AVX2)
  has avx512f avx512vl avx512dq avx512bw || lacks+=(HWY_AVX3)
  has avx512f avx512vl avx512dq avx512bw avx512_vnni vpclmulqdq avx512_vbmi2 vaes \
    avx512_vpopcntdq avx512_bitalg gfni || lacks+=(HWY_AVX3_DL)
  (IFS='|'; echo "${lacks[*]}")
}
# The sanitizer flavours link with mold where it is installed (scripts/install-deps.sh): GNU ld
# takes 1.7 s for each ASan test executable, mold 0.5.
sanitizer_linker=()
if command -v ld.mold > /dev/null; then
  sanitizer_linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=mold -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=mold)
fi
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DKESTREL_SANITIZE=ON "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
               -DKESTREL_BUILD_BENCH=OFF "${sanitizer_linker[@]}"
               "-DKESTREL_HWY_DISABLED_TARGETS=$(asan_disabled_targets)") ;;
  tsan) flags=(-DCMAKE_BUILD_TYPE=Debug -DKESTREL_TSAN=ON "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
               -DKESTREL_BUILD_BENCH=OFF "${sanitizer_linker[@]}") ;;
  o0) flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0" -DKESTREL_BUILD_TESTS=OFF
             -DKESTREL_BUILD_BENCH=OFF) ;;
  aarch64) flags=(-DCMAKE_BUILD_TYPE=Release
                  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake) ;;
  armv7) flags=(-DCMAKE_BUILD_TYPE=Release
                -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake) ;;
  fuzz) flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DKESTREL_SANITIZE=ON
              -DKESTREL_FUZZ=ON "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
              "-DCMAKE_CXX_FLAGS=-DHWY_COMPILE_ONLY_STATIC=1 $fuzz_cpu_flags"
              -DKESTREL_BUILD_TESTS=OFF -DKESTREL_BUILD_BENCH=OFF) ;;
  *) echo "scripts/build.sh: error: unknown flavour '$flavour' (release, asan, tsan, o0, aarch64, armv7 or fuzz)" >&2
     exit 2 ;;
esac
# KESTREL_TEST_EXECUTABLES (environment): the test executables to build, as
# scripts/test-executables.sh prints them; unset or empty: all.
cmake -S . -B "build/$flavour" -G Ninja -DKESTREL_WERROR=ON "${flags[@]}" \
  "-DKESTREL_TEST_EXECUTABLES=${KESTREL_TEST_EXECUTABLES:-}" > /dev/null
if [ $# -gt 0 ]; then
  cmake --build "build/$flavour" -j "$(nproc)" --target "$@"
else
  cmake --build "build/$flavour" -j "$(nproc)"
fi
