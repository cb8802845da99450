#!/usr/bin/env bash
# Installs everything, builds, converts Gemma 3 270M to .kes and generates text from a prompt.
#   scripts/demo.sh ["PROMPT"] [extra kestrel run flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
prompt=${1:-"The three most useful things to know about kestrels are"}
shift || true
bash scripts/install-deps.sh
bash scripts/fetch-model.sh
bash scripts/build.sh release kestrel kestrel-convert
# --weights keep (the default for a quantized file): the Q4_K_M file's own types, 235 MiB.
model=models/gemma3-270m-keep.kes
if [ ! -s "$model" ] || [ "$model" -ot build/release/kestrel-convert ]; then
  build/release/kestrel-convert models/gemma-3-270m-q4_k_m.gguf "$model" --weights keep
fi
build/release/kestrel inspect "$model" --ctx 4096
echo
build/release/kestrel run "$model" -p "$prompt" -n 96 --temp 0 --threads "$(nproc)" "$@"
