// How far ahead the decode kernels prefetch the weight stream they read once per token tile.
#pragma once

#include <cstddef>

namespace kestrel::ops {

// Weight matrices are read in one linear stream per thread. The hardware prefetcher alone keeps
// too few cache misses in flight to reach the core's read bandwidth, and it stops at every 4 KiB
// page; a software prefetch this far ahead covers both. Measured with bench/matmul_bench on the
// 262144 x 640 LM head (weights from DRAM, one core): on Zen 4, 2 KiB ahead took the q8 GEMV from
// 15.3 to 12.2 ms; on Zen 5, 8 KiB ahead against 2 KiB took q8 from 28 to 34-37 GB/s, Q5_0 from
// 25-31 to 31-36, Q4_K from 20-21 to 23-25 and Q6_K from 15-19 to 21-31 GB/s (4 KiB and 12-32
// KiB were slower than 8 KiB). Prefetches past the end of a matrix are harmless hints.
inline constexpr size_t kWeightPrefetchBytes = 8192;

}  // namespace kestrel::ops
