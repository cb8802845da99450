// Layer normalization of rows (BERT, Whisper): zero mean, unit variance, then a learned
// per-feature gain and bias.
#pragma once

#include <cstddef>

namespace kestrel::ops {

// in, out: [n_rows, dim], gamma, beta: [dim]. out may equal in (in place).
// out[r, :] = (in[r, :] - mean) / sqrt(var + eps) * gamma[:] + beta[:], with mean and the
// biased variance var taken over in[r, :] (as torch.nn.LayerNorm). Accurate to a few f32
// roundings relative to the output's scale even when a row's mean dwarfs its spread.
void LayerNorm(const float* in, float* out, const float* gamma, const float* beta, size_t n_rows,
               size_t dim, float eps);

// The kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&LayerNorm) ResolveLayerNorm();

}  // namespace kestrel::ops
