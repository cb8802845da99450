// Activation quantization (ops/quantize_rows.h), compiled for every Highway target.
#include "ops/quantize_rows.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quantize_rows.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <cstring>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes of the quantizer's vectors at most: one block of 32 per vector.
inline constexpr size_t kMaxBatchLanes = 32;

// Lanes [i, i + N) of block b of the row x, times their channels' factors when kScaled.
template <bool kScaled, class DF>
HWY_INLINE hn::Vec<DF> LoadBlockPart(DF df, const float* HWY_RESTRICT x,
                                     const float* HWY_RESTRICT factor, size_t b, size_t i) {
  const auto v = hn::LoadU(df, x + b * 32 + i);
  if constexpr (kScaled) return hn::Mul(v, hn::LoadU(df, factor + b * 32 + i));
  return v;
}

// Block b's quants (x times inv, rounded) into q; returns their per-lane sums. Finite rows give
// quants in -127..127 already. The clamp is for rows with inf or NaN (weights a model file may
// hold): inf * 0 and NaN convert to INT_MIN on x86, whose sums would overflow int32 and whose
// -128 no kernel expects.
template <bool kScaled, class DF>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> QuantizeBlock(DF df, const float* HWY_RESTRICT x,
                                                         const float* HWY_RESTRICT factor, size_t b,
                                                         hn::Vec<DF> inv, int8_t* HWY_RESTRICT q) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const auto lo = hn::Set(di, -127), hi = hn::Set(di, 127);
  auto sum = hn::Zero(di);
  for (size_t i = 0; i < 32; i += hn::Lanes(df)) {
    const auto x_i = LoadBlockPart<kScaled>(df, x, factor, b, i);
    const auto qi = hn::Min(hn::Max(hn::NearestInt(hn::Mul(x_i, inv)), lo), hi);
    sum = hn::Add(sum, qi);
    hn::StoreU(hn::DemoteTo(d8, qi), d8, q + b * 32 + i);
  }
  return sum;
}

// The lanes of max |x| over block b (times factors when kScaled).
template <bool kScaled, class DF>
HWY_INLINE hn::Vec<DF> BlockAbsMax(DF df, const float* HWY_RESTRICT x,
                                   const float* HWY_RESTRICT factor, size_t b) {
  auto amax = hn::Zero(df);
  for (size_t i = 0; i < 32; i += hn::Lanes(df)) {
    amax = hn::Max(amax, hn::Abs(LoadBlockPart<kScaled>(df, x, factor, b, i)));
  }
  return amax;
}

// Quantizes blocks [b0, b0 + count) of one row (x: the row, q: its quants, scale_out and
// sum_out: its per-block arrays), a block at a time: each block's maximum and quant sum by
// reductions across lanes. What QuantizeBatch below leaves over.
template <bool kScaled, class DF>
HWY_INLINE void QuantizeBlocks(DF df, const float* HWY_RESTRICT x, const float* HWY_RESTRICT factor,
                               size_t b0, size_t count, int8_t* HWY_RESTRICT q,
                               uint8_t* HWY_RESTRICT scale_out, uint8_t* HWY_RESTRICT sum_out) {
  const hn::RebindToSigned<DF> di;
  for (size_t b = b0; b < b0 + count; ++b) {
    const float scale =
        hn::GetLane(hn::MaxOfLanes(df, BlockAbsMax<kScaled>(df, x, factor, b))) / 127.0f;
    const auto inv = hn::Set(df, scale != 0.0f ? 1.0f / scale : 0.0f);
    const auto sum = QuantizeBlock<kScaled>(df, x, factor, b, inv, q);
    const int32_t quant_sum = hn::GetLane(hn::SumOfLanes(di, sum));
    // memcpy: stores into the byte buffer without assuming its alignment.
    memcpy(scale_out + b * sizeof(float), &scale, sizeof(float));
    memcpy(sum_out + b * sizeof(int32_t), &quant_sum, sizeof(int32_t));
  }
}

#if HWY_TARGET != HWY_SCALAR  // one lane: nothing to fold, and no ConcatEven / ConcatOdd
// rows[0, N) of N lanes each (N = Lanes(d), a power of two) -> one vector whose lane i is
// rows[i] folded by combine: log2(N) levels of pairing even and odd lanes (ConcatEven /
// ConcatOdd), N - 1 combines in all, where reducing each row on its own takes log2(N) shuffles
// and combines per row. Overwrites rows.
template <class D, class Combine>
HWY_INLINE hn::Vec<D> ReduceRowsToLanes(D d, hn::TFromD<D>* HWY_RESTRICT rows, Combine combine) {
  const size_t N = hn::Lanes(d);
  for (size_t m = N; m > 1; m /= 2) {
    for (size_t i = 0; i < m / 2; ++i) {
      const auto lo = hn::Load(d, rows + 2 * i * N), hi = hn::Load(d, rows + (2 * i + 1) * N);
      hn::Store(combine(hn::ConcatEven(d, hi, lo), hn::ConcatOdd(d, hi, lo)), d, rows + i * N);
    }
  }
  return hn::Load(d, rows);
}

