#!/usr/bin/env bash
# Builds llama.cpp's own C++ tools that bench/compare_llama_cpp.py --llama-cpp-bin runs:
# llama-bench, llama-perplexity and llama-quantize. The source is llama.cpp's, from the
# llama-cpp-python sdist pinned below (vendor/llama.cpp: the same llama.cpp that
# scripts/setup-bench.sh and scripts/fetch-ggml-oracle.sh use), configured for this machine
# (GGML_NATIVE=ON: AVX2 with its repack and llamafile kernels where the CPU has them), or with
# PEER_CPU=avx512 for any x86 core with AVX-512 VNNI and VBMI, to be copied to the machine that
# measures (scripts/build-ik-llama-cpp.sh says why; the libraries find each other via $ORIGIN).
#
#   scripts/build-llama-cpp.sh [DIR]     DIR defaults to build/llama.cpp (git-ignored)
#
# DIR holds the sdist, the extracted source (DIR/src) and the build (DIR/build); the tools land in
# DIR/build/bin, which the script prints on its last line of stdout (pass it to --llama-cpp-bin).
# A second run only prints it. About 20 minutes on 2 cores; JOBS=N sets the parallel jobs
# (default: all cores). Needs cmake, a C++17 compiler and pip (for `pip download`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/build-folder.sh
version=0.3.36
suffix=""  # the stamp of a PEER_CPU=avx512 build: built-VERSION-avx512
if [ "${PEER_CPU:-native}" != native ]; then suffix="-$PEER_CPU"; fi
tools=(llama-bench llama-perplexity llama-quantize)

lock_build_folder "${1:-build/llama.cpp}"
bin=$root/build/bin

built() {
  [ -f "$root/built-$version$suffix" ] || return 1
  for t in "${tools[@]}"; do [ -x "$bin/$t" ] || return 1; done
}

if ! built; then
  start=$(date +%s)
  sdist=$root/llama_cpp_python-$version.tar.gz
  oracle_sdist=models/ggml-oracle/llama_cpp_python-$version.tar.gz
  if [ ! -f "$sdist" ] && [ -f "$oracle_sdist" ]; then
    cp "$oracle_sdist" "$sdist"  # scripts/fetch-ggml-oracle.sh fetched the same file
  fi
  if [ ! -f "$sdist" ]; then
    if [ -x .venv/bin/pip ]; then pip=(.venv/bin/pip); else pip=(python3 -m pip); fi
    # --no-binary for this package only: its build dependencies may come as wheels.
    "${pip[@]}" download --quiet --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$version" -d "$root" >&2
  fi
  rm -rf "$root/src" "$root/build" "$root"/built-"$version"*
  mkdir -p "$root/src"
  tar xzf "$sdist" -C "$root/src" --strip-components=3 \
    "llama_cpp_python-$version/vendor/llama.cpp"
  generator=()
  if command -v ninja > /dev/null; then generator=(-G Ninja); fi
  cpu=(-DGGML_NATIVE=ON)
  if [ "${PEER_CPU:-native}" = avx512 ]; then
    cpu=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
         -DGGML_BMI2=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON
         -DGGML_AVX_VNNI=OFF "-DCMAKE_BUILD_RPATH=\$ORIGIN")
  elif [ "${PEER_CPU:-native}" != native ]; then
    echo "build-llama-cpp.sh: PEER_CPU must be native or avx512, found '$PEER_CPU'" >&2; exit 2
  fi
  cmake -S "$root/src" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cpu[@]}" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF >&2
  cmake --build "$root/build" -j "${JOBS:-$(nproc)}" --target "${tools[@]}" >&2
  for t in "${tools[@]}"; do
    [ -x "$bin/$t" ] || { echo "build-llama-cpp.sh: $bin/$t was not built" >&2; exit 1; }
  done
  touch "$root/built-$version$suffix"
  echo "build-llama-cpp.sh: built ${tools[*]} in $(( $(date +%s) - start )) s" >&2
fi
echo "$bin"
