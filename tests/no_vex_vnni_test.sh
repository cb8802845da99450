#!/usr/bin/env bash
# The x86 kernels' int8 dot products must use the EVEX (AVX-512 VNNI) encoding of vpdpbusd:
# Highway 1.0.3's AVX3_DL target lets GCC emit the VEX (AVX-VNNI) one, which Ice Lake and Zen 4
# do not have (ops/simd_helpers-inl.h, DotBytesAccumulate). This disassembles the kernels' library and
# fails on any VEX-encoded VNNI instruction, or when no EVEX vpdpbusd is there at all (the
# AVX3_DL kernels were not built).
#   no_vex_vnni_test.sh LIBRARY
set -euo pipefail
library=${1:?usage: no_vex_vnni_test.sh LIBRARY}
listing=$(objdump -d --no-show-raw-insn "$library")
vex=$(grep -c '{vex} *vpdp' <<<"$listing" || true)
evex=$(grep -c 'vpdpbusd' <<<"$listing" || true)
echo "$library: $evex vpdpbusd instructions, $vex of them VEX-encoded"
if [ "$vex" != 0 ]; then
  grep -m 5 '{vex} *vpdp' <<<"$listing" >&2
  echo "VEX-encoded VNNI instructions found: they fault on AVX-512 VNNI cores without AVX-VNNI" >&2
  exit 1
fi
if [ "$evex" = 0 ]; then
  echo "no vpdpbusd at all: the AVX3_DL quantized kernels are missing" >&2
  exit 1
fi
