// Weight decode shared by the aarch64 int8 group tiles: sdot (ops/matmul_quant_dotprod.cc,
// ops/matmul_blocks_dotprod.cc) and i8mm (ops/matmul_quant_i8mm.cc, ops/matmul_blocks_i8mm.cc).
// Both hold a full group's 32-element block or sub-block as c[e][h]: chunk e (elements
// 8e..8e+7) of rows 2h and 2h + 1 in one vector, [r(2h) | r(2h+1)], which is what the 8-byte
// row interleave of ops/quant_layout.h and ops/block_layout.h loads in one go. sdot multiplies it
// against one token's chunk copied to both halves, smmla against two tokens' chunks [t | t+1]:
// one decode, so both kernels sum exactly the same integers.
//
// Base NEON only, but everything sits in an unnamed namespace: the files that include this are
// compiled for different architecture levels (Armv8.2 with dotprod, with i8mm), and one shared
// out-of-line copy that the linker kept from the i8mm file could run on a core without i8mm.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ops/block_layout.h"
#include "ops/quant_layout.h"

namespace kestrel::ops {
namespace {

// A Q8_0 or Q4_0 group block (kQuantGroupRows rows' block b, ops/quant_layout.h) as c[e][h]:
// Q8_0's int8 quants as stored, Q4_0's unsigned nibbles (q + 8; the kernels subtract 8 * sum(x)).
template <bool kQ4>
inline void LoadQuantGroupBlock(const uint8_t* wb, int8x16_t c[4][2]) {
  if constexpr (kQ4) {
    // Bytes 0-7 hold elements 0-7 (low nibbles) and 16-23 (high); bytes 8-15: 8-15, 24-31.
    const uint8x16_t low = vdupq_n_u8(0x0F);
    for (size_t m = 0; m < 2; ++m) {
      for (size_t h = 0; h < 2; ++h) {
        const uint8x16_t bytes = vld1q_u8(wb + (m * 2 + h) * 16);
        c[m][h] = vreinterpretq_s8_u8(vandq_u8(bytes, low));
        c[m + 2][h] = vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4));
      }
    }
  } else {
    const int8_t* q = reinterpret_cast<const int8_t*>(wb);
    for (size_t j = 0; j < 4; ++j) {
      for (size_t h = 0; h < 2; ++h) c[j][h] = vld1q_s8(q + (j * 2 + h) * 16);
    }
  }
}

// The f16 scales of a group block's 4 rows (scales4: rows 0-3) as [s0 s0 s1 s1], [s2 s2 s3 s3]:
// a row per half of c[e][h]'s lanes.
inline void QuantGroupScales(const uint16_t* scales4, float32x4_t* s01, float32x4_t* s23) {
  uint16_t bits[4];
  std::memcpy(bits, scales4, sizeof(bits));
  float16x4_t halves;
  std::memcpy(&halves, bits, sizeof(bits));
  const float32x4_t s = vcvt_f32_f16(halves);
  *s01 = vzip1q_f32(s, s);
  *s23 = vzip2q_f32(s, s);
}

// Sub-block quants of a full group of a kept type as c[e][h], as Q4_0's: unsigned quants, or
// q - center for Q6_K and Q3_K. p: the group's sub-block (ops/block_layout.h).
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
        const int8_t shifts[16] = {s0, s0, s0, s0, s1, s1, s1, s1, s0, s0, s0, s0, s1, s1, s1, s1};
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

inline constexpr size_t kMaxGroupScales = 16;

// A kept type's block scales and mins for a group's rows as lane vectors [r0 r0 r1 r1] (s01)
// and [r2 r2 r3 r3] (s23) per scale index, the mins times min_share: the share of a row's
// min that each of its two lanes adds (1/2 where both lanes add it, as in sdot's tile).
struct GroupScaleVectors {
  float32x4_t s01[kMaxGroupScales], s23[kMaxGroupScales];
  float32x4_t m01[kMaxGroupScales], m23[kMaxGroupScales];
};

template <GgmlBlockType T>
inline void GroupScales(const BlockLayout& layout, const uint8_t* w, size_t r0, size_t blk,
                        float min_share, GroupScaleVectors* v) {
  constexpr BlockFormat F = FormatOf(T);
  float scale[kQuantGroupRows][kMaxGroupScales], min[kQuantGroupRows][kMaxGroupScales] = {};
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
      v->m01[j] = vmulq_n_f32(vld1q_f32(m01), min_share);
      v->m23[j] = vmulq_n_f32(vld1q_f32(m23), min_share);
    }
  }
}

// Token pairs for smmla, whose product of c[e][h] and [t | u] is the 2x2 tile
// [r t, r u, r' t, r' u] (r, r' = rows 2h, 2h + 1).

// Tokens t and u's 32 quants from q_t, q_u as x[e] = [t's chunk e | u's chunk e].
inline void LoadTokenPair(const int8_t* q_t, const int8_t* q_u, int8x16_t x[4]) {
  for (size_t m = 0; m < 2; ++m) {
    const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(q_t + 16 * m));
    const int64x2_t b = vreinterpretq_s64_s8(vld1q_s8(q_u + 16 * m));
    x[2 * m] = vreinterpretq_s8_s64(vzip1q_s64(a, b));
    x[2 * m + 1] = vreinterpretq_s8_s64(vzip2q_s64(a, b));
  }
}

// A per-token value in the tile's lanes: [a b a b].
inline float32x4_t PairLanes(float a, float b) {
  const float v[4] = {a, b, a, b};
  return vld1q_f32(v);
}
inline int32x4_t PairLanes(int32_t a, int32_t b) {
  const int32_t v[4] = {a, b, a, b};
  return vld1q_s32(v);
}

// Writes the 2x2 tiles of rows 0-1 (acc01) and 2-3 (acc23) as two tokens' 4 outputs, y[r] and
// y[n_out + r]; the second only where it is a real token.
inline void StoreTokenPair(float32x4_t acc01, float32x4_t acc23, bool second, float* y,
                           size_t n_out) {
  vst1q_f32(y, vuzp1q_f32(acc01, acc23));
  if (second) vst1q_f32(y + n_out, vuzp2q_f32(acc01, acc23));
}

}  // namespace
}  // namespace kestrel::ops

#endif  // __aarch64__
