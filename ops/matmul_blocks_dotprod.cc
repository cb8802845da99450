#include "ops/matmul_blocks_dotprod.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "ops/quantize_rows.h"

// Armv8.2 with dotprod for the whole file, as in ops/matmul_quant_dotprod.cc.
#pragma GCC target("arch=armv8.2-a+dotprod")

namespace kestrel::ops {
namespace {

constexpr size_t kMaxScales = 16;

// Sub-block quants of a full group as c[e][h]: chunk e (elements 8e..8e+7) of rows 2h and
// 2h + 1, [r(2h) | r(2h+1)], as ops/matmul_quant_dotprod.cc holds Q4_0 blocks: unsigned quants,
// or q - center for Q6_K and Q3_K. p: the group's sub-block (ops/block_layout.h).
template <GgmlBlockType T>
inline void LoadGroupSubBlock(const uint8_t* p, int8x16_t c[4][2]) {
  constexpr BlockFormat F = FormatOf(T);
  uint8x16_t u[4][2];
  if constexpr (F.low_bits == 2) {
    // Q2_K, Q3_K: each row's 8 bytes, chunk e's bits at 2e..2e+1.
    const uint8x16_t two = vdupq_n_u8(0x03);
    for (size_t h = 0; h < 2; ++h) {
      const uint8x16_t bytes = vld1q_u8(p + 16 * h);
      u[0][h] = vandq_u8(bytes, two);
      u[1][h] = vandq_u8(vshrq_n_u8(bytes, 2), two);
      u[2][h] = vandq_u8(vshrq_n_u8(bytes, 4), two);
      u[3][h] = vshrq_n_u8(bytes, 6);
    }
  } else {
    const uint8x16_t low = vdupq_n_u8(0x0F);
    for (size_t m = 0; m < 2; ++m) {
      for (size_t h = 0; h < 2; ++h) {
        const uint8x16_t bytes = vld1q_u8(p + (m * 2 + h) * 16);
        u[m][h] = vandq_u8(bytes, low);
        u[m + 2][h] = vshrq_n_u8(bytes, 4);
      }
    }
  }
  const uint8_t* high = p + kQuantGroupRows * F.LowBytes();
  if constexpr (F.high_bits == 1) {
    // Row r's 4 bytes copied to both halves of its 8 lanes; chunk e's bit of lane i sits at
    // 2e + i / 4 of the copied byte: shift it to bit 4, or 2 for Q3_K (a negative count shifts
    // right).
    const uint8x16_t bytes = vld1q_u8(high);
    const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << F.low_bits));
    for (size_t h = 0; h < 2; ++h) {
      const uint8_t a = static_cast<uint8_t>(8 * h), b = static_cast<uint8_t>(8 * h + 4);
      const uint8_t idx[16] = {a, uint8_t(a + 1), uint8_t(a + 2), uint8_t(a + 3),
                               a, uint8_t(a + 1), uint8_t(a + 2), uint8_t(a + 3),
                               b, uint8_t(b + 1), uint8_t(b + 2), uint8_t(b + 3),
                               b, uint8_t(b + 1), uint8_t(b + 2), uint8_t(b + 3)};
      const uint8x16_t rows = vqtbl1q_u8(bytes, vld1q_u8(idx));
      for (int e = 0; e < 4; ++e) {
        const int8_t s0 = static_cast<int8_t>(static_cast<int>(F.low_bits) - 2 * e);
        const int8_t s1 = static_cast<int8_t>(s0 - 1);
        const int8_t shifts[16] = {s0, s0, s0, s0, s1, s1, s1, s1,
                                   s0, s0, s0, s0, s1, s1, s1, s1};
        u[e][h] = vorrq_u8(u[e][h], vandq_u8(vshlq_u8(rows, vld1q_s8(shifts)), bit));
      }
    }
  } else if constexpr (F.high_bits == 2) {
    // 8 bytes per row, lane-aligned with the chunks: chunk e's bits sit at 2e..2e+1.
    const uint8x16_t mask = vdupq_n_u8(0x30);
    for (size_t h = 0; h < 2; ++h) {
      const uint8x16_t bits = vld1q_u8(high + 16 * h);
      u[0][h] = vorrq_u8(u[0][h], vandq_u8(vshlq_n_u8(bits, 4), mask));
      u[1][h] = vorrq_u8(u[1][h], vandq_u8(vshlq_n_u8(bits, 2), mask));
      u[2][h] = vorrq_u8(u[2][h], vandq_u8(bits, mask));
      u[3][h] = vorrq_u8(u[3][h], vandq_u8(vshrq_n_u8(bits, 2), mask));
    }
  }
  for (size_t e = 0; e < 4; ++e) {
    for (size_t h = 0; h < 2; ++h) {
      c[e][h] = vreinterpretq_s8_u8(
          F.centered() ? vsubq_u8(u[e][h], vdupq_n_u8(static_cast<uint8_t>(F.center))) : u[e][h]);
    }
  }
}

