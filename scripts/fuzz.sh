#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/, docs/fuzzing.md), libFuzzer's own output on the terminal:
#   scripts/fuzz.sh [--jobs N] [TARGET|all] [SECONDS]
# TARGET: kes_loader, gguf_convert, hf_checkpoint, tokenizer, ct2_model or all (default); SECONDS per
# target (default 60). --jobs N runs N targets at once, each line prefixed with its target.
# Builds build/fuzz first (scripts/build.sh fuzz: clang, ASan, UBSan). Each target starts from
# its seed corpus (fuzz/corpus/<target>, kept in the repository) and from what earlier runs on
# this machine found (build/fuzz/work/<target>, where new inputs go). A crash, hang, leak or
# sanitizer report stops that target, leaves the input in build/fuzz/artifacts/<target>/ and
# makes the script exit 1: fix the bug, then copy the input to fuzz/regressions/<target>/ so
# the ordinary tests (ctest fuzz_replay_<target>) replay it from then on.
# The tokenizer target reads the fetched models' vocabularies (scripts/fetch-model.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
all=(kes_loader gguf_convert hf_checkpoint tokenizer ct2_model)
jobs=1
if [ "${1:-}" = --jobs ]; then
  jobs=${2:?--jobs needs a number}
  shift 2
fi
which=${1:-all}
seconds=${2:-60}
if [ "$which" = all ]; then
  targets=("${all[@]}")
elif [[ " ${all[*]} " == *" $which "* ]]; then
  targets=("$which")
else
  echo "scripts/fuzz.sh: error: unknown target '$which' (expected one of ${all[*]} or all)" >&2
  exit 2
fi
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "scripts/fuzz.sh: error: SECONDS must be a positive integer, found '$seconds'" >&2
  exit 2
fi

bash scripts/build.sh fuzz "${targets[@]/#/fuzz_}"

run_one() {  # target
  local t=$1
  mkdir -p "build/fuzz/work/$t" "build/fuzz/artifacts/$t"
  # -rss_limit_mb: the harnesses cap what they run (fuzz/fuzz_support.h), so more is a leak.
  # -timeout: one input taking 300 s is a hang. The limit is wall-clock time, and with --jobs
  # the five ASan targets share CI's 2 slow cores, where 30 s for one input proves no hang.
  # Inputs up to 256 KiB: the seeds are smaller.
  "build/fuzz/fuzz/fuzz_$t" "build/fuzz/work/$t" "fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout=300 -rss_limit_mb=2560 -max_len=262144 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$t/" 2>&1
}

status=0
declare -A outcome
if [ "$jobs" -le 1 ]; then
  for t in "${targets[@]}"; do
    log="build/fuzz/$t.log"
    if run_one "$t" | tee "$log"; then outcome[$t]=ok; else outcome[$t]=FAILED; status=1; fi
  done
else
  pids=()
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    ( set -o pipefail; run_one "$t" | tee "build/fuzz/$t.log" | sed -u "s/^/[$t] /" ) &
    pids+=("$!")
  done
  i=0
  for t in "${targets[@]}"; do
    if wait "${pids[$i]}"; then outcome[$t]=ok; else outcome[$t]=FAILED; status=1; fi
    i=$((i + 1))
  done
fi

echo "== fuzzing summary ($seconds s per target)"
for t in "${targets[@]}"; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/$t.log" | tail -1)
  echo "$t: ${outcome[$t]}, ${execs:-?} executions, corpus $(ls "build/fuzz/work/$t" | wc -l) found + $(ls "fuzz/corpus/$t" | wc -l) seeds"
  if [ "${outcome[$t]}" != ok ]; then
    echo "  inputs that failed: $(ls "build/fuzz/artifacts/$t" | tr '\n' ' ')"
  fi
done
exit $status
