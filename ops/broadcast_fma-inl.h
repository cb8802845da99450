// The broadcast-FMA product shared by the encoder attention (ops/sequence_attention.cc) and the
// f32 panel matmul (ops/matmul_f32_panels.cc): rows of output vectors, each the sum over steps s
// of a broadcast scalar (one per row and step) times the step's vectors. Every loaded vector
// serves up to kBroadcastFmaMaxItems rows and every broadcast serves one or two vectors, with no
// reduction across lanes, so the loop is FMA-bound where a dot-product kernel pays a horizontal
// sum per output.
//
// Include after hwy/highway.h from a file compiled per target (foreach_target.h): the toggle
// guard below lets each target's pass re-include this file.

#if defined(KESTREL_OPS_BROADCAST_FMA_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_BROADCAST_FMA_INL_H_
#undef KESTREL_OPS_BROADCAST_FMA_INL_H_
#else
#define KESTREL_OPS_BROADCAST_FMA_INL_H_
#endif

#include <cstddef>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "ops/kernel_inline.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes of a vector, at most: SVE's may reach 64; 16 lanes already make MiniLM's chunks of
// queries and the f32 weight panels (ops/matmul_f32_panels.h) one vector wide.
inline constexpr size_t kBroadcastFmaMaxLanes = 16;
using BroadcastFmaTag = hn::CappedTag<float, kBroadcastFmaMaxLanes>;
// Rows per pass: their rows x vectors accumulators stay in registers. 8 where the target has 32
// vector registers; 5 where it has 16 (x86 before AVX-512, ARMv7), so that 10 accumulators and
// the loaded vectors fit.
#if (HWY_ARCH_X86 && HWY_TARGET != HWY_AVX3 && HWY_TARGET != HWY_AVX3_DL && \
     HWY_TARGET != HWY_SCALAR) ||                                           \
    HWY_ARCH_ARM_V7
inline constexpr size_t kBroadcastFmaMaxItems = 5;
#else
inline constexpr size_t kBroadcastFmaMaxItems = 8;
#endif

// One product over `items` rows of kVecs (1 or 2) vectors of N = Lanes(BroadcastFmaTag) floats:
// for i < items, vector j < kVecs and lane c < N,
//   rows[i * row_stride + j * N + c] = start_i
//       + sum_{s < steps} scalars[s * step_stride + i * item_stride]
//                         * vectors[s * vector_stride + j * second_vector + c]
// summed in the order of s, one FMA per step. start_i is 0, or with `accumulate` the row's old
// value, times item_factor[i] when that is given.
struct BroadcastFma {
  const float* HWY_RESTRICT vectors;
  size_t vector_stride;
  size_t second_vector;  // offset of a step's second vector from its first
  size_t steps;
  const float* HWY_RESTRICT scalars;
  size_t step_stride;
  size_t item_stride;
  bool accumulate;
  const float* HWY_RESTRICT item_factor;  // or nullptr
  float* HWY_RESTRICT rows;
  size_t row_stride;
  size_t items;
  // Floats ahead of each step's vectors to prefetch (0: none), for vectors streamed from memory.
  size_t prefetch_ahead = 0;

  // The same product from row i on.
  BroadcastFma From(size_t i) const {
    BroadcastFma p = *this;
    p.scalars += i * item_stride;
    if (item_factor != nullptr) p.item_factor += i;
    p.rows += i * row_stride;
    p.items -= i;
    return p;
  }
};

// a += s * x0 and, with two vectors per row, b += s * x1: one broadcast serves both.
template <size_t kVecs, class D, class V>
HWY_INLINE void BroadcastFmaStep(D d, float s, V x0, V x1, V& a, V& b) {
  const V sv = hn::Set(d, s);
  a = hn::MulAdd(sv, x0, a);
  if constexpr (kVecs > 1) b = hn::MulAdd(sv, x1, b);
}

// a, b = row i's start.
template <size_t kVecs, class D, class V>
HWY_INLINE void BroadcastFmaStart(D d, const BroadcastFma& p, size_t i, V& a, V& b) {
  a = hn::Zero(d);
  b = a;
  if (!p.accumulate) return;
  const float* HWY_RESTRICT row = p.rows + i * p.row_stride;
  a = hn::LoadU(d, row);
  if constexpr (kVecs > 1) b = hn::LoadU(d, row + hn::Lanes(d));
  if (p.item_factor == nullptr) return;
  const V factor = hn::Set(d, p.item_factor[i]);
  a = hn::Mul(a, factor);
  if constexpr (kVecs > 1) b = hn::Mul(b, factor);
}

template <size_t kVecs, class D, class V>
HWY_INLINE void BroadcastFmaStore(D d, V a, V b, const BroadcastFma& p, size_t i) {
  float* HWY_RESTRICT row = p.rows + i * p.row_stride;
  hn::StoreU(a, d, row);
  if constexpr (kVecs > 1) hn::StoreU(b, d, row + hn::Lanes(d));
}

