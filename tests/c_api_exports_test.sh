#!/bin/bash
# libkestrel.so's dynamic symbol table defines the C API's kes_* calls and nothing else: the
# runtime, Highway, FlatBuffers and the C++ library's template instances inside it stay hidden
# (capi/kestrel.map), so they never clash with another copy in the process.
set -euo pipefail
lib=$1
defined=$(nm -D --defined-only "$lib" | awk '{print $3}')
others=$(grep -v '^kes_' <<<"$defined" || true)
if [[ -n "$others" ]]; then
  echo "FAIL: $lib exports symbols outside the C API:" >&2
  echo "$others" >&2
  exit 1
fi
count=$(grep -c '^kes_' <<<"$defined" || true)
if (( count < 20 )); then
  echo "FAIL: $lib exports only $count kes_* symbols" >&2
  exit 1
fi
echo "OK: $lib exports $count symbols, all kes_*"
