#!/usr/bin/env bash
# ctest fixture: converts the real models (Gemma 3 270M, SmolLM2-135M-Instruct) to the .kes files
# the model tests use.
set -euo pipefail
convert=$1 gemma=$2 smollm2=$3 out=$4
for gguf in "$gemma" "$smollm2"; do
  if [ ! -s "$gguf" ]; then
    echo "error: $gguf is missing: run scripts/fetch-model.sh (the tests need the real models)" >&2
    exit 1
  fi
done
mkdir -p "$out"
for weights in keep f32 f16 q8 q4; do
  "$convert" "$gemma" "$out/gemma3-270m-$weights.kes" --weights "$weights"
done
for weights in keep f32 q8 q4; do
  "$convert" "$smollm2" "$out/smollm2-135m-$weights.kes" --weights "$weights"
done
