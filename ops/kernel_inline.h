// KESTREL_KERNEL_INLINE: for a kernel's unrolled per-pass body, which its driver calls with a
// handful of compile-time shapes. Inline in optimized builds, where it costs nothing to compile;
// out of line under AddressSanitizer: gcc 12 with -fsanitize=address,undefined spends minutes
// per function (its loop-closed SSA update, once per loop, over every block of the function)
// when a driver inlines a dozen such loops and each carries the sanitizers' checks:
// ops/matmul_f32_panels.cc took 980 s for its AVX2 target alone (112 s without UBSan), which
// made the CI's ASan build wait on that one file. A call per pass costs nothing measurable
// there, and the checks are the same.
#ifndef KESTREL_OPS_KERNEL_INLINE_H_
#define KESTREL_OPS_KERNEL_INLINE_H_

#include <hwy/base.h>

#if defined(__SANITIZE_ADDRESS__)
#define KESTREL_KERNEL_INLINE HWY_NOINLINE
#else
#define KESTREL_KERNEL_INLINE HWY_INLINE
#endif

#endif  // KESTREL_OPS_KERNEL_INLINE_H_
