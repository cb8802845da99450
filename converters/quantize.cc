#include "converters/quantize.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "converters/float_convert.h"
#include "converters/quantize_k.h"
#include "ops/quant_layout.h"
#include "runtime/format.h"

#include "ops/fp_contract_off.h"  // bit-exact with ggml: no fused multiply-adds

// The blocks below follow ggml-common.h and quantize_row_*_ref in ggml-quants.c.
namespace kestrel {
namespace {

constexpr size_t kQK = ops::kGgmlSubBlockElems;

void StoreU32(uint32_t value, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

// ggml's float -> int8_t cast, defined for every input. 1 / d overflows to infinity when the
// scale d is subnormal, making x * (1 / d) infinite or NaN; x86 converts those to 0 in the low
// byte (ggml and numpy on x86 both do), and so does this on every platform.
int Truncate(float value) {
  if (!(std::fabs(value) < 128.0f)) return 0;
  return static_cast<int>(value);
}

// The 32 quants of a Q4_0/Q4_1 (4 bits) or Q5_0/Q5_1 (5 bits) block, written from `at`, just
// after the scales: for 5 bits qh (bit j is bit 4 of quant j), then for both qs[16] (quant j in
// the low nibble of byte j, quant j + 16 in its high nibble).
template <int kBits, typename Quant>
void StoreQuants(const float* v, Quant quant, uint8_t* at) {
  uint8_t* qs = at + (kBits == 5 ? 4 : 0);
  uint32_t qh = 0;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const uint8_t q0 = quant(v[j]), q1 = quant(v[j + kQK / 2]);
    qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kQK / 2);
  }
  if (kBits == 5) StoreU32(qh, at);
}

// The value of largest magnitude, with its sign (the first one on ties).
float SignedAbsMax(const float* v) {
  float amax = 0.0f, max = 0.0f;
  for (size_t i = 0; i < kQK; ++i) {
    if (amax < std::fabs(v[i])) amax = std::fabs(v[i]), max = v[i];
  }
  return max;
}

// Q8_0 (34 bytes): d, int8 qs[32].
void BlockQ8_0(const float* v, uint8_t* y) {
  float amax = 0.0f;
  for (size_t i = 0; i < kQK; ++i) amax = std::fmax(amax, std::fabs(v[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreF16(d, y);
  for (size_t i = 0; i < kQK; ++i) {
    y[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(Truncate(std::roundf(v[i] * id))));
  }
}

// Q4_0 / Q5_0 (18 / 22 bytes): d, then the quants; the value of largest magnitude gets quant 0.
template <int kBits>
void BlockSymmetric(const float* v, uint8_t* y) {
  constexpr int kHalfRange = 1 << (kBits - 1), kMaxQuant = (1 << kBits) - 1;
  const float d = SignedAbsMax(v) / static_cast<float>(-kHalfRange);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreF16(d, y);
  const auto quant = [&](float value) {
    const float scaled = value * id;
    const int q = Truncate(scaled + (static_cast<float>(kHalfRange) + 0.5f));
    return static_cast<uint8_t>(q < kMaxQuant ? q : kMaxQuant);
  };
  StoreQuants<kBits>(v, quant, y + 2);
}

// Q4_1 / Q5_1 (20 / 24 bytes): d, m, then the quants; x = q * d + m.
template <int kBits>
void BlockAffine(const float* v, uint8_t* y) {
  constexpr int kMaxQuant = (1 << kBits) - 1;
  float min = FLT_MAX, max = -FLT_MAX;
  for (size_t i = 0; i < kQK; ++i) {
    if (v[i] < min) min = v[i];
    if (v[i] > max) max = v[i];
  }
  const float d = (max - min) / static_cast<float>(kMaxQuant);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreF16(d, y);
  StoreF16(min, y + 2);
  // ggml clamps Q4_1 to 15 and leaves Q5_1 unclamped ((x - m) / d never exceeds 31.5 there).
  const auto quant = [&](float value) {
    const float scaled = (value - min) * id;
    const int q = Truncate(scaled + 0.5f);
    return static_cast<uint8_t>(kBits == 4 && q > kMaxQuant ? kMaxQuant : q);
  };
  StoreQuants<kBits>(v, quant, y + 4);
}

}  // namespace

void QuantizeGgmlBlock(ops::GgmlBlockType t, const float* x, uint8_t* block) {
  switch (t) {
    case ops::GgmlBlockType::kQ8_0: return BlockQ8_0(x, block);
    case ops::GgmlBlockType::kQ4_0: return BlockSymmetric<4>(x, block);
    case ops::GgmlBlockType::kQ5_0: return BlockSymmetric<5>(x, block);
    case ops::GgmlBlockType::kQ4_1: return BlockAffine<4>(x, block);
    case ops::GgmlBlockType::kQ5_1: return BlockAffine<5>(x, block);
    case ops::GgmlBlockType::kQ4_K: return QuantizeBlockQ4_K(x, block);
    case ops::GgmlBlockType::kQ5_K: return QuantizeBlockQ5_K(x, block);
    case ops::GgmlBlockType::kQ6_K: return QuantizeBlockQ6_K(x, block);
    case ops::GgmlBlockType::kQ2_K:  // no quantizers: StoreWeights refuses to make these
    case ops::GgmlBlockType::kQ3_K: break;
  }
}

void QuantizeGgml(ops::GgmlBlockType t, const float* x, size_t n, std::vector<uint8_t>* out) {
  const size_t elems = ops::GgmlBlockElems(t), bytes = ops::GgmlBlockBytes(t);
  const size_t first = out->size(), blocks = n / elems;
  out->resize(first + blocks * bytes);
  for (size_t b = 0; b < blocks; ++b) {
    QuantizeGgmlBlock(t, x + b * elems, out->data() + first + b * bytes);
  }
}

Status PackGgmlBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                      std::vector<uint8_t>* packed) {
  KES_CHECK_OR_RETURN(dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0,
                      std::string("cannot pack ggml blocks as ") + DTypeName(dtype));
  KES_CHECK_OR_RETURN(k % kQuantBlock == 0, "rows of " + std::to_string(k) +
                                                " elements are not a whole number of " +
                                                std::to_string(kQuantBlock) + "-element blocks");
  const bool q4 = dtype == fb::DType::Q4_0;
  const size_t ggml_block = q4 ? kGgmlQ4BlockBytes : kGgmlQ8BlockBytes;
  const ops::QuantLayout layout(rows, k, q4 ? ops::kQ4BlockBytes : ops::kQ8BlockBytes);
  packed->assign(layout.TotalBytes(), 0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      const uint8_t* src = blocks + (r * layout.blocks_per_row + b) * ggml_block;
      std::memcpy(packed->data() + layout.ScaleOffset(r, b), src, 2);
      for (size_t c = 0; c < layout.block_bytes; c += ops::kQuantChunkBytes) {
        std::memcpy(packed->data() + layout.QuantByteOffset(r, b, c), src + 2 + c,
                    ops::kQuantChunkBytes);
      }
    }
  }
  return OkStatus();
}

}  // namespace kestrel
