// How far ahead the decode kernels prefetch the weight stream they read once per token tile.
#pragma once

#include <cstddef>

namespace kestrel::ops {

// Weight matrices are read in one linear stream per thread. The hardware prefetcher alone keeps
// too few cache misses in flight to reach the core's read bandwidth, and it stops at every 4 KiB
// page; a software prefetch this far ahead covers both. On the LM head streamed from DRAM, on
// Zen 5, 8 KiB ahead read every weight type measured faster than 2 KiB, and 4 KiB and 12-32 KiB
// were slower than 8 KiB (figures: docs/kernels.md). Prefetches past the end of a matrix are
// harmless hints.
inline constexpr size_t kWeightPrefetchBytes = 8192;

}  // namespace kestrel::ops
