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
# Configured for this machine (GGML_NATIVE=ON). The tool lands in DIR/build/bin, which the
# script prints on its last line of stdout; a second run with the same source commit only prints
# it. About 36 minutes on 2 cores; JOBS=N sets the parallel jobs (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ ! -f "$1/CMakeLists.txt" ] || [ ! -d "$1/ggml/src/iqk" ]; then
  echo "usage: scripts/build-ik-llama-cpp.sh SOURCE [DIR]" >&2
  echo "  SOURCE: an ik_llama.cpp source folder (expected SOURCE/CMakeLists.txt and" \
       "SOURCE/ggml/src/iqk; got '${1:-}')" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
root=${2:-build/ik_llama.cpp}
mkdir -p "$root"
root=$(cd "$root" && pwd)
bin=$root/build/bin
exec 9> "$root/.lock"
flock 9

# The source's identity: its git commit where it is a checkout, else its top-level listing.
if git -C "$src" rev-parse HEAD > /dev/null 2>&1; then
  stamp=$(git -C "$src" rev-parse HEAD)
else
  stamp=$(ls -l --time-style=+%s "$src" | sha256sum | cut -c1-16)
fi

if [ ! -x "$bin/llama-bench" ] || [ "$(cat "$root/built-from" 2>/dev/null)" != "$stamp" ]; then
  start=$(date +%s)
  rm -rf "$root/build" "$root/built-from"
  generator=()
  if command -v ninja > /dev/null; then generator=(-G Ninja); fi
  cmake -S "$src" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  cmake --build "$root/build" -j "${JOBS:-$(nproc)}" --target llama-bench >&2
  [ -x "$bin/llama-bench" ] || { echo "build-ik-llama-cpp.sh: $bin/llama-bench was not built" >&2
                                 exit 1; }
  echo "$stamp" > "$root/built-from"
  echo "build-ik-llama-cpp.sh: built llama-bench in $(( $(date +%s) - start )) s" >&2
fi
echo "$bin"
