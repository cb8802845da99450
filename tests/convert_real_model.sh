#!/usr/bin/env bash
# ctest fixture: converts the real Gemma 3 270M GGUF to the .kes files the model tests use.
set -euo pipefail
convert=$1 gguf=$2 out=$3
if [ ! -s "$gguf" ]; then
  echo "error: $gguf is missing: run scripts/fetch-model.sh (the tests need the real model)" >&2
  exit 1
fi
mkdir -p "$out"
"$convert" "$gguf" "$out/gemma3-270m-f32.kes" --weights f32
"$convert" "$gguf" "$out/gemma3-270m-f16.kes" --weights f16
"$convert" "$gguf" "$out/gemma3-270m-q8.kes" --weights q8
"$convert" "$gguf" "$out/gemma3-270m-q4.kes" --weights q4
