#!/usr/bin/env bash
# ctest fixture: converts the real models (Gemma 3 270M, SmolLM2-135M-Instruct, and the encoder
# all-MiniLM-L6-v2 from its Hugging Face folder) to the .kes files the model tests use.
set -euo pipefail
convert=$1 gemma=$2 smollm2=$3 out=$4 minilm=$5
for model in "$gemma" "$smollm2" "$minilm/model.safetensors"; do
  if [ ! -s "$model" ]; then
    echo "error: $model is missing: run scripts/fetch-model.sh (the tests need the real models)" >&2
    exit 1
  fi
done
mkdir -p "$out"
# keep: the default conversion. The others take 128-token prefill steps, so the oracle tests'
# 720-token prompt is prefilled in several chunks and Gemma's sliding-window rings (window +
# step slots) wrap, which the default 512-token steps would not do at that length.
"$convert" "$gemma" "$out/gemma3-270m-keep.kes"
for weights in f32 f16 q8 q4; do
  "$convert" "$gemma" "$out/gemma3-270m-$weights.kes" --weights "$weights" --prefill-tokens 128
done
"$convert" "$smollm2" "$out/smollm2-135m-keep.kes"
for weights in f32 q8 q4; do
  "$convert" "$smollm2" "$out/smollm2-135m-$weights.kes" --weights "$weights" --prefill-tokens 128
done
for weights in f32 f16 q8 q4; do
  "$convert" "$minilm" "$out/minilm-l6-$weights.kes" --weights "$weights"
done
