#!/usr/bin/env bash
# Builds Kestrel's static board binaries (scripts/build-board.sh --tests: docs/boards.md) for
# 64-bit ARM (aarch64) and 32-bit ARMv7 with the test suite in the same tree, and runs the tests
# under qemu-user, once per emulated CPU, so that every Highway target an ARM board can dispatch
# to is tested in the libraries the board binaries are linked from:
#   aarch64, -cpu max,sve-default-vector-length=16 (SVE2_128, with dotprod and i8mm: Neoverse
#            N2 and V2, Cortex-A710 class): every test whose result depends on the CPU
#            (cpu_dependent below: the kernels, end-to-end numerics for every weight type,
#            K-quant and architecture, the threading, the quantizers, float conversions, the
#            audio front end, the zero-allocation runs), the ops tests on SVE2_128;
#   aarch64, qemu's default CPU (SVE2 with 512-bit vectors): the ops tests on the length-agnostic
#            SVE2 target, whose every loop and tail then spans four 128-bit blocks. Only those:
#            qemu emulates 512-bit SVE about 4.5 times slower than 128-bit (a tiny Whisper
#            transcription: 73 s against 16 s), and a model's steps are the same kernels;
#   aarch64, -cpu max,sve-default-vector-length=32 (SVE_256: Neoverse V1, Graviton3) and
#            cortex-a72 (NEON only): the ops tests on that CPU's own target, the thread pool, the
#            CLI and the tiny-model end-to-end tests (every weight type);
#   aarch64, cortex-a72 also has no dotprod (Raspberry Pi 4 class): the quantized matmuls take
#            the portable Highway kernels instead of the sdot tiles, so that CPU also runs the
#            K-quant end-to-end runs and the tiny-model zero-allocation test (`kestrel cpu` must
#            say the sdot kernels are not used there, and used on qemu's other CPUs);
#   aarch64, cortex-a76 has dotprod but no i8mm (Raspberry Pi 5 class): the quantized matmul
#            tests on the sdot tiles for every token count, which the other CPUs (i8mm: qemu's
#            default and max) run only for one token, their prompts taking the smmla tiles
#            (`kestrel cpu` must say i8mm: no there and on cortex-a72, yes on the others);
#   armv7 (NEON, chosen at compile time): the whole suite but the real GGUF's tensors
#            against gguf-py (host_only below), the slowest tests of host logic (host_logic
#            below) and the decoder embedders' oracle comparison (native_numerics); the suite
#            includes the refusal to start on a CPU without NEON or VFPv4, also on an ARMv6 one
#            (tests/armv7_without_neon_test.sh).
# Then it runs the board binaries (`kestrel run` and `kestrel bench`) on the tiny model with no
# ARM libraries on the library path. The board builds take -mtune for the flags their users pass
# (docs/boards.md): -mcpu=cortex-a76 would not run on the emulated Cortex-A72.
# The cross-compiled shared library is scripts/build.sh aarch64's (scripts/test-install.sh
# aarch64, by hand); CI checks the native one.
# Needs scripts/install-deps.sh --cross, and the native Release build's tests run first: the
# tiny-model test compares the ARM logits with the reference that build wrote.
set -euo pipefail
cd "$(dirname "$0")/.."

