// Quantizes activations on the fly for the integer matmul kernels (dtype Q8_ACT).
//
// Each row of k elements (k a multiple of 32) becomes, in kQ8ActRowBytes(k) bytes:
//   int8  q[k]            round-to-nearest-even of x / scale, in -127..127
//   float scale[k / 32]   max |x| of the block / 127 (0 for an all-zero block)
//   int32 sum[k / 32]     sum of the block's q, for kernels whose weights are offset (Q4_0
//                         stores q + 8) and subtract the offset once per block
// Scales stay f32 (ggml rounds them to f16): activations are re-quantized every step, so there
// is nothing to save by storing them smaller, and f32 keeps the dot products closer to f32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// factor * sum, wrapping as an int32 SIMD lane does. QuantizeRows writes sums of at most
// 32 * 127 in magnitude, but a kernel may read a Q8_ACT buffer it did not write: a model file's
// buffers may overlap (plan checks keep every access inside the arena, not every value
// meaningful), and garbage sums must give garbage numbers, not undefined behaviour.
inline int32_t ScaledBlockSum(int32_t sum, int32_t factor) {
  return static_cast<int32_t>(static_cast<uint32_t>(sum) * static_cast<uint32_t>(factor));
}

inline constexpr size_t Q8ActRowBytes(size_t k) {
  return k + k / 32 * (sizeof(float) + sizeof(int32_t));
}

// One token's Q8_ACT row of k elements, as the kernels read it.
struct Q8ActRow {
  const int8_t* q;     // [k]
  const float* scale;  // [k / 32]
  const int32_t* sum;  // [k / 32]
};
inline Q8ActRow Q8ActRowAt(const uint8_t* row, size_t k) {
  const auto* scale = reinterpret_cast<const float*>(row + k);
  return {reinterpret_cast<const int8_t*>(row), scale,
          reinterpret_cast<const int32_t*>(scale + k / 32)};
}

// Tokens a quantized matmul takes at a time: as many Q8_ACT rows as fit in kL2ActivationBytes
// (a multiple of 16, the widest token tile: AVX-512 VNNI's token panels, and at least 16).
// Every 4-row group of weights passes over one block of tokens before the next block starts,
// so the activations stay in a core's L2 instead of streaming from L3 once per group: 512
// tokens of Gemma 3's ffn_down input (k = 2048) are 1.2 MB.
inline constexpr size_t kL2ActivationBytes = size_t{192} << 10;
inline constexpr size_t QuantMatMulTokenBlock(size_t k) {
  const size_t rows = kL2ActivationBytes / Q8ActRowBytes(k) / 16 * 16;
  return rows < 16 ? 16 : rows;
}

// Calls run(first, count) for consecutive blocks of QuantMatMulTokenBlock(k) of n_tokens tokens,
// or of min_block where that is more (a kernel that keeps its activations in L2 itself).
template <typename Run>
inline void ForEachTokenBlock(size_t n_tokens, size_t k, const Run& run, size_t min_block = 0) {
  const size_t block = QuantMatMulTokenBlock(k) < min_block ? min_block : QuantMatMulTokenBlock(k);
  for (size_t first = 0; first < n_tokens; first += block) {
    run(first, n_tokens - first < block ? n_tokens - first : block);
  }
}

// x: [n_rows, k] f32, out: n_rows rows of Q8ActRowBytes(k) bytes. k % 32 == 0.
void QuantizeRowsQ8(const float* x, size_t n_rows, size_t k, uint8_t* out);

// The same with one scale per super-block of 256 elements (k % 256 == 0), stored in each of its
// 8 block scales: coarser steps where a super-block's blocks differ in size (the K-quants'
// activations in llama.cpp, Q8_K, are quantized so), and the K-quants' token panels can then sum
// a super-block in integers (ops/matmul_panel_vnni-inl.h).
void QuantizeRowsQ8Super(const float* x, size_t n_rows, size_t k, uint8_t* out);

// The same for x[r][j] * factor[j] (factor: k f32). A converter that smooths activation outliers
// (SmoothQuant) stores 1 / s_j here and the weight's input channel j multiplied by s_j: the product
// is unchanged, and a channel whose values are far larger than its block's others no longer
// coarsens their int8 step.
void QuantizeRowsQ8Scaled(const float* x, size_t n_rows, size_t k, const float* factor,
                          uint8_t* out);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&QuantizeRowsQ8) ResolveQuantizeRowsQ8();
decltype(&QuantizeRowsQ8Super) ResolveQuantizeRowsQ8Super();
decltype(&QuantizeRowsQ8Scaled) ResolveQuantizeRowsQ8Scaled();

}  // namespace kestrel::ops