// QuantizeBlocks for count <= N blocks (N = Lanes(df)), one block per lane where the block
// reductions are concerned: the maxima and the quant sums of all of them are folded together
// (ReduceRowsToLanes), and the scales and their inverses computed as one vector (IEEE division:
// the very values of the scalar code; in scalar code on ARMv7, whose NEON cannot divide).
template <bool kScaled, class DF>
HWY_INLINE void QuantizeBatch(DF df, const float* HWY_RESTRICT x, const float* HWY_RESTRICT factor,
                              size_t b0, size_t count, int8_t* HWY_RESTRICT q,
                              uint8_t* HWY_RESTRICT scale_out, uint8_t* HWY_RESTRICT sum_out) {
  const hn::RebindToSigned<DF> di;
  const size_t N = hn::Lanes(df);
  alignas(HWY_MAX_BYTES) float maxima[kMaxBatchLanes * kMaxBatchLanes];
  alignas(HWY_MAX_BYTES) int32_t sums[kMaxBatchLanes * kMaxBatchLanes];
  alignas(HWY_MAX_BYTES) float inverse[kMaxBatchLanes];
  for (size_t j = 0; j < N; ++j) {
    auto amax = hn::Zero(df);  // the lanes of blocks past count fold to 0
    if (j < count) amax = BlockAbsMax<kScaled>(df, x, factor, b0 + j);
    hn::Store(amax, df, maxima + j * N);
  }
  const auto block_max =
      ReduceRowsToLanes(df, maxima, [](auto a, auto b) { return hn::Max(a, b); });
#if HWY_ARCH_ARM_V7
  // ARMv7 NEON has no division: Highway's Div refines a reciprocal estimate, which is not the
  // correctly rounded quotient that the scalar code and every other target give.
  alignas(HWY_MAX_BYTES) float scale_lanes[kMaxBatchLanes];
  hn::Store(block_max, df, scale_lanes);
  for (size_t j = 0; j < N; ++j) {
    scale_lanes[j] /= 127.0f;
    inverse[j] = scale_lanes[j] != 0.0f ? 1.0f / scale_lanes[j] : 0.0f;
  }
  const auto scale = hn::Load(df, scale_lanes);
#else
  const auto scale = hn::Div(block_max, hn::Set(df, 127.0f));
  const auto nonzero = hn::Ne(scale, hn::Zero(df));
  hn::Store(hn::IfThenElseZero(nonzero, hn::Div(hn::Set(df, 1.0f), scale)), df, inverse);
#endif
  for (size_t j = 0; j < N; ++j) {
    auto sum = hn::Zero(di);
    if (j < count) sum = QuantizeBlock<kScaled>(df, x, factor, b0 + j, hn::Set(df, inverse[j]), q);
    hn::Store(sum, di, sums + j * N);
  }
  const auto sum = ReduceRowsToLanes(di, sums, [](auto a, auto b) { return hn::Add(a, b); });
  hn::Store(scale, df, maxima);  // the staging of the count lanes copied out
  hn::Store(sum, di, sums);
  memcpy(scale_out + b0 * sizeof(float), maxima, count * sizeof(float));
  memcpy(sum_out + b0 * sizeof(int32_t), sums, count * sizeof(int32_t));
}
#endif  // HWY_TARGET != HWY_SCALAR

// Where row r of a Q8_ACT buffer keeps its quants, block scales and block sums.
struct Q8ActRowOut {
  int8_t* q;
  uint8_t* scale;  // k / 32 f32, stored with memcpy (the buffer promises no alignment)
  uint8_t* sum;    // k / 32 int32, likewise
};
inline Q8ActRowOut Q8ActRowOutAt(uint8_t* out, size_t r, size_t k) {
  uint8_t* dst = out + r * Q8ActRowBytes(k);
  return {reinterpret_cast<int8_t*>(dst), dst + k, dst + k + k / 32 * sizeof(float)};
}

