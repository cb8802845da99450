#include "ops/matmul_blocks_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <type_traits>

#include <hwy/base.h>

#include "ops/matmul_group_neon.h"
#include "ops/matmul_quant_i8mm.h"
#include "ops/quantize_rows.h"

// Armv8.2 with i8mm for the whole file, as in ops/matmul_quant_i8mm.cc.
#pragma GCC target("arch=armv8.2-a+i8mm")

namespace kestrel::ops {
namespace {

#include "ops/count_dispatch-inl.h"

// The sum of a sub-block's first 16 activation quants, for Q2_K's mins per 16; the second
// half's is the block sum less it.
inline int32_t FirstHalfSum(const int8_t* q) { return vaddlvq_s8(vld1q_s8(q)); }
inline int32_t Difference(int32_t a, int32_t b) {  // wrapping, as ScaledBlockSum explains
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

// Q4_1 ... Q6_K 4 x (2 kPairs) i8mm: each sub-block of 32 decoded once into c[e][h] exactly as
// the sdot tile does (LoadGroupSubBlock), then 8 smmla per pair of tokens, the exact integer sums
// of 4 rows x 2 tokens (per half of 16 where the scales change there: Q6_K, Q3_K, Q2_K), each
// lane scaled by its row's scale x its token's and the mins added against the activation sums.
// Tokens past `tokens` repeat the last one and are not written.
template <GgmlBlockType T, size_t kPairs>
void GroupTile(size_t tokens, const uint8_t* w, const BlockLayout& layout, size_t r0,
               const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  constexpr BlockFormat F = FormatOf(T);
  const uint8_t* group = w + layout.GroupOffset(r0);
  float32x4_t acc01[kPairs], acc23[kPairs];  // lanes [r0 t, r0 u, r1 t, r1 u], rows 2-3
  Q8ActRow act[2 * kPairs];
  for (size_t i = 0; i < 2 * kPairs; ++i) {
    act[i] = Q8ActRowAt(x + (i < tokens ? i : tokens - 1) * x_row_bytes, k);
  }
  for (size_t p = 0; p < kPairs; ++p) {
    acc01[p] = vdupq_n_f32(0.0f);
    acc23[p] = vdupq_n_f32(0.0f);
  }
  GroupScaleVectors sv;
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    GroupScales<T>(layout, w, r0, blk, 1.0f, &sv);  // one lane per (row, token): whole mins
    for (size_t s = 0; s < F.SubBlocks(); ++s) {
      const size_t sub = blk * F.SubBlocks() + s;
      const uint8_t* p_sub = FullGroup<T>::SubBlock(group, sub);
      __builtin_prefetch(p_sub + 1024);
      int8x16_t c[4][2];
      LoadGroupSubBlock<T>(p_sub, c);
      for (size_t p = 0; p < kPairs; ++p) {
        const Q8ActRow& t = act[2 * p];
        const Q8ActRow& u = act[2 * p + 1];
        const int8_t* qt = t.q + sub * 32;
        const int8_t* qu = u.q + sub * 32;
        int8x16_t xv[4];
        LoadTokenPair(qt, qu, xv);
        const float32x4_t xs = PairLanes(t.scale[sub], u.scale[sub]);
        if constexpr (F.PerHalfScales()) {
          // Q6_K, Q3_K, Q2_K: a scale per half; Q2_K also a min, against the half's activation
          // sum (the first half's from its quants).
          [[maybe_unused]] float32x4_t sums[2];
          if constexpr (!F.centered()) {
            const int32_t first_t = FirstHalfSum(qt), first_u = FirstHalfSum(qu);
            sums[0] = PairLanes(t.scale[sub] * static_cast<float>(first_t),
                                u.scale[sub] * static_cast<float>(first_u));
            sums[1] = PairLanes(t.scale[sub] * static_cast<float>(Difference(t.sum[sub], first_t)),
                                u.scale[sub] * static_cast<float>(Difference(u.sum[sub], first_u)));
          }
          for (size_t half = 0; half < 2; ++half) {
            int32x4_t d01 = vdupq_n_s32(0), d23 = vdupq_n_s32(0);
            for (size_t e = 2 * half; e < 2 * half + 2; ++e) {
              d01 = vmmlaq_s32(d01, c[e][0], xv[e]);
              d23 = vmmlaq_s32(d23, c[e][1], xv[e]);
            }
            const size_t j = 2 * s + half;
            acc01[p] = vfmaq_f32(acc01[p], vcvtq_f32_s32(d01), vmulq_f32(sv.s01[j], xs));
            acc23[p] = vfmaq_f32(acc23[p], vcvtq_f32_s32(d23), vmulq_f32(sv.s23[j], xs));
            if constexpr (!F.centered()) {
              acc01[p] = vfmaq_f32(acc01[p], sv.m01[j], sums[half]);
              acc23[p] = vfmaq_f32(acc23[p], sv.m23[j], sums[half]);
            }
          }
        } else {
          int32x4_t d01 = vdupq_n_s32(0), d23 = vdupq_n_s32(0);
          for (size_t e = 0; e < 4; ++e) {
            d01 = vmmlaq_s32(d01, c[e][0], xv[e]);
            d23 = vmmlaq_s32(d23, c[e][1], xv[e]);
          }
          const size_t j = F.SubBlocks() == 1 ? 0 : s;
          const float32x4_t sum = PairLanes(t.scale[sub] * static_cast<float>(t.sum[sub]),
                                            u.scale[sub] * static_cast<float>(u.sum[sub]));
          acc01[p] = vfmaq_f32(acc01[p], vcvtq_f32_s32(d01), vmulq_f32(sv.s01[j], xs));
          acc23[p] = vfmaq_f32(acc23[p], vcvtq_f32_s32(d23), vmulq_f32(sv.s23[j], xs));
          acc01[p] = vfmaq_f32(acc01[p], sv.m01[j], sum);
          acc23[p] = vfmaq_f32(acc23[p], sv.m23[j], sum);
        }
      }
    }
  }
  for (size_t p = 0; p < kPairs; ++p) {
    StoreTokenPair(acc01[p], acc23[p], 2 * p + 1 < tokens, y + 2 * p * n_out, n_out);
  }
}

template <GgmlBlockType T>
void GroupTileForTokens(size_t tokens, const uint8_t* w, const BlockLayout& layout, size_t r0,
                        const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  static_assert(kI8mmTokenTile == 8, "DispatchCount<4> covers 1 to 4 pairs");
  DispatchCount<4>((tokens + 1) / 2, [&](auto pairs) {
    GroupTile<T, decltype(pairs)::value>(tokens, w, layout, r0, x, x_row_bytes, k, y, n_out);
  });
}

}  // namespace

void BlocksTile4xN_NeonI8mm(GgmlBlockType type, size_t tokens, const uint8_t* w,
                            const BlockLayout& layout, size_t r0, const uint8_t* x,
                            size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  DispatchBlockType(type, [&](auto t) {
    GroupTileForTokens<decltype(t)::value>(tokens, w, layout, r0, x, x_row_bytes, k, y, n_out);
  });
}

}  // namespace kestrel::ops

#endif  // __aarch64__, the only architecture that calls it (the group families' TileI8mm)
