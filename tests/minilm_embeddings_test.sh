#!/usr/bin/env bash
# all-MiniLM-L6-v2 embeddings from `kestrel embed` against the float64 NumPy oracle written from
# the Hugging Face BERT definition (tests/py/bert_oracle.py; checked once by hand against
# sentence-transformers: 1 - cosine <= 7e-13), on the 120 texts of tests/py/embed_corpus.py
# (mixed lengths in batches, 6 texts over the 256-token limit, so truncation is exercised).
# Each .kes runs twice: from the texts (Kestrel's WordPiece tokenizer) and from the oracle's
# token ids (--ids: the model alone).
#
# Bars: the issue's 0.99999 for f32; f16 (weights rounded to half) stays within it (measured
# 0.9999995). q8 and q4 quantize the activations too, per 32 values, smoothed by the converter
# (SmoothQuant calibrated on its own texts, converters/hf/smooth_quant.h): the issue's 0.999 for
# q8 (measured 0.99908-0.99910 on the AVX2, AVX-512 and AVX-512 VNNI kernels; 0.99785 without
# smoothing), and q4's measured 0.884 (0.868 without) less a margin. Both minimums are on 3-5
# token texts such as "...", whose few tokens leave the mean pooling little to average out.
set -euo pipefail
python=$1 source=$2 kestrel=$3 models=$4 checkpoint=$5
args=()
for case in "f32 0.99999" "f16 0.99999" "q8 0.999" "q4 0.875"; do
  read -r weights bar <<< "$case"
  args+=(--model "$models/minilm-l6-$weights.kes" --min-cosine "$bar")
done
exec "$python" "$source/tests/py/compare_embeddings.py" --kestrel "$kestrel" \
  --checkpoint "$checkpoint" --texts corpus --both --kestrel-arg=--threads --kestrel-arg=2 "${args[@]}"
