#include "ops/matmul_blocks_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include <hwy/base.h>

#include "ops/matmul_group_neon.h"
#include "ops/quantize_rows.h"

// Armv8.2 with dotprod for the whole file, as in ops/matmul_quant_dotprod.cc.
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace kestrel::ops {
namespace {

#include "ops/count_dispatch-inl.h"

inline int8x16_t Broadcast8(const int8_t* x8) {
  int64_t chunk;
  std::memcpy(&chunk, x8, 8);
  return vreinterpretq_s8_s64(vdupq_n_s64(chunk));
}

template <GgmlBlockType T, size_t kTokens>
void GroupTile(const uint8_t* w, const BlockLayout& layout, size_t r0, const uint8_t* x,
               size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  constexpr BlockFormat F = FormatOf(T);
  const uint8_t* group = w + layout.GroupOffset(r0);
  float32x4_t acc01[kTokens], acc23[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc01[t] = vdupq_n_f32(0.0f);
    acc23[t] = vdupq_n_f32(0.0f);
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  GroupScaleVectors sv;
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    GroupScales<T>(layout, w, r0, blk, 0.5f, &sv);  // each row's two lanes add half its mins
    for (size_t s = 0; s < F.SubBlocks(); ++s) {
      const size_t sub = blk * F.SubBlocks() + s;
      const uint8_t* p = FullGroup<T>::SubBlock(group, sub);
      __builtin_prefetch(p + 1024);
      int8x16_t c[4][2];
      LoadGroupSubBlock<T>(p, c);
      for (size_t t = 0; t < kTokens; ++t) {
        const int8_t* xb = act[t].q + sub * 32;
        const float xs = act[t].scale[sub];
        // Two halves of 16: Q6_K, Q3_K and Q2_K scales change there; the others add them up.
        int32x4_t d01[2], d23[2];
        for (size_t half = 0; half < 2; ++half) {
          d01[half] = vdupq_n_s32(0);
          d23[half] = vdupq_n_s32(0);
          for (size_t e = 2 * half; e < 2 * half + 2; ++e) {
            const int8x16_t xv = Broadcast8(xb + 8 * e);
            d01[half] = vdotq_s32(d01[half], c[e][0], xv);
            d23[half] = vdotq_s32(d23[half], c[e][1], xv);
          }
        }
        if constexpr (F.PerHalfScales()) {
          // Q6_K, Q3_K, Q2_K: a scale per half; Q2_K also a min, against the half's activation
          // sum (the first half's from its quants).
          [[maybe_unused]] float sums[2];
          if constexpr (!F.centered()) {
            const int32_t first = vaddlvq_s8(vld1q_s8(xb));
            sums[0] = xs * static_cast<float>(first);
            sums[1] = xs * static_cast<float>(act[t].sum[sub] - first);
          }
          for (size_t half = 0; half < 2; ++half) {
            const size_t j = 2 * s + half;
            acc01[t] = vfmaq_f32(acc01[t], vcvtq_f32_s32(d01[half]), vmulq_n_f32(sv.s01[j], xs));
            acc23[t] = vfmaq_f32(acc23[t], vcvtq_f32_s32(d23[half]), vmulq_n_f32(sv.s23[j], xs));
            if constexpr (!F.centered()) {
              acc01[t] = vfmaq_n_f32(acc01[t], sv.m01[j], sums[half]);
              acc23[t] = vfmaq_n_f32(acc23[t], sv.m23[j], sums[half]);
            }
          }
        } else {
          const size_t j = F.SubBlocks() == 1 ? 0 : s;
          const float sum = xs * static_cast<float>(act[t].sum[sub]);
          acc01[t] = vfmaq_f32(acc01[t], vcvtq_f32_s32(vaddq_s32(d01[0], d01[1])),
                               vmulq_n_f32(sv.s01[j], xs));
          acc23[t] = vfmaq_f32(acc23[t], vcvtq_f32_s32(vaddq_s32(d23[0], d23[1])),
                               vmulq_n_f32(sv.s23[j], xs));
          acc01[t] = vfmaq_n_f32(acc01[t], sv.m01[j], sum);
          acc23[t] = vfmaq_n_f32(acc23[t], sv.m23[j], sum);
        }
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    vst1q_f32(y + t * n_out, vpaddq_f32(acc01[t], acc23[t]));  // [r0 r1 r2 r3]
  }
}

template <GgmlBlockType T>
void GroupTileForTokens(size_t tokens, const uint8_t* w, const BlockLayout& layout, size_t r0,
                        const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  DispatchCount<4>(tokens, [&](auto n) {
    GroupTile<T, decltype(n)::value>(w, layout, r0, x, x_row_bytes, k, y, n_out);
  });
}

}  // namespace

void BlocksTile4xN_NeonDotProd(GgmlBlockType type, size_t tokens, const uint8_t* w,
                               const BlockLayout& layout, size_t r0, const uint8_t* x,
                               size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  DispatchBlockType(type, [&](auto t) {
    GroupTileForTokens<decltype(t)::value>(tokens, w, layout, r0, x, x_row_bytes, k, y, n_out);
  });
}

}  // namespace kestrel::ops

#endif  // __aarch64__, the only architecture that calls it (the group families' TileDotProd)
