// Dense f32 matmul over weights packed in panels of 16 rows (fb::DType::F32_PANELS).
//
// ops/matmul.h keeps the checkpoint's layout, one output feature per row, and forms each output as
// a dot product: a vector of partial sums per output, reduced across lanes at the end. At
// MiniLM's k = 384 those reductions and the tile's loop cost about a sixth of the FMA work
// (83% of the core's FMA peak at best). Panels put 16 output features in the lanes: panel p
// holds rows [16p, 16p + 16) column by column, so y[t, 16p..16p+16) += x[t, i] * panel column i
// is one broadcast FMA with nothing to reduce (ops/broadcast_fma-inl.h), and each output is one
// FMA chain over i = 0..k-1 in order. Its bits therefore depend neither on the token count, nor
// on which rows a thread takes, nor on the target's vector length.
#pragma once

#include <cstddef>

namespace kestrel::ops {

inline constexpr size_t kF32PanelRows = 16;

// Where row r's values start in the panels of a matrix of rows of k: column 0 of its panel plus
// its lane; value i of the row lies i * kF32PanelRows floats further.
inline size_t F32PanelRowOffset(size_t k, size_t r) {
  return r / kF32PanelRows * kF32PanelRows * k + r % kF32PanelRows;
}

// Floats of the packed form of an [n_out, k] matrix: n_out rounded up to whole panels, times k.
size_t F32PanelFloats(size_t n_out, size_t k);

// panels[(p * k + i) * 16 + j] = w[(16p + j) * k + i], 0 for rows past n_out.
void PackF32Panels(const float* w, size_t n_out, size_t k, float* panels);

// The contract of MatMulF32 (ops/matmul.h), w packed by PackF32Panels: y[t, r] = w[r, :] . x[t, :]
// for t < n_tokens and r in [row_begin, row_end); other columns of y are not touched.
void MatMulF32Panels(const float* w, const float* x, float* y, size_t n_tokens, size_t k,
                     size_t n_out, size_t row_begin, size_t row_end);

// MatMulF32Panels resolved to this CPU's target once (ops/targets.h).
decltype(&MatMulF32Panels) ResolveMatMulF32Panels();

}  // namespace kestrel::ops
