#!/usr/bin/env bash
# Installs everything, builds Release, Debug+ASan/UBSan, aarch64 and armv7, and runs every test.
# The real-model tests (label "model": the NumPy oracle comparison, the zero-allocation test)
# run in the Release build; the sanitizer build runs all the others, including end-to-end
# generation on a tiny generated Gemma 3 model; the ARM builds run under qemu-user
# (scripts/test-cross.sh says which tests on which emulated CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/install-deps.sh --cross
bash scripts/fetch-model.sh
# ggml's own quantizers, the K-quant tests' oracle (cached in models/; about 35 s the first time).
bash scripts/fetch-ggml-oracle.sh > /dev/null

bash scripts/build.sh release
(cd build/release && ctest --output-on-failure --timeout 1500)

bash scripts/build.sh asan
(cd build/asan && ctest --output-on-failure --timeout 1500 --label-exclude model)

bash scripts/test-cross.sh

echo "all tests passed in $(( $(date +%s) - start )) s"
