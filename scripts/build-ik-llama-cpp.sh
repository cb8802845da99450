#!/usr/bin/env bash
# Builds ik_llama.cpp's llama-bench (the CPU-tuned fork of llama.cpp, the fastest CPU peer
# measured here) for bench/compare_llama_cpp.py --ik-llama-cpp-bin. The source is a folder the
# user gives: a checkout of https://github.com/ikawrakow/ik_llama.cpp (the project downloads
# nothing for it). Only llama-bench is built: some snapshots of the fork lack files its server
# needs, and the GGUFs it measures come from llama.cpp's own llama-quantize
# (scripts/build-llama-cpp.sh).
#
#   scripts/build-ik-llama-cpp.sh SOURCE [DIR]     DIR defaults to build/ik_llama.cpp (ignored)
#
# Configured for this machine (GGML_NATIVE=ON), or with PEER_CPU=avx512 for any x86 core with
# AVX-512 VNNI and VBMI (Ice Lake, Sapphire Rapids and later, Zen 4/5): no AVX-VNNI, which a
# Zen 5's native build uses and a Zen 4 lacks; the libraries then sit beside llama-bench and find
# each other there ($ORIGIN), so the folder can be copied to the machine that measures.
# The tool lands in DIR/build/bin, which the
# script prints on its last line of stdout; a second run with the same source commit only prints
# it. About 36 minutes on 2 cores; JOBS=N sets the parallel jobs (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/build-folder.sh
suffix=""  # in the stamp of a PEER_CPU=avx512 build
if [ "${PEER_CPU:-native}" != native ]; then suffix=" $PEER_CPU"; fi
if [ $# -lt 1 ] || [ ! -f "$1/CMakeLists.txt" ] || [ ! -d "$1/ggml/src/iqk" ]; then
  echo "usage: scripts/build-ik-llama-cpp.sh SOURCE [DIR]" >&2
  echo "  SOURCE: an ik_llama.cpp source folder (expected SOURCE/CMakeLists.txt and" \
       "SOURCE/ggml/src/iqk; got '${1:-}')" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
lock_build_folder "${2:-build/ik_llama.cpp}"
bin=$root/build/bin

# The source's identity: its git commit where it is a checkout, else its top-level listing.
if git -C "$src" rev-parse HEAD > /dev/null 2>&1; then
  stamp="$(git -C "$src" rev-parse HEAD)${suffix}"
else
  stamp="$(ls -l --time-style=+%s "$src" | sha256sum | cut -c1-16)${suffix}"
fi

if [ ! -x "$bin/llama-bench" ] || [ "$(cat "$root/built-from" 2>/dev/null)" != "$stamp" ]; then
  start=$(date +%s)
  rm -rf "$root/build" "$root/built-from"
  generator=()
  if command -v ninja > /dev/null; then generator=(-G Ninja); fi
  cpu=(-DGGML_NATIVE=ON)
  if [ "${PEER_CPU:-native}" = avx512 ]; then
    # ik's GGML_AVX512 adds only -mavx512f/bw; its kernels need VL, DQ and CD too.
    flags="-mavx512vl -mavx512dq -mavx512cd -mbmi2"
    cpu=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
         -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVXVNNI=OFF
         "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags"
         "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=$root/build/bin" "-DCMAKE_BUILD_RPATH=\$ORIGIN")
  elif [ "${PEER_CPU:-native}" != native ]; then
    echo "build-ik-llama-cpp.sh: PEER_CPU must be native or avx512, found '$PEER_CPU'" >&2; exit 2
  fi
  cmake -S "$src" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cpu[@]}" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  cmake --build "$root/build" -j "${JOBS:-$(nproc)}" --target llama-bench >&2
  [ -x "$bin/llama-bench" ] || { echo "build-ik-llama-cpp.sh: $bin/llama-bench was not built" >&2
                                 exit 1; }
  echo "$stamp" > "$root/built-from"
  echo "build-ik-llama-cpp.sh: built llama-bench in $(( $(date +%s) - start )) s" >&2
fi
echo "$bin"
