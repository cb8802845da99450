#!/usr/bin/env bash
# Builds ggml's own quantizers as a shared library, the oracle the K-quant tests compare the
# converter against bit for bit (tests/py/ggml_oracle.py calls ggml_quantize_chunk, the function
# llama_model_quantize calls per tensor). The source is llama.cpp's, from the llama-cpp-python
# sdist pinned below (the llama.cpp that docs/performance.md's comparisons use). Only ggml-base is built
# (ggml.c and ggml-quants.c: the reference quantizers, no CPU backend), for plain x86-64 / the
# host's baseline (GGML_NATIVE=OFF), so no FMA or F16C instruction enters the oracle.
#
# Everything is cached under models/ggml-oracle/ (git-ignored); a second run only prints the path.
# Prints the library's path on its last line of stdout. Safe to run from parallel tests (flock).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/build-folder.sh
version=0.3.36
lock_build_folder models/ggml-oracle
lib=$root/build/src/libggml-base.so
if [ ! -f "$lib" ] || [ ! -f "$root/built-$version" ]; then
  start=$(date +%s)
  sdist=$root/llama_cpp_python-$version.tar.gz
  if [ ! -f "$sdist" ]; then
    # --no-binary for this package only: its build dependencies may come as wheels.
    .venv/bin/pip download --quiet --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$version" -d "$root" >&2
  fi
  rm -rf "$root/src" "$root/build"
  mkdir -p "$root/src"
  tar xzf "$sdist" -C "$root/src" --strip-components=3 \
    "llama_cpp_python-$version/vendor/llama.cpp/ggml"
  # Configured on its own, ggml writes a pkg-config file from ggml.pc.in, which the sdist leaves
  # out; nothing here uses it.
  touch "$root/src/ggml/ggml.pc.in"
  cmake -S "$root/src/ggml" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU=OFF -DGGML_OPENMP=OFF \
    -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >&2
  cmake --build "$root/build" -j 2 --target ggml-base >&2
  touch "$root/built-$version"
  echo "fetch-ggml-oracle.sh: built $lib in $(( $(date +%s) - start )) s" >&2
fi
echo "$lib"
