#include "ops/ggml_blocks.h"

#include <cstring>

#include "ops/quant_layout.h"

// With today's formulas the products that feed an addition are exact in f32 (an 11-bit fp16
// scale times a few-bit integer), so a fused multiply-add would give the same bits; turning
// contraction off keeps bit-exactness from resting on that argument.
#include "ops/fp_contract_off.h"

namespace kestrel::ops {
namespace {

constexpr size_t kQK = kGgmlSubBlockElems;
constexpr size_t kQK_K = kGgmlSuperBlockElems;

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
float LoadHalf(const uint8_t* p) { return ScaleToF32(LoadU16(p)); }

// Block layouts below follow ggml-common.h; each function turns one block into its values.

// Q4_0 (18 bytes): d, qs[16]. Low nibbles are values 0..15, high nibbles 16..31.
void BlockQ4_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint8_t* qs = b + 2;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1 (20 bytes): d, m, qs[16]; y = q * d + m.
void BlockQ4_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  const uint8_t* qs = b + 4;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + kQK / 2] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// Q5_0 (22 bytes): d, qh[4] (bit j is the fifth bit of value j), qs[16].
void BlockQ5_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint32_t qh = LoadU32(b + 2);
  const uint8_t* qs = b + 6;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const uint32_t xh0 = ((qh >> j) << 4) & 0x10;
    const uint32_t xh1 = (qh >> (j + 12)) & 0x10;
    const int32_t x0 = static_cast<int32_t>((qs[j] & 0x0F) | xh0) - 16;
    const int32_t x1 = static_cast<int32_t>((qs[j] >> 4) | xh1) - 16;
    y[j] = static_cast<float>(x0) * d;
    y[j + kQK / 2] = static_cast<float>(x1) * d;
  }
}

// Q5_1 (24 bytes): d, m, qh[4], qs[16]; y = q * d + m.
void BlockQ5_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  const uint32_t qh = LoadU32(b + 4);
  const uint8_t* qs = b + 8;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const uint32_t xh0 = ((qh >> j) << 4) & 0x10;
    const uint32_t xh1 = (qh >> (j + 12)) & 0x10;
    const uint32_t x0 = (qs[j] & 0x0F) | xh0;
    const uint32_t x1 = (qs[j] >> 4) | xh1;
    y[j] = static_cast<float>(x0) * d + m;
    y[j + kQK / 2] = static_cast<float>(x1) * d + m;
  }
}

// Q8_0 (34 bytes): d, int8 qs[32].
void BlockQ8_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  for (size_t j = 0; j < kQK; ++j) {
    y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
  }
}

// Q2_K (84 bytes): scales[16] (low nibble: scale, high nibble: min), qs[64], d, dmin (f16).
// 16 sub-blocks of 16 values; y = (d * scale) * q - (dmin * min). Byte i of a 32-byte run of qs
// holds, at bits 2j, value i of sub-block pair j (values 0-15 of the pair's first sub-block,
// 16-31 of its second), as Q3_K's low bits.
void BlockQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = LoadHalf(b + 80), dmin = LoadHalf(b + 82);
  for (size_t sub = 0; sub < 16; ++sub) {
    const float scale = d * static_cast<float>(scales[sub] & 0x0F);
    const float min = dmin * static_cast<float>(scales[sub] >> 4);
    const uint8_t* q = qs + 32 * (sub / 8) + 16 * (sub % 2);
    const int shift = static_cast<int>(2 * ((sub / 2) % 4));
    for (size_t l = 0; l < 16; ++l) *y++ = scale * static_cast<float>((q[l] >> shift) & 3) - min;
  }
}

// Q3_K (110 bytes): hmask[32] (bit `m` of byte l: the high bit of value l of bit-pair run m),
// qs[64] (2-bit quants, four to a byte), 12 bytes of sixteen 6-bit scales (ScaleQ3K), d (f16).
// 16 sub-blocks of 16 values; y = (d * (scale - 32)) * (q2 + 4 * high - 4). Byte i of a 32-byte
// run of qs holds, at bits 2j, value i of sub-block pair j.
void BlockQ3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const float d = LoadHalf(b + 108);
  for (size_t sub = 0; sub < 16; ++sub) {
    const float scale = d * static_cast<float>(ScaleQ3K(sub, b + 96) - 32);
    const size_t run = sub / 2;  // 0..7: which bit of hmask, which bit pair of qs
    const uint8_t* q = qs + 32 * (run / 4) + 16 * (sub % 2);
    const uint8_t* h = hmask + 16 * (sub % 2);
    const int shift = static_cast<int>(2 * (run % 4));
    for (size_t l = 0; l < 16; ++l) {
      const int value = ((q[l] >> shift) & 3) - (((h[l] >> run) & 1) ? 0 : 4);
      *y++ = scale * static_cast<float>(value);
    }
  }
}