// The product for its first kItems rows. Vectors are sizeless on SVE and cannot live in arrays,
// so the accumulators are named (a_i for a row's first vector, b_i for its second); `if
// constexpr` drops the unused ones.
template <size_t kItems, size_t kVecs>
KESTREL_KERNEL_INLINE void BroadcastFmaItems(const BroadcastFma& p) {
  static_assert(kItems >= 1 && kItems <= 8 && kVecs >= 1 && kVecs <= 2);
  const BroadcastFmaTag d;
  using V = hn::Vec<BroadcastFmaTag>;
  const size_t is = p.item_stride, second = p.second_vector;
  V a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7;
  BroadcastFmaStart<kVecs>(d, p, 0, a0, b0);
  if constexpr (kItems > 1) BroadcastFmaStart<kVecs>(d, p, 1, a1, b1);
  if constexpr (kItems > 2) BroadcastFmaStart<kVecs>(d, p, 2, a2, b2);
  if constexpr (kItems > 3) BroadcastFmaStart<kVecs>(d, p, 3, a3, b3);
  if constexpr (kItems > 4) BroadcastFmaStart<kVecs>(d, p, 4, a4, b4);
  if constexpr (kItems > 5) BroadcastFmaStart<kVecs>(d, p, 5, a5, b5);
  if constexpr (kItems > 6) BroadcastFmaStart<kVecs>(d, p, 6, a6, b6);
  if constexpr (kItems > 7) BroadcastFmaStart<kVecs>(d, p, 7, a7, b7);
  const float* HWY_RESTRICT x = p.vectors;
  const float* HWY_RESTRICT sc = p.scalars;
  for (size_t s = 0; s < p.steps; ++s, x += p.vector_stride, sc += p.step_stride) {
    if (p.prefetch_ahead != 0) {
      hwy::Prefetch(x + p.prefetch_ahead);
      if constexpr (kVecs > 1) hwy::Prefetch(x + second + p.prefetch_ahead);
    }
    const V x0 = hn::LoadU(d, x);
    const V x1 = kVecs > 1 ? hn::LoadU(d, x + second) : x0;
    BroadcastFmaStep<kVecs>(d, sc[0], x0, x1, a0, b0);
    if constexpr (kItems > 1) BroadcastFmaStep<kVecs>(d, sc[is], x0, x1, a1, b1);
    if constexpr (kItems > 2) BroadcastFmaStep<kVecs>(d, sc[2 * is], x0, x1, a2, b2);
    if constexpr (kItems > 3) BroadcastFmaStep<kVecs>(d, sc[3 * is], x0, x1, a3, b3);
    if constexpr (kItems > 4) BroadcastFmaStep<kVecs>(d, sc[4 * is], x0, x1, a4, b4);
    if constexpr (kItems > 5) BroadcastFmaStep<kVecs>(d, sc[5 * is], x0, x1, a5, b5);
    if constexpr (kItems > 6) BroadcastFmaStep<kVecs>(d, sc[6 * is], x0, x1, a6, b6);
    if constexpr (kItems > 7) BroadcastFmaStep<kVecs>(d, sc[7 * is], x0, x1, a7, b7);
  }
  BroadcastFmaStore<kVecs>(d, a0, b0, p, 0);
  if constexpr (kItems > 1) BroadcastFmaStore<kVecs>(d, a1, b1, p, 1);
  if constexpr (kItems > 2) BroadcastFmaStore<kVecs>(d, a2, b2, p, 2);
  if constexpr (kItems > 3) BroadcastFmaStore<kVecs>(d, a3, b3, p, 3);
  if constexpr (kItems > 4) BroadcastFmaStore<kVecs>(d, a4, b4, p, 4);
  if constexpr (kItems > 5) BroadcastFmaStore<kVecs>(d, a5, b5, p, 5);
  if constexpr (kItems > 6) BroadcastFmaStore<kVecs>(d, a6, b6, p, 6);
  if constexpr (kItems > 7) BroadcastFmaStore<kVecs>(d, a7, b7, p, 7);
}

// The product for its last p.items (<= kItems) rows, kItems named at compile time.
template <size_t kItems, size_t kVecs>
HWY_INLINE void BroadcastFmaRest(const BroadcastFma& p) {
  if constexpr (kItems >= 1) {
    if (p.items == kItems) return BroadcastFmaItems<kItems, kVecs>(p);
    BroadcastFmaRest<kItems - 1, kVecs>(p);
  }
}

// The whole product: passes of kBroadcastFmaMaxItems rows, then one of the rest.
template <size_t kVecs>
HWY_INLINE void BroadcastFmaAll(const BroadcastFma& p) {
  size_t i = 0;
  for (; i + kBroadcastFmaMaxItems <= p.items; i += kBroadcastFmaMaxItems) {
    BroadcastFmaItems<kBroadcastFmaMaxItems, kVecs>(p.From(i));
  }
  if (i < p.items) BroadcastFmaRest<kBroadcastFmaMaxItems - 1, kVecs>(p.From(i));
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_BROADCAST_FMA_INL_H_ toggle
