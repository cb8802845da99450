// Root-mean-square normalization of rows, with a learned per-feature gain.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// x, y: [n_rows, dim], gamma: [dim].
// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * gamma[:]. y may equal x (in place).
// Serves token rows (dim = d_model) and QK-norm, where every head of every token is a row
// (n_rows = n_tokens * n_heads, dim = head_dim).
void RmsNorm(const float* x, const float* gamma, float* y, size_t n_rows, size_t dim, float eps);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&RmsNorm) ResolveRmsNorm();

}  // namespace kestrel::ops
