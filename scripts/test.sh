#!/usr/bin/env bash
# Installs everything, builds Release, Debug+ASan/UBSan, and the aarch64 and armv7 board builds,
# and runs every test;
# a ThreadSanitizer build of the threaded tests; and each fuzz target for a minute.
# The real-model tests (label "model": the NumPy oracle comparison, the zero-allocation test)
# run in the Release build; the sanitizer build runs all the others, including end-to-end
# generation on a tiny generated Gemma 3 model; the ARM builds run under qemu-user
# (scripts/test-cross.sh says which tests on which emulated CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
echo "== disk at start: $(df -h --output=avail . | tail -1) free"
bash scripts/install-deps.sh --cross
# Every C and C++ file laid out as .clang-format says (a few seconds; before anything builds).
bash scripts/check-format.sh
# The models download (the network) while ggml's quantizers and the Release build compile (the
# CPU); the tests wait for them. Their output is shown once they are done.
mkdir -p build
bash scripts/fetch-model.sh > build/fetch-model.log 2>&1 &
fetch_models=$!
# ggml's own quantizers, the K-quant tests' oracle (cached in models/; about 35 s the first time).
bash scripts/fetch-ggml-oracle.sh > /dev/null
echo "== dependencies and oracle: $(( $(date +%s) - start )) s"

# Two tests at a time (one per core): most tests are single-threaded, and the whole run must stay
# under CI's 45 minutes on 2 cores with the TSan and fuzz stages. The tests are independent
# processes (shared files are made once under a lock; scratch names carry the process id).
stage_start=$(date +%s)
bash scripts/build.sh release
release_built=$(date +%s)
fetched=0
wait "$fetch_models" || fetched=$?
cat build/fetch-model.log
if [ "$fetched" != 0 ]; then
  echo "error: scripts/fetch-model.sh failed ($fetched)" >&2
  exit 1
fi
echo "== models: waited $(( $(date +%s) - release_built )) s for them after the build"
(cd build/release && ctest --output-on-failure --timeout 1500 -j "$(nproc)")
echo "== release: built in $(( release_built - stage_start )) s, tests ran in $(( $(date +%s) - release_built )) s"
# The Python package (python/) built against this build's install, and its pytest suite.
python_start=$(date +%s)
bash scripts/test-python.sh
echo "== python: built and tested in $(( $(date +%s) - python_start )) s"
# The real-model tests' conversions and oracle logits (about 4 GB: f32 .kes files, the long
# prompts' logits) are done with; only reference/ (tiny models' host logits) is read by the
# cross tests. CI machines' disks vary (one filled up during the ASan link).
find build/release/test-tmp -maxdepth 1 -type f \( -name '*.kes' -o -name '*.f32' \) -delete
echo "== disk after the Release tests: $(df -h --output=avail . | tail -1) free"

# The kernels at -O0, as a program's Debug build compiles them (build.sh o0): compiled only.
o0_start=$(date +%s)
bash scripts/build.sh o0 kestrel_ops
rm -rf build/o0  # nothing runs from it; CI's disk is better spent on the ASan build
echo "== o0: kernels compiled in $(( $(date +%s) - o0_start )) s"

stage_start=$(date +%s)
asan_skips='^(RealModel\.EveryTensorMatchesGgufPy|no_vex_vnni|RealShapeGguf\..*)$'
# Only the test executables those tests are in (not the model_ ones; scripts/test-executables.sh).
asan_executables=$(bash scripts/test-executables.sh build/release --skip-label model \
  --skip "$asan_skips")
KESTREL_TEST_EXECUTABLES=$asan_executables bash scripts/build.sh asan
asan_built=$(date +%s)
# The real-model tests (label model) run in Release only, and so do the real GGUF's every tensor
# against gguf-py (half a minute under ASan; RandomBlocksTest checks every type's dequantizer bit
# for bit here), the disassembly of the kernels for their VNNI encoding (no_vex_vnni: the
# instructions do not depend on the sanitizers, and the Debug library is slow to disassemble),
# and the bench scripts' real-shape GGUF writer and skeletons (RealShapeGguf: 50 s, nearly all
# of it Python, which the sanitizers do not see).
(cd build/asan && ctest --output-on-failure --timeout 1500 --label-exclude model -E "$asan_skips" \
  -j "$(nproc)")
echo "== asan: built in $(( asan_built - stage_start )) s, tests ran in $(( $(date +%s) - asan_built )) s"

# ThreadSanitizer on the threaded code: the thread pool, two sessions (and two encoders) on one
# model from two threads, a decode step's attention split across a session's threads, the
# tiny-model logits with 2 threads, the abort calls from another thread. Only these tests are built: 2 to 3.5 minutes, then 30-45 s
# of tests, measured on 2 cores that other builds kept busy (about 150 s of CPU in all). Any
# report fails the run (halt_on_error; otherwise TSan's exit code 66 at the end would).
tsan_start=$(date +%s)
bash scripts/build.sh tsan thread_pool_test session_concurrency_test ops_attention_kv_test \
  tiny_model_logits_test c_api_test c_api_embed_test c_api_transcribe_test
tsan_built=$(date +%s)
(cd build/tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --output-on-failure --timeout 900 -j "$(nproc)" \
  -R '^(ThreadPool\.|SplitRange\.|SharedModel/SessionConcurrency\.|EncoderConcurrency\.|AttentionKvTest\.Partitions|TinyModel/TinyModelLogits\.|.*CApiTest\.(TwoSessionsOfOneModelOnTwoThreads|AbortFromAnotherThread)|CApiEmbedConcurrency\.|CApiTranscribe\.AbortFromAnotherThread)')
echo "== tsan: built in $(( tsan_built - tsan_start )) s, tests ran in $(( $(date +%s) - tsan_built )) s"

# Fuzz smoke: every libFuzzer target (fuzz/: the .kes loader, GGUF conversion, Hugging Face
# checkpoints, tokenizers, CTranslate2 model.bin) for 60 s from its seed corpus, all five at once
# on the two cores, so they take one minute (scripts/fuzz.sh; longer runs by hand,
# docs/fuzzing.md). Any crash, leak or sanitizer report fails the run.
fuzz_start=$(date +%s)
bash scripts/fuzz.sh --jobs 5 all 60
echo "== fuzz: built and ran in $(( $(date +%s) - fuzz_start )) s"

bash scripts/test-cross.sh

# The installed library (cmake --install of the Release and the aarch64 board builds): the C and
# C++ examples built with find_package and pkg-config, add_subdirectory and FetchContent
# consumers.
install_start=$(date +%s)
bash scripts/test-install.sh native board consumers
echo "== install: checked in $(( $(date +%s) - install_start )) s"

echo "all tests passed in $(( $(date +%s) - start )) s"
