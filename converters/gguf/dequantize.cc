#include "converters/gguf/dequantize.h"

#include <cstring>
#include <limits>
#include <string>

// ggml and gguf-py round every product and sum to f32 on its own. With today's formulas the
// products that feed an addition are exact in f32 (an 11-bit fp16 scale times a few-bit integer),
// so a fused multiply-add would give the same bits; turning contraction off keeps bit-exactness
// from resting on that argument (GCC contracts across statements in C++, aarch64 has FMA).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kestrel::gguf {
namespace {

constexpr size_t kQK = 32;     // values per block of the Q4_0..Q8_0 family
constexpr size_t kQK_K = 256;  // values per K-quant super-block

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
float LoadHalf(const uint8_t* p) { return Fp16ToFp32(LoadU16(p)); }
float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

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

// The 6-bit scale and min of sub-block j (0..7) packed in the 12 scale bytes of Q4_K and Q5_K.
void ScaleMinK4(size_t j, const uint8_t* s, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q4_K (144 bytes): d, dmin, scales[12], qs[128]. Each 64-value chunk c uses qs[32c..32c+31]:
// low nibbles are sub-block 2c, high nibbles sub-block 2c+1. y = (d*scale) * q - (dmin*min).
void BlockQ4_K(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (size_t chunk = 0; chunk < kQK_K / 64; ++chunk) {
    uint8_t sc, m;
    ScaleMinK4(2 * chunk, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    ScaleMinK4(2 * chunk + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
  }
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus 16 where qh[l] has
// bit 2c (low-nibble sub-block of chunk c) or bit 2c+1 (high-nibble sub-block) set.
void BlockQ5_K(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (size_t chunk = 0; chunk < kQK_K / 64; ++chunk) {
    const uint8_t u1 = static_cast<uint8_t>(1u << (2 * chunk));
    const uint8_t u2 = static_cast<uint8_t>(2u << (2 * chunk));
    uint8_t sc, m;
    ScaleMinK4(2 * chunk, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    ScaleMinK4(2 * chunk + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (size_t l = 0; l < 32; ++l) {
      const int q = (ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0);
      *y++ = d1 * static_cast<float>(q) - m1;
    }
    for (size_t l = 0; l < 32; ++l) {
      const int q = (ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0);
      *y++ = d2 * static_cast<float>(q) - m2;
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

void BlockF32(const uint8_t* b, float* y) { *y = FromBits(LoadU32(b)); }
void BlockF16(const uint8_t* b, float* y) { *y = LoadHalf(b); }
void BlockBF16(const uint8_t* b, float* y) {
  *y = FromBits(static_cast<uint32_t>(LoadU16(b)) << 16);
}

using BlockFn = void (*)(const uint8_t* block, float* values);

struct TypeTraits {
  size_t block_elements;
  size_t block_bytes;
  BlockFn dequantize;  // nullptr: sizes known, dequantization not supported
};

TypeTraits Traits(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return {1, 4, BlockF32};
    case GgmlType::F16: return {1, 2, BlockF16};
    case GgmlType::BF16: return {1, 2, BlockBF16};
    case GgmlType::Q4_0: return {kQK, 18, BlockQ4_0};
    case GgmlType::Q4_1: return {kQK, 20, BlockQ4_1};
    case GgmlType::Q5_0: return {kQK, 22, BlockQ5_0};
    case GgmlType::Q5_1: return {kQK, 24, BlockQ5_1};
    case GgmlType::Q8_0: return {kQK, 34, BlockQ8_0};
    case GgmlType::Q2_K: return {kQK_K, 84, nullptr};
    case GgmlType::Q3_K: return {kQK_K, 110, nullptr};
    case GgmlType::Q4_K: return {kQK_K, 144, BlockQ4_K};
    case GgmlType::Q5_K: return {kQK_K, 176, BlockQ5_K};
    case GgmlType::Q6_K: return {kQK_K, 210, BlockQ6_K};
  }
  return {0, 0, nullptr};
}

std::string TypeLabel(GgmlType t) {
  return std::string(GgmlTypeName(t)) + " (" + std::to_string(static_cast<uint32_t>(t)) + ")";
}

}  // namespace

float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x03FF;
  if (exponent == 0x1F) return FromBits(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return FromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  if (mantissa == 0) return FromBits(sign);  // signed zero
  // Subnormal half: normalize, since every half subnormal is a normal float.
  uint32_t float_exponent = 127 - 15 + 1;
  while ((mantissa & 0x0400) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return FromBits(sign | (float_exponent << 23) | ((mantissa & 0x03FF) << 13));
}

size_t BlockElements(GgmlType t) { return Traits(t).block_elements; }
size_t BlockBytes(GgmlType t) { return Traits(t).block_bytes; }
bool CanDequantize(GgmlType t) { return Traits(t).dequantize != nullptr; }

Status DequantizeRow(GgmlType t, const uint8_t* src, size_t n, float* dst) {
  const TypeTraits traits = Traits(t);
  if (traits.dequantize == nullptr) {
    return Status::Error("cannot dequantize ggml type " + TypeLabel(t) +
                         ": expected one of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                         "Q4_K, Q5_K, Q6_K");
  }
  if (n % traits.block_elements != 0) {
    return Status::Error("dequantize " + TypeLabel(t) + ": expected a multiple of " +
                         std::to_string(traits.block_elements) + " values, found " +
                         std::to_string(n));
  }
  const size_t blocks = n / traits.block_elements;
  for (size_t i = 0; i < blocks; ++i) {
    traits.dequantize(src + i * traits.block_bytes, dst + i * traits.block_elements);
  }
  return OkStatus();
}

Status DequantizeRows(const TensorInfo& t, uint64_t first_row, uint64_t n_rows, float* dst) {
  const std::string where = "tensor '" + t.name + "'";
  const TypeTraits traits = Traits(t.type);
  if (t.ne.empty() || traits.block_elements == 0 || t.data == nullptr) {
    return Status::Error(where + ": expected a shape, a known type and mapped data");
  }
  uint64_t shape_elements = 1;
  for (const uint64_t d : t.ne) {
    if (__builtin_mul_overflow(shape_elements, d, &shape_elements)) shape_elements = 0;
  }
  if (shape_elements != t.n_elements) {
    return Status::Error(where + ": expected n_elements to be the product of the shape, " +
                         std::to_string(shape_elements) + ", found " +
                         std::to_string(t.n_elements));
  }
  const uint64_t row_length = t.ne[0];
  const uint64_t rows = row_length == 0 ? 0 : t.n_elements / row_length;
  if (first_row > rows || n_rows > rows - first_row) {
    return Status::Error(where + ": expected rows within [0, " + std::to_string(rows) +
                         "), asked for rows [" + std::to_string(first_row) + ", " +
                         std::to_string(first_row) + " + " + std::to_string(n_rows) + ")");
  }
  if (row_length % traits.block_elements != 0 ||
      t.n_bytes != t.n_elements / traits.block_elements * traits.block_bytes) {
    return Status::Error(
        where + ": expected " + std::to_string(t.n_elements) + " " + GgmlTypeName(t.type) +
        " values in whole blocks of " + std::to_string(traits.block_bytes) + " bytes, found " +
        std::to_string(t.n_bytes) + " bytes and row length " + std::to_string(row_length));
  }
  const uint64_t row_bytes = row_length / traits.block_elements * traits.block_bytes;
  if (n_rows * row_length > std::numeric_limits<size_t>::max()) {
    return Status::Error(where + ": " + std::to_string(n_rows * row_length) +
                         " values do not fit in memory");
  }
  return DequantizeRow(t.type, t.data + first_row * row_bytes,
                       static_cast<size_t>(n_rows * row_length), dst)
      .WithContext(where);
}

Status DequantizeTensor(const TensorInfo& t, std::vector<float>* out) {
  if (t.n_elements > out->max_size()) {
    return Status::Error("tensor '" + t.name + "': " + std::to_string(t.n_elements) +
                         " values do not fit in memory");
  }
  out->resize(static_cast<size_t>(t.n_elements));
  if (t.n_elements == 0) return OkStatus();
  const uint64_t rows = t.ne.empty() || t.ne[0] == 0 ? 0 : t.n_elements / t.ne[0];
  return DequantizeRows(t, 0, rows, out->data());
}

}  // namespace kestrel::gguf