// A block's scales and mins for the group's rows as lane vectors [r0 r0 r1 r1] (s01) and
// [r2 r2 r3 r3] (s23) per scale index; mins halved, each row having two lanes.
struct GroupScaleVectors {
  float32x4_t s01[kMaxScales], s23[kMaxScales], m01[kMaxScales], m23[kMaxScales];
};

template <GgmlBlockType T>
inline void GroupScales(const BlockLayout& layout, const uint8_t* w, size_t r0, size_t blk,
                        GroupScaleVectors* v) {
  constexpr BlockFormat F = FormatOf(T);
  float scale[kQuantGroupRows][kMaxScales], min[kQuantGroupRows][kMaxScales] = {};
  for (size_t r = 0; r < kQuantGroupRows; ++r) {
    DecodeScales(T, w + layout.RecordOffset(r0 + r, blk), scale[r], min[r]);
  }
  for (size_t j = 0; j < F.scales; ++j) {
    const float s01[4] = {scale[0][j], scale[0][j], scale[1][j], scale[1][j]};
    const float s23[4] = {scale[2][j], scale[2][j], scale[3][j], scale[3][j]};
    v->s01[j] = vld1q_f32(s01);
    v->s23[j] = vld1q_f32(s23);
    if constexpr (!F.centered()) {
      const float m01[4] = {min[0][j], min[0][j], min[1][j], min[1][j]};
      const float m23[4] = {min[2][j], min[2][j], min[3][j], min[3][j]};
      v->m01[j] = vmulq_n_f32(vld1q_f32(m01), 0.5f);
      v->m23[j] = vmulq_n_f32(vld1q_f32(m23), 0.5f);
    }
  }
}

inline int8x16_t Broadcast8(const int8_t* x8) {
  int64_t chunk;
  std::memcpy(&chunk, x8, 8);
  return vreinterpretq_s8_s64(vdupq_n_s64(chunk));
}

template <GgmlBlockType T, size_t kTokens>
void GroupTile(const uint8_t* w, const BlockLayout& layout, size_t r0, const uint8_t* x,
               size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  constexpr BlockFormat F = FormatOf(T);
  constexpr size_t kSubBytes = kQuantGroupRows * F.SubBlockRowBytes();
  const uint8_t* quants = w + layout.SubBlockOffset(r0, 0);
  float32x4_t acc01[kTokens], acc23[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc01[t] = vdupq_n_f32(0.0f);
    acc23[t] = vdupq_n_f32(0.0f);
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  GroupScaleVectors sv;
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    GroupScales<T>(layout, w, r0, blk, &sv);
    for (size_t s = 0; s < F.SubBlocks(); ++s) {
      const size_t sub = blk * F.SubBlocks() + s;
      const uint8_t* p = quants + sub * kSubBytes;
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
  switch (tokens) {
    case 1: return GroupTile<T, 1>(w, layout, r0, x, x_row_bytes, k, y, n_out);
    case 2: return GroupTile<T, 2>(w, layout, r0, x, x_row_bytes, k, y, n_out);
    case 3: return GroupTile<T, 3>(w, layout, r0, x, x_row_bytes, k, y, n_out);
    default: return GroupTile<T, 4>(w, layout, r0, x, x_row_bytes, k, y, n_out);
  }
}

}  // namespace

void BlockGroupTileDotProd(GgmlBlockType type, size_t tokens, const uint8_t* w,
                           const BlockLayout& layout, size_t r0, const uint8_t* x,
                           size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  switch (type) {
#define KESTREL_DOTPROD_CASE(T)                                                          \
  case GgmlBlockType::k##T:                                                              \
    return GroupTileForTokens<GgmlBlockType::k##T>(tokens, w, layout, r0, x, x_row_bytes, \
                                                   k, y, n_out);
    KESTREL_BLOCK_TYPES(KESTREL_DOTPROD_CASE)
#undef KESTREL_DOTPROD_CASE
    default: return;
  }
}

}  // namespace kestrel::ops

#else  // !__aarch64__

namespace kestrel::ops {

void BlockGroupTileDotProd(GgmlBlockType, size_t, const uint8_t*, const BlockLayout&, size_t,
                           const uint8_t*, size_t, size_t, float*, size_t) {}

}  // namespace kestrel::ops

#endif
