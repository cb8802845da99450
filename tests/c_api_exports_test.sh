#!/bin/bash
# libkestrel.so's dynamic symbol table defines the C API's kes_* calls and nothing else: the
# runtime, Highway, FlatBuffers and the C++ library's template instances inside it stay hidden
# (capi/kestrel.map), so they never clash with another copy in the process. Given the header,
# the exported names are exactly the functions it declares with KES_API: none missing (a call a
# program would fail to link), none extra (an internal kes_ helper leaking out).
# usage: c_api_exports_test.sh LIBKESTREL.so [kestrel.h]
set -euo pipefail
lib=$1
header=${2:-}
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
if [[ -n "$header" ]]; then
  # Declarations start "KES_API <type> kes_name(", the name on the line of KES_API or the next.
  declared=$(grep -A1 '^KES_API' "$header" | grep -v '^--$' | tr '\n' ' ' |
             grep -oE 'KES_API[^(;]*\(' | grep -oE 'kes_[a-z0-9_]+ *\($' | tr -d '( ' | sort -u)
  missing=$(comm -23 <(echo "$declared") <(sort -u <<<"$defined"))
  extra=$(comm -13 <(echo "$declared") <(sort -u <<<"$defined"))
  if [[ -n "$missing" || -n "$extra" ]]; then
    echo "FAIL: $lib against $header:" >&2
    [[ -n "$missing" ]] && echo "declared but not exported: $missing" >&2
    [[ -n "$extra" ]] && echo "exported but not declared: $extra" >&2
    exit 1
  fi
  echo "OK: $lib exports the $count calls $header declares, and nothing else"
  exit 0
fi
echo "OK: $lib exports $count symbols, all kes_*"