// factor: nullptr, or k per-channel multipliers applied to every row before it is quantized.
template <bool kScaled>
void QuantizeRowsQ8Body(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                        const float* HWY_RESTRICT factor, uint8_t* HWY_RESTRICT out) {
  // At most one block per vector, so every block is a whole number of vectors on every target
  // (SVE reaches 64 f32 lanes).
  const hn::CappedTag<float, kMaxBatchLanes> df;
  const size_t N = hn::Lanes(df);
  // The batches need N a power of two and the capped vector to be the whole register (Highway's
  // SVE ConcatEven / ConcatOdd work on the full vector).
  const bool batched = N > 1 && (N & (N - 1)) == 0 && N == hn::Lanes(hn::ScalableTag<float>());
  const size_t blocks = k / 32;
  for (size_t r = 0; r < n_rows; ++r) {
    const float* HWY_RESTRICT row = x + r * k;
    const Q8ActRowOut o = Q8ActRowOutAt(out, r, k);
    int8_t* HWY_RESTRICT q = o.q;
    uint8_t* scale_out = o.scale;
    uint8_t* sum_out = o.sum;
    size_t b = 0;
#if HWY_TARGET != HWY_SCALAR
    if (batched) {
      for (; b + N / 2 < blocks; b += N) {  // batches at least half full
        QuantizeBatch<kScaled>(df, row, factor, b, HWY_MIN(N, blocks - b), q, scale_out, sum_out);
      }
    }
#else
    (void)batched;
#endif
    QuantizeBlocks<kScaled>(df, row, factor, b, blocks - b, q, scale_out, sum_out);
  }
}

// One scale per super-block of 256 (k % 256 == 0), written to each of its 8 blocks: the max |x|
// of the super-block / 127, so that the K-quants' kernels may sum a super-block in integers.
void QuantizeRowsQ8SuperPerTarget(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                                  uint8_t* HWY_RESTRICT out) {
  const hn::CappedTag<float, kMaxBatchLanes> df;
  const hn::RebindToSigned<decltype(df)> di;
  constexpr size_t kBlocks = 8;  // of 32 per super-block
  const size_t blocks = k / 32;
  for (size_t r = 0; r < n_rows; ++r) {
    const float* HWY_RESTRICT row = x + r * k;
    const Q8ActRowOut o = Q8ActRowOutAt(out, r, k);
    for (size_t b0 = 0; b0 < blocks; b0 += kBlocks) {
      auto amax = hn::Zero(df);
      for (size_t b = b0; b < b0 + kBlocks; ++b) {
        amax = hn::Max(amax, BlockAbsMax<false>(df, row, nullptr, b));
      }
      const float scale = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127.0f;
      const auto inv = hn::Set(df, scale != 0.0f ? 1.0f / scale : 0.0f);
      for (size_t b = b0; b < b0 + kBlocks; ++b) {
        const int32_t quant_sum =
            hn::GetLane(hn::SumOfLanes(di, QuantizeBlock<false>(df, row, nullptr, b, inv, o.q)));
        memcpy(o.scale + b * sizeof(float), &scale, sizeof(float));
        memcpy(o.sum + b * sizeof(int32_t), &quant_sum, sizeof(int32_t));
      }
    }
  }
}

void QuantizeRowsQ8PerTarget(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                             uint8_t* HWY_RESTRICT out) {
  QuantizeRowsQ8Body<false>(x, n_rows, k, nullptr, out);
}

void QuantizeRowsQ8ScaledPerTarget(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                                   const float* HWY_RESTRICT factor, uint8_t* HWY_RESTRICT out) {
  QuantizeRowsQ8Body<true>(x, n_rows, k, factor, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(QuantizeRowsQ8PerTarget);

void QuantizeRowsQ8(const float* x, size_t n_rows, size_t k, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8PerTarget)(x, n_rows, k, out);
}

KESTREL_DEFINE_RESOLVE(QuantizeRowsQ8)

HWY_EXPORT(QuantizeRowsQ8SuperPerTarget);

void QuantizeRowsQ8Super(const float* x, size_t n_rows, size_t k, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8SuperPerTarget)(x, n_rows, k, out);
}

KESTREL_DEFINE_RESOLVE(QuantizeRowsQ8Super)

HWY_EXPORT(QuantizeRowsQ8ScaledPerTarget);

void QuantizeRowsQ8Scaled(const float* x, size_t n_rows, size_t k, const float* factor,
                          uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8ScaledPerTarget)(x, n_rows, k, factor, out);
}

KESTREL_DEFINE_RESOLVE(QuantizeRowsQ8Scaled)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
