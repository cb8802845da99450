#include "ops/matmul_quant_i8mm.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "ops/matmul_group_neon.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"

// The whole file is compiled for Armv8.2 with i8mm (arm_neon.h declares vmmlaq_s32 for that
// architecture; see ops/matmul_quant_dotprod.cc for why not push/pop). Nothing here may run on
// a core without it: the kernels are called only where CpuHasI8mm() (ops/cpu_features.cc,
// compiled for the baseline) holds.
#pragma GCC target("arch=armv8.2-a+i8mm")

namespace kestrel::ops {
namespace {

// Q8_0 / Q4_0 4 x (2 kPairs) i8mm. Each 32-element block: the group's 4 rows as c[e][h] (two
// rows per vector, ops/matmul_group_neon.h), each pair of tokens as x[e] (two tokens per
// vector); 8 smmla per pair give the block's exact integer sums of the 4 rows x 2 tokens, one
// per lane, which the f32 accumulators take scaled by row scale x token scale. Tokens past
// `tokens` (an odd last one's partner) repeat the last token and are not written.
template <size_t kPairs, bool kQ4>
void GroupTile(size_t tokens, const uint8_t* w, const uint16_t* scales, const uint8_t* x,
               size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  constexpr size_t kBlockBytes = kQ4 ? kQ4BlockBytes : kQ8BlockBytes;
  const size_t blocks = k / kQuantBlockElems;
  float32x4_t acc01[kPairs], acc23[kPairs];  // lanes [r0 t, r0 u, r1 t, r1 u], rows 2-3
  Q8ActRow act[2 * kPairs];
  for (size_t i = 0; i < 2 * kPairs; ++i) {
    act[i] = Q8ActRowAt(x + (i < tokens ? i : tokens - 1) * x_row_bytes, k);
  }
  for (size_t p = 0; p < kPairs; ++p) {
    acc01[p] = vdupq_n_f32(0.0f);
    acc23[p] = vdupq_n_f32(0.0f);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w + b * kQuantGroupRows * kBlockBytes;
    __builtin_prefetch(wb + 1024);
    int8x16_t c[4][2];
    LoadQuantGroupBlock<kQ4>(wb, c);
    float32x4_t s01, s23;
    QuantGroupScales(scales + b * kQuantGroupRows, &s01, &s23);
    for (size_t p = 0; p < kPairs; ++p) {
      const Q8ActRow& t = act[2 * p];
      const Q8ActRow& u = act[2 * p + 1];
      int8x16_t xv[4];
      LoadTokenPair(t.q + b * kQuantBlockElems, u.q + b * kQuantBlockElems, xv);
      int32x4_t d01 = vdupq_n_s32(0), d23 = vdupq_n_s32(0);
      for (size_t e = 0; e < 4; ++e) {
        d01 = vmmlaq_s32(d01, c[e][0], xv[e]);
        d23 = vmmlaq_s32(d23, c[e][1], xv[e]);
      }
      if constexpr (kQ4) {
        // Quants are stored + 8: subtract 8 * sum(x) from each (row, token) lane.
        const int32x4_t offset =
            PairLanes(ScaledBlockSum(t.sum[b], 8), ScaledBlockSum(u.sum[b], 8));
        d01 = vsubq_s32(d01, offset);
        d23 = vsubq_s32(d23, offset);
      }
      const float32x4_t sx = PairLanes(t.scale[b], u.scale[b]);
      acc01[p] = vfmaq_f32(acc01[p], vcvtq_f32_s32(d01), vmulq_f32(s01, sx));
      acc23[p] = vfmaq_f32(acc23[p], vcvtq_f32_s32(d23), vmulq_f32(s23, sx));
    }
  }
  for (size_t p = 0; p < kPairs; ++p) {
    StoreTokenPair(acc01[p], acc23[p], 2 * p + 1 < tokens, y + 2 * p * n_out, n_out);
  }
}

template <bool kQ4>
void GroupTileForTokens(size_t tokens, const uint8_t* w, const uint16_t* scales, const uint8_t* x,
                        size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  static_assert(kI8mmTokenTile == 8, "the cases below cover 1 to 4 pairs");
  switch ((tokens + 1) / 2) {
    case 1: return GroupTile<1, kQ4>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
    case 2: return GroupTile<2, kQ4>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
    case 3: return GroupTile<3, kQ4>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
    default: return GroupTile<4, kQ4>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
  }
}

}  // namespace

void Q8Q4Tile4xN_NeonI8mm(bool q4, size_t tokens, const uint8_t* w, const uint16_t* scales,
                          const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  if (q4) return GroupTileForTokens<true>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
  GroupTileForTokens<false>(tokens, w, scales, x, x_row_bytes, k, y, n_out);
}

}  // namespace kestrel::ops

#endif  // __aarch64__, the only architecture that calls it (the group families' TileI8mm)
