#include "ops/matmul_quant_dotprod.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include <hwy/base.h>

#include "ops/matmul_group_neon.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"

// The whole file is compiled for Armv8.2 with dotprod (arm_neon.h declares vdotq_s32 for that
// architecture, so a plain "+dotprod" on Armv8.0 cannot inline it; and templates instantiate at
// the end of the file, so push/pop around them does not work either). Nothing here may run on
// an older core: the kernels are called only where CpuHasDotProd() (ops/cpu_features.cc,
// compiled for the baseline) holds.
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace kestrel::ops {
namespace {

#include "ops/count_dispatch-inl.h"

// One 16-byte vector holds one 8-value chunk of two rows, [r0 | r1] (the 8-byte interleave),
// multiplied against the token's matching 8 quants in both halves: the int32 lanes come out as
// [r0 r0 r1 r1], so the block's chunks add up vertically and each row's sum stays apart.
template <size_t kTokens, bool kQ4>
void GroupTile(const uint8_t* w, const uint16_t* scales, const uint8_t* x, size_t x_row_bytes,
               size_t k, float* y, size_t n_out) {
  constexpr size_t kBlockBytes = kQ4 ? kQ4BlockBytes : kQ8BlockBytes;
  const size_t blocks = k / kQuantBlockElems;
  float32x4_t acc01[kTokens], acc23[kTokens];  // lanes [r0 r0 r1 r1] and [r2 r2 r3 r3]
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc01[t] = vdupq_n_f32(0.0f);
    acc23[t] = vdupq_n_f32(0.0f);
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQuantGroupRows * kBlockBytes;
    __builtin_prefetch(wb + 1024);
    int8x16_t c[4][2];  // chunk j (elements 8j..8j+7) of rows 2h and 2h + 1
    LoadQuantGroupBlock<kQ4>(wb, c);
    float32x4_t s01, s23;
    QuantGroupScales(scales + b * 4, &s01, &s23);
    for (size_t t = 0; t < kTokens; ++t) {
      const int8_t* xb = act[t].q + b * kQuantBlockElems;
      int32x4_t d01 = vdupq_n_s32(0), d23 = vdupq_n_s32(0);
      for (size_t j = 0; j < 4; ++j) {
        int64_t chunk;
        std::memcpy(&chunk, xb + 8 * j, 8);
        const int8x16_t xv = vreinterpretq_s8_s64(vdupq_n_s64(chunk));
        d01 = vdotq_s32(d01, c[j][0], xv);
        d23 = vdotq_s32(d23, c[j][1], xv);
      }
      if constexpr (kQ4) {
        // Quants are stored + 8: subtract 8 * sum(x) per row, half of it in each of its lanes.
        const int32x4_t offset = vdupq_n_s32(ScaledBlockSum(act[t].sum[b], 4));
        d01 = vsubq_s32(d01, offset);
        d23 = vsubq_s32(d23, offset);
      }
      const float sx = act[t].scale[b];
      acc01[t] = vfmaq_f32(acc01[t], vcvtq_f32_s32(d01), vmulq_n_f32(s01, sx));
      acc23[t] = vfmaq_f32(acc23[t], vcvtq_f32_s32(d23), vmulq_n_f32(s23, sx));
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    // [r0 r0 r1 r1], [r2 r2 r3 r3] -> [r0 r1 r2 r3]
    vst1q_f32(y + t * n_out, vpaddq_f32(acc01[t], acc23[t]));
  }
}

template <bool kQ4>
void GroupTileForTokens(size_t tokens, const uint8_t* w, const uint16_t* scales, const uint8_t* x,
                        size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  DispatchCount<4>(tokens, [&](auto n) {
    GroupTile<decltype(n)::value, kQ4>(w, scales, x, x_row_bytes, k, y, n_out);
  });
}

}  // namespace

void Q8Q4Tile4xN_NeonDotProd(bool q4, size_t tokens, const uint8_t* w, const uint16_t* scales,
                             const uint8_t* x, size_t x_row_bytes, size_t k, float* y,
                             size_t n_out) {
  if (q4) return GroupTileForTokens<true>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
  GroupTileForTokens<false>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
}

}  // namespace kestrel::ops

#endif  // __aarch64__, the only architecture that calls it (the group families' TileDotProd)
