// Pooling one sequence's token rows into a single embedding (sentence-transformers' Pooling and
// Normalize modules).
#pragma once

#include <cstddef>

namespace kestrel::ops {

enum class PoolMode {
  kMean,  // average of the rows
  kCls,   // the first row (the [CLS] token)
  kMax,   // element-wise maximum over the rows
  kLast,  // the last row (a causal decoder's embedding: Qwen3-Embedding)
};

// rows: [n_rows, dim], out: [dim] (not overlapping rows). Pools the rows by mode, then, when
// l2_normalize, divides out by max(||out||_2, 1e-12) (torch F.normalize). An empty sequence
// (n_rows == 0) pools to zeros.
void PoolRows(const float* rows, size_t n_rows, size_t dim, PoolMode mode, bool l2_normalize,
              float* out);

// The kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&PoolRows) ResolvePoolRows();

}  // namespace kestrel::ops
