// Dense matrix multiplication with f32 activations and f32, f16 or bf16 weights.
//
// Weights are stored the way checkpoints store linear layers: one output feature per row,
// so every output is a dot product of two contiguous rows. Callers split work over threads by
// output rows; each call writes only its rows. Kernels are dispatched to the best Highway target
// of this CPU; callers see plain functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include <hwy/base.h>

namespace kestrel::ops {

// w: [n_out, k] row-major, x: [n_tokens, k], y: [n_tokens, n_out].
// Sets y[t, r] = dot(w[r, :], x[t, :]) for every t < n_tokens and r in [row_begin, row_end);
// the other columns of y are not touched. Sums accumulate in f32. y must not overlap w or x.
void MatMulF32(const float* w, const float* x, float* y, size_t n_tokens, size_t k, size_t n_out,
               size_t row_begin, size_t row_end);
void MatMulF16(const hwy::float16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
               size_t n_out, size_t row_begin, size_t row_end);
void MatMulBF16(const hwy::bfloat16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
                size_t n_out, size_t row_begin, size_t row_end);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&MatMulF32) ResolveMatMulF32();
decltype(&MatMulF16) ResolveMatMulF16();
decltype(&MatMulBF16) ResolveMatMulBF16();

}  // namespace kestrel::ops