// d * scale and dmin * min of the 8 sub-blocks of a Q4_K or Q5_K block (d, dmin, scales[12]).
void SubBlockScalesK4(const uint8_t* b, float* d_sub, float* m_sub) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  for (size_t j = 0; j < 8; ++j) {
    uint8_t sc, m;
    ScaleMinK4(j, b + 4, &sc, &m);
    d_sub[j] = d * static_cast<float>(sc);
    m_sub[j] = dmin * static_cast<float>(m);
  }
}

// Q4_K (144 bytes): d, dmin, scales[12], qs[128]. Each 64-value chunk c uses qs[32c..32c+31]:
// low nibbles are sub-block 2c, high nibbles sub-block 2c+1. y = (d*scale) * q - (dmin*min).
void BlockQ4_K(const uint8_t* b, float* y) {
  float d_sub[8], m_sub[8];
  SubBlockScalesK4(b, d_sub, m_sub);
  const uint8_t* q = b + 16;
  for (size_t chunk = 0; chunk < kQK_K / 64; ++chunk) {
    const size_t lo = 2 * chunk, hi = 2 * chunk + 1;
    for (size_t l = 0; l < 32; ++l) *y++ = d_sub[lo] * static_cast<float>(q[l] & 0x0F) - m_sub[lo];
    for (size_t l = 0; l < 32; ++l) *y++ = d_sub[hi] * static_cast<float>(q[l] >> 4) - m_sub[hi];
    q += 32;
  }
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus 16 where qh[l] has
// bit 2c (low-nibble sub-block of chunk c) or bit 2c+1 (high-nibble sub-block) set.
void BlockQ5_K(const uint8_t* b, float* y) {
  float d_sub[8], m_sub[8];
  SubBlockScalesK4(b, d_sub, m_sub);
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (size_t chunk = 0; chunk < kQK_K / 64; ++chunk) {
    const size_t lo = 2 * chunk, hi = 2 * chunk + 1;
    for (size_t l = 0; l < 32; ++l) {
      const int q = (ql[l] & 0x0F) + ((qh[l] >> lo) & 1) * 16;
      *y++ = d_sub[lo] * static_cast<float>(q) - m_sub[lo];
    }
    for (size_t l = 0; l < 32; ++l) {
      const int q = (ql[l] >> 4) + ((qh[l] >> hi) & 1) * 16;
      *y++ = d_sub[hi] * static_cast<float>(q) - m_sub[hi];
    }
    ql += 32;
  }
}

// Q6_K (210 bytes): ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], d.
// Two halves of 128 values; y = (d * scale) * (q - 32).
void BlockQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadHalf(b + 208);
  for (size_t half = 0; half < 2; ++half) {
    for (size_t l = 0; l < 32; ++l) {
      const size_t is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

void DequantizeGgmlBlock(GgmlBlockType t, const uint8_t* block, float* y) {
  switch (t) {
    case GgmlBlockType::kQ4_0: return BlockQ4_0(block, y);
    case GgmlBlockType::kQ4_1: return BlockQ4_1(block, y);
    case GgmlBlockType::kQ5_0: return BlockQ5_0(block, y);
    case GgmlBlockType::kQ5_1: return BlockQ5_1(block, y);
    case GgmlBlockType::kQ8_0: return BlockQ8_0(block, y);
    case GgmlBlockType::kQ2_K: return BlockQ2_K(block, y);
    case GgmlBlockType::kQ3_K: return BlockQ3_K(block, y);
    case GgmlBlockType::kQ4_K: return BlockQ4_K(block, y);
    case GgmlBlockType::kQ5_K: return BlockQ5_K(block, y);
    case GgmlBlockType::kQ6_K: return BlockQ6_K(block, y);
  }
}

}  // namespace kestrel::ops