# ctest -R pattern of the ops tests: every kernel against its reference (the quantized ones:
# MatMulQ4/Q8, QuantizeRowsQ8, EmbedQuant, OpsMatMulBlocks, OpsEmbedBlocks; int8 KV:
# AttentionKvTest).
ops='^(Ops|Attention|MatMulQ|QuantizeRows|EmbedQuant)'
# The tests repeated on each extra emulated CPU: the ops tests, and end to end per weight type:
# f32, f16, bf16, q8, q4 (WeightDtypes/TinyRunTest) and the GGUF's own mix of kept types
# (TinyModel/TinyModelCrossTest), and the CLI's own tests (CliTest: convert, run, bench on the
# tiny model).
subset="$ops|^(ThreadPool|TinyModel/|TinyModelTest\.|WeightDtypes/TinyRunTest|TinyBert|CliTest\.)"
# On the CPU without dotprod also: the K-quants end to end (q4_k_m has Q4_K, Q6_K and the Q5_0
# and Q8_0 fallbacks, q5_k Q5_K and Q5_1; the other recipes add no type; kept Q3_K and Q2_K) and the
# tiny-model zero-allocation test (every weight type, every KV type).
# On the CPU with dotprod but no i8mm: the quantized matmul kernels' tests (the sdot prompt tiles).
sdot_subset='^(OpsMatMulBlocks|MatMulQ)'
no_dotprod_subset="$subset|^(Recipes/ConvertKquant\.TypesValuesAndLogits/llama_q(4_k_m|5_k)|Types/ConvertKeepLowBit|TinyZeroAlloc)"
# The real GGUF's every tensor against gguf-py: the dequantizers are portable scalar code whose
# every type RandomBlocksTest checks bit for bit against gguf-py on every target; the real file
# adds nothing under qemu but a minute of emulated SHA-256 over 1 GB of floats.
host_only='^RealModel\.EveryTensorMatchesGgufPy$'
# On the SVE2_128 CPU: every test whose result depends on the CPU (the kernels on its target,
# end-to-end numerics through them for every weight type, K-quant and architecture, the
# threading, the quantizers and float conversions, the audio front end, the zero-allocation
# runs). The rest of the suite is host logic (parsers, tokenizers, the CLI, the C
# API's calls), which runs the same on every 64-bit CPU: the native build runs it, and armv7 runs
# it under emulation with ARM's unsigned char and a 32-bit size_t.
cpu_dependent="$no_dotprod_subset|^(Recipes/ConvertKquant|AllSupportedTypes/RandomBlocksTest|Types/QuantizeKTest|QuantizeTest|DequantizeRows?|FloatConvert|Fp16|SmoothQuantConversion|CpuCount|SplitRange|SharedModel/SessionConcurrency|EncoderConcurrency|SessionRewindTest|TinyWhisper|Weights/TinyWhisper(Encoder|Decoder)|TinyZeroAlloc(Audio|Interposer)?|LogMel|Resample|TinyGgufTest|Gemma2Test|Gemma3SizesTest|Phi3(PartialRotary|LongRope)?Test|Qwen3Test|SmolLm3Test)\\."
# Left to the native build on armv7 too: the slowest tests of host logic, the CLI's long
# generations (--ignore-eos past the context, --timings, bench at depths: 475 s of emulated test
# time on aarch64, a fifth of its suite), the C API's transcription against the CLI's and its
# abort between windows, its chat turns, kestrel chat, kestrel perplexity's chunking and
# KL-divergence bookkeeping (90 s emulated; the models it scores run in the end-to-end tests),
# and the bench scripts' real-shape GGUF writer and skeletons (60 s, nearly all of it Python on
# the host).
# Also native only: the decoder embedding models against the host's NumPy oracle (about 40 s
# each under emulation, attention over texts of up to 200 tokens); on ARM their kernels are the
# ops tests' (causal sequence attention, pooling, RoPE on every target) and
# TinyZeroAllocDecoderEmbedding runs their whole path.
native_numerics='^Pooling/DecoderEmbedding\.'
host_logic='^(Families/LongGenerationCliTest\.|CApiTranscribe\.(TinyWhisperEqualsKestrelTranscribe|AbortStopsTheCallBeforeItsNextWindow)$|CApiChat\.|ChatCommand\.|PerplexityTest\.|RealShapeGguf\.)'

# Checks one line of `kestrel cpu` on the emulated CPU: check_cpu BUILD_DIR WHAT EXPECTED, WHAT
# "target" (the Highway target chosen), "dotprod" or "i8mm" (yes or no: the sdot or smmla
# kernels used).
check_cpu() {
  local found pattern
  case "$2" in
    target) pattern='s/^target chosen: *//p' ;;
    dotprod) pattern='s/^dotprod: *\([a-z]*\).*/\1/p' ;;
    i8mm) pattern='s/^i8mm: *\([a-z]*\).*/\1/p' ;;
  esac
  found=$("${emulator[@]}" "$1/kestrel" cpu | sed -n "$pattern")
  echo "== $1, QEMU_CPU=${QEMU_CPU:-default}: $2: $found"
  if [ "$found" != "$3" ]; then
    echo "error: expected $2 '$3' on the emulated CPU, found '$found'" >&2
    exit 1
  fi
}

for board in "aarch64 -mtune=cortex-a76" "armv7 -mtune=cortex-a7"; do
  read -r arch flags <<< "$board"
  build=build/board-$arch
  start=$(date +%s)
  # Only the test executables of the tests run below are built (scripts/test-executables.sh):
  # aarch64 37 of 74, armv7 66 (not the CLI's long generations, perplexity, the C API's chat or
  # the real-shape GGUF writer: host logic it leaves to the native build).
  if [ "$arch" = aarch64 ]; then
    executables=$(bash scripts/test-executables.sh build/release --run "$ops" --run "$subset" \
      --run "$cpu_dependent" --run "$no_dotprod_subset" --run "$sdot_subset")
  else
    executables=$(bash scripts/test-executables.sh build/release --skip "$host_only" \
      --skip "$host_logic" --skip "$native_numerics" --skip-label model)
  fi
  KESTREL_TEST_EXECUTABLES=$executables bash scripts/build-board.sh --tests "$arch" "$flags"
  if ! file "dist/$arch/kestrel" | grep -q "statically linked"; then
    echo "error: dist/$arch/kestrel is not statically linked" >&2
    exit 1
  fi
  echo "== $arch ($flags): built in $(( $(date +%s) - start )) s"
  start=$(date +%s)
  if [ "$arch" = aarch64 ]; then
    emulator=(qemu-aarch64)
    unset QEMU_CPU
    check_cpu "$build" target SVE2
    check_cpu "$build" dotprod yes
    check_cpu "$build" i8mm yes
    (cd "$build" && KESTREL_TEST_TARGETS=SVE2 \
      ctest --output-on-failure --timeout 900 -j "$(nproc)" -R "$ops")
    for config in "max,sve-default-vector-length=16 SVE2_128 yes yes" \
                  "max,sve-default-vector-length=32 SVE_256 yes yes" "cortex-a72 NEON no no" \
                  "cortex-a76 NEON yes no"; do
      read -r QEMU_CPU KESTREL_TEST_TARGETS dotprod i8mm <<< "$config"
      export QEMU_CPU KESTREL_TEST_TARGETS
      check_cpu "$build" target "$KESTREL_TEST_TARGETS"
      check_cpu "$build" dotprod "$dotprod"
      check_cpu "$build" i8mm "$i8mm"
      pattern=$subset
      if [ "$KESTREL_TEST_TARGETS" = SVE2_128 ]; then
        pattern=$cpu_dependent
      elif [ "$dotprod" = no ]; then
        pattern=$no_dotprod_subset
      elif [ "$i8mm" = no ]; then
        pattern=$sdot_subset
      fi
      (cd "$build" && ctest --output-on-failure --timeout 900 -j "$(nproc)" -R "$pattern")
    done
    unset QEMU_CPU KESTREL_TEST_TARGETS
  else
    emulator=(qemu-arm)
    check_cpu "$build" target NEON
    (cd "$build" && ctest --output-on-failure --timeout 900 -j "$(nproc)" \
      -E "$host_only|$host_logic|$native_numerics")
  fi
  echo "== $arch: tests ran in $(( $(date +%s) - start )) s"

  # The board binaries themselves, with nothing but the emulator.
  tiny=build/release/test-tmp/reference/tiny.kes
  QEMU_LD_PREFIX=/nonexistent "${emulator[0]}" "dist/$arch/kestrel" run "$tiny" -p "hello" -n 8 \
    --temp 0 --threads 2
  QEMU_LD_PREFIX=/nonexistent "${emulator[0]}" "dist/$arch/kestrel" bench "$tiny" -p 32 -n 16 \
    -t 1,2 -r 2
done
