// Matmul over the kept GGUF types (ops/matmul_blocks.h), compiled for every Highway target and
// dispatched at run time.
//
// Every type is handled the same way: a weight element is scale * q + min with q an unsigned
// integer of 2-6 bits (Q6_K: scale * (q - 32), Q3_K: scale * (q - 4), made signed), the scale
// and min constant over a sub-block of 32 (16 for Q6_K, Q3_K and Q2_K). With activations
// quantized per 32 (x = xs * xq, ops/quantize_rows.h), a sub-block contributes
// xs * (scale * sum(q * xq) + min * sum(xq)): the first sum is exact in int32, the second is
// stored with the activations (Q2_K's mins per 16 need the first half's sum, taken from the
// quants). Scales are decoded
// from ggml's records once per block and row (ops/block_layout.h).
//
// Full groups of 4 rows go to the x86 AVX2 kernel below or, on aarch64 cores with dotprod, to
// ops/matmul_blocks_dotprod.cc; everything else (other targets, a last partial group) to the
// portable Highway kernel, which decodes one row's sub-block into
// int8 quants and multiplies them in int16 lanes like ops/matmul_quant.cc's portable kernel.
#include "ops/matmul_blocks.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_blocks.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <type_traits>

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

#include "ops/block_layout.h"
#include "ops/simd_helpers-inl.h"
#include "ops/matmul_blocks_neon.h"
#include "ops/matmul_quant_dotprod.h"
#include "ops/matmul_quant_i8mm.h"
#include "ops/quantize_rows.h"
#include "ops/weight_prefetch.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace blocks {
namespace hn = hwy::HWY_NAMESPACE;

#include "ops/count_dispatch-inl.h"

inline constexpr size_t kMaxScales = 16;  // per block: Q6_K has one per 16 of 256 values
inline constexpr size_t kTokenTile = 4;

#include "ops/matmul_group_driver-inl.h"

// The sum of the first 16 of a sub-block's 32 activation quants (the second half's is the
// block's stored sum minus this).
HWY_INLINE int32_t FirstHalfSum(const int8_t* HWY_RESTRICT q) {
  int32_t sum = 0;
  for (size_t i = 0; i < kGgmlSubBlockElems / 2; ++i) sum += q[i];
  return sum;
}

// acc += dot(x, w) over one half-sub-block slice of L lanes, times factor.
HWY_INLINE void MulAddDot(V16 x, V16 w, float factor, VF& acc) {
  const D32 d32;
  const DF df;
  auto odd = hn::Zero(d32);
  auto sum = hn::ReorderWidenMulAccumulate(d32, x, w, hn::Zero(d32), odd);
  sum = hn::RearrangeToOddPlusEven(sum, odd);
  acc = hn::MulAdd(hn::ConvertTo(df, sum), hn::Set(df, factor), acc);
}

// One token against lanes [j, j + L) of both halves of a decoded sub-block.
template <GgmlBlockType T>
HWY_INLINE void TokenSubBlock(const Q8ActRow& a, size_t sub, size_t s, size_t j, V16 w_lo, V16 w_hi,
                              const float* scale, VF& acc) {
  const D16 d16;
  const hn::Rebind<int8_t, D16> d8;
  const int8_t* q = a.q + sub * kGgmlSubBlockElems + j;
  const float xs = a.scale[sub];
  const V16 x_lo = hn::PromoteTo(d16, hn::LoadU(d8, q));
  const V16 x_hi = hn::PromoteTo(d16, hn::LoadU(d8, q + 16));
  if constexpr (FormatOf(T).PerHalfScales()) {
    MulAddDot(x_lo, w_lo, scale[2 * s] * xs, acc);
    MulAddDot(x_hi, w_hi, scale[2 * s + 1] * xs, acc);
  } else {
    MulAddDot(x_lo, w_lo, scale[s] * xs, acc);
    MulAddDot(x_hi, w_hi, scale[s] * xs, acc);
  }
}

// Portable: one row x kTokens tokens. y: y[t0, row], row stride n_out.
template <GgmlBlockType T, size_t kTokens>
HWY_NOINLINE void BlocksTile1xN_Portable(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                         size_t row, const uint8_t* HWY_RESTRICT x,
                                         size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                         size_t n_out) {
  constexpr BlockFormat F = FormatOf(T);
  const D16 d16;
  const DF df;
  const hn::Rebind<int8_t, D16> d8;
  const size_t L = hn::Lanes(d16);
  VF a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  float offset[kTokens] = {};
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) act[t] = Q8ActRowAt(x + t * x_row_bytes, k);

  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    float scale[kMaxScales], min[kMaxScales];
    DecodeScales(T, w + layout.RecordOffset(row, blk), scale, min);
    for (size_t s = 0; s < F.SubBlocks(); ++s) {
      const size_t sub = blk * F.SubBlocks() + s;
      HWY_ALIGN int8_t q[kGgmlSubBlockElems];
      LoadSubBlockQuants(layout, w, row, sub, q);
      for (size_t j = 0; j < 16; j += L) {
        const V16 w_lo = hn::PromoteTo(d16, hn::LoadU(d8, q + j));
        const V16 w_hi = hn::PromoteTo(d16, hn::LoadU(d8, q + 16 + j));
        TokenSubBlock<T>(act[0], sub, s, j, w_lo, w_hi, scale, a0);
        if constexpr (kTokens > 1) TokenSubBlock<T>(act[1], sub, s, j, w_lo, w_hi, scale, a1);
        if constexpr (kTokens > 2) TokenSubBlock<T>(act[2], sub, s, j, w_lo, w_hi, scale, a2);
        if constexpr (kTokens > 3) TokenSubBlock<T>(act[3], sub, s, j, w_lo, w_hi, scale, a3);
      }
      if constexpr (F.PerHalfScales() && !F.centered()) {  // Q2_K: a min per 16
        for (size_t t = 0; t < kTokens; ++t) {
          const int32_t first = FirstHalfSum(act[t].q + sub * kGgmlSubBlockElems);
          offset[t] +=
              min[2 * s] * (act[t].scale[sub] * static_cast<float>(first)) +
              min[2 * s + 1] * (act[t].scale[sub] * static_cast<float>(act[t].sum[sub] - first));
        }
      } else if constexpr (!F.centered()) {
        for (size_t t = 0; t < kTokens; ++t) {
          offset[t] += min[s] * (act[t].scale[sub] * static_cast<float>(act[t].sum[sub]));
        }
      }
    }
  }
  y[0] = ReduceSum(df, a0) + offset[0];
  if constexpr (kTokens > 1) y[n_out] = ReduceSum(df, a1) + offset[1];
  if constexpr (kTokens > 2) y[2 * n_out] = ReduceSum(df, a2) + offset[2];
  if constexpr (kTokens > 3) y[3 * n_out] = ReduceSum(df, a3) + offset[3];
}

template <GgmlBlockType T>
void RowPortable(size_t tokens, const uint8_t* w, const BlockLayout& layout, size_t row,
                 const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  switch (tokens) {
    case 1: return BlocksTile1xN_Portable<T, 1>(w, layout, row, x, x_row_bytes, k, y, n_out);
    case 2: return BlocksTile1xN_Portable<T, 2>(w, layout, row, x, x_row_bytes, k, y, n_out);
    case 3: return BlocksTile1xN_Portable<T, 3>(w, layout, row, x, x_row_bytes, k, y, n_out);
    default:
      return BlocksTile1xN_Portable<T, kTokenTile>(w, layout, row, x, x_row_bytes, k, y, n_out);
  }
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// x86 with AVX2: one full group of 4 rows against kTokens tokens, in raw intrinsics for the
// same reason as ops/matmul_quant.cc's x86 kernel (Highway 1.0.3 has no vpmaddubsw), and on the
// same plan: a vector holds one 8-element chunk of the four rows, [r0 r1 | r2 r3], against the
// token's 8 quants broadcast to every 64-bit lane, so the four rows' sums come out in separate
// lanes. Nibbles and high bits are combined in registers into the quants 0..63.
// The even 32-bit lanes of v shifted left by kLeft, the odd ones by kLeft - 1 (negative counts
// shift right; kLeft - 1 < 0 only where kLeft <= 0).
template <int kLeft>
HWY_INLINE __m256i ShiftLanePairs(__m256i v) {
  if constexpr (kLeft - 1 >= 0) {
    return _mm256_sllv_epi32(v, _mm256_setr_epi32(kLeft, kLeft - 1, kLeft, kLeft - 1, kLeft,
                                                  kLeft - 1, kLeft, kLeft - 1));
  } else {
    return _mm256_srlv_epi32(v, _mm256_setr_epi32(-kLeft, 1 - kLeft, -kLeft, 1 - kLeft, -kLeft,
                                                  1 - kLeft, -kLeft, 1 - kLeft));
  }
}

// Sub-block `p` of a full group as four chunk vectors (elements 0-7, 8-15, 16-23, 24-31 of
// each row): unsigned quants, or q - center for Q6_K and Q3_K unless kUncentered.
template <GgmlBlockType T, bool kUncentered = false>
HWY_INLINE void LoadGroupSubBlock(const uint8_t* HWY_RESTRICT p, __m256i c[4]) {
  constexpr BlockFormat F = FormatOf(T);
  if constexpr (F.low_bits == 2) {
    // Q3_K: each row's 8 bytes lane-aligned with the chunks, chunk e's bits at 2e..2e+1.
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i two = _mm256_set1_epi8(0x03);
    c[0] = _mm256_and_si256(b, two);
    c[1] = _mm256_and_si256(_mm256_srli_epi16(b, 2), two);
    c[2] = _mm256_and_si256(_mm256_srli_epi16(b, 4), two);
    c[3] = _mm256_and_si256(_mm256_srli_epi16(b, 6), two);
  } else {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    c[0] = _mm256_and_si256(b0, low);
    c[1] = _mm256_and_si256(b1, low);
    c[2] = _mm256_and_si256(_mm256_srli_epi16(b0, 4), low);
    c[3] = _mm256_and_si256(_mm256_srli_epi16(b1, 4), low);
  }
  const uint8_t* high = p + kQuantGroupRows * F.LowBytes();
  if constexpr (F.high_bits == 1) {
    // 4 bytes per row, copied into the row's two 32-bit lanes of each chunk vector (elements
    // 0-3 and 4-7); chunk c's bits sit at 2c (first lane) and 2c + 1 (second) of every byte,
    // shifted to bit 4 (bit 2 for Q3_K, shifting 2 less).
    const __m256i h = _mm256_permutevar8x32_epi32(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(high))),
        _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << F.low_bits));
    constexpr int kLow = static_cast<int>(F.low_bits);
    c[0] = _mm256_or_si256(c[0], _mm256_and_si256(ShiftLanePairs<kLow>(h), bit));
    c[1] = _mm256_or_si256(c[1], _mm256_and_si256(ShiftLanePairs<kLow - 2>(h), bit));
    c[2] = _mm256_or_si256(c[2], _mm256_and_si256(ShiftLanePairs<kLow - 4>(h), bit));
    c[3] = _mm256_or_si256(c[3], _mm256_and_si256(ShiftLanePairs<kLow - 6>(h), bit));
  } else if constexpr (F.high_bits == 2) {
    // 8 bytes per row, lane-aligned with the chunks: chunk e's bits sit at 2e..2e+1.
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high));
    const __m256i mask = _mm256_set1_epi8(0x30);
    c[0] = _mm256_or_si256(c[0], _mm256_and_si256(_mm256_slli_epi16(h, 4), mask));
    c[1] = _mm256_or_si256(c[1], _mm256_and_si256(_mm256_slli_epi16(h, 2), mask));
    c[2] = _mm256_or_si256(c[2], _mm256_and_si256(h, mask));
    c[3] = _mm256_or_si256(c[3], _mm256_and_si256(_mm256_srli_epi16(h, 2), mask));
  }
  if constexpr (F.centered() && !kUncentered) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(F.center));
    for (int e = 0; e < 4; ++e) c[e] = _mm256_sub_epi8(c[e], bias);
  }
}

HWY_INLINE __m256i Broadcast8(const int8_t* HWY_RESTRICT x8) {
  int64_t chunk;
  memcpy(&chunk, x8, 8);
  return _mm256_set1_epi64x(chunk);
}

// Eight vectors in, eight out: out[j] lane i = in[i] lane j.
HWY_INLINE void Transpose8x8(const __m256 in[8], __m256 out[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    out[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    out[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// rows[r] lane j = row r's value j -> out[j] = [r0 r0 r1 r1 | r2 r2 r3 r3]: each sub-block's
// four row values in the lanes where the kernel sums that row.
HWY_INLINE void RowsToLanes(const __m256 rows[4], __m256 out[8]) {
  const __m256 doubled[8] = {rows[0], rows[0], rows[1], rows[1],
                             rows[2], rows[2], rows[3], rows[3]};
  Transpose8x8(doubled, out);
}

HWY_INLINE float HalfAt(const uint8_t* p) {
  uint16_t bits;
  memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

// 8 unsigned bytes (or signed, kSigned) widened to f32 and multiplied by factor.
template <bool kSigned>
HWY_INLINE __m256 BytesTimes(const void* bytes, float factor) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  const __m256i wide = kSigned ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(wide), _mm256_set1_ps(factor));
}

// A Q3_K record's 16 integer scales sc - 32 (ScaleQ3K) as signed bytes, with vector
// instructions: decoding them one by one costs more than the record's dot products.
HWY_INLINE __m128i Q3KScaleBytes(const uint8_t* HWY_RESTRICT rec) {
  // The record's 12 scale bytes (d follows) as one 8-byte and one 4-byte load: through a stack
  // copy, the 16-byte reload would wait for the copy's stores (a failed store-to-load forward).
  int32_t bytes8_11;
  memcpy(&bytes8_11, rec + 8, 4);
  const __m128i b =
      _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rec)), bytes8_11, 2);
  // Low 4 bits: the low nibbles of bytes 0-7 (scales 0-7), then their high nibbles (8-15).
  const __m128i low =
      _mm_and_si128(_mm_unpacklo_epi64(b, _mm_srli_epi16(b, 4)), _mm_set1_epi8(0x0F));
  // High 2 bits: byte 8 + j % 4 at bit 2 * (j / 4), j / 4 being constant in each 32-bit lane.
  const __m128i copies =
      _mm_shuffle_epi8(b, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
  const __m128i high =
      _mm_and_si128(_mm_srlv_epi32(copies, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

// A Q3_K record's 16 scales (DecodeScales: d * (sc - 32)): scales 0-7 in lo, 8-15 in hi.
HWY_INLINE void Q3KScales(const uint8_t* HWY_RESTRICT rec, __m256* lo, __m256* hi) {
  const __m128i sc = Q3KScaleBytes(rec);
  const __m256 d = _mm256_set1_ps(HalfAt(rec + 12));
  *lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d);
  *hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d);
}

// A Q2_K record's 16 scales and 16 mins (DecodeScales: d * sc, -(dmin * m)), the mins times
// min_factor: scales 0-7 in scale_lo, 8-15 in scale_hi, mins likewise.
HWY_INLINE void Q2KScaleRow(const uint8_t* HWY_RESTRICT rec, float min_factor, __m256* scale_lo,
                            __m256* scale_hi, __m256* min_lo, __m256* min_hi) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 4));
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m128i sc = _mm_and_si128(b, low);
  const __m128i m = _mm_and_si128(_mm_srli_epi16(b, 4), low);
  const __m256 d = _mm256_set1_ps(HalfAt(rec));
  const __m256 dmin = _mm256_set1_ps(-min_factor * HalfAt(rec + 2));
  const auto widen = [](__m128i bytes) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)); };
  *scale_lo = _mm256_mul_ps(widen(sc), d);
  *scale_hi = _mm256_mul_ps(widen(_mm_srli_si128(sc, 8)), d);
  *min_lo = _mm256_mul_ps(widen(m), dmin);
  *min_hi = _mm256_mul_ps(widen(_mm_srli_si128(m, 8)), dmin);
}

// Q4_K / Q5_K on AVX2 and AVX3: one row's record per 128-bit lane, unpacked with in-lane byte
// shuffles into its 8 scales (bytes 0-7) and 8 mins (8-15), the plan of DecodeK4GroupScales
// below, where scalar unpacking took ~40% of a one-token Q4_K matmul.
struct K4LaneTables {
  alignas(32) uint8_t low_source[32];
  alignas(32) uint8_t low_mask[32];     // the low 6 or 4 bits where the low byte holds them
  alignas(32) uint8_t nibble_mask[32];  // mins j >= 4: the low byte's high nibble
  alignas(32) uint8_t high_source[32];  // 0x80: none (vpshufb writes 0)
  alignas(32) uint8_t high_mask[32];
  constexpr K4LaneTables() : low_source(), low_mask(), nibble_mask(), high_source(), high_mask() {
    for (int p = 0; p < 32; ++p) {
      const int j = p % 8;
      const bool is_min = p % 16 >= 8;
      low_source[p] = static_cast<uint8_t>(4 + (j < 4 && !is_min ? j : j + 4));
      low_mask[p] = j < 4 ? 0x3F : (is_min ? 0 : 0x0F);
      nibble_mask[p] = j >= 4 && is_min ? 0x0F : 0;
      high_source[p] = j < 4 ? 0x80 : static_cast<uint8_t>(4 + (is_min ? j : j - 4));
      high_mask[p] = j < 4 ? 0 : 0x30;
    }
  }
};
inline constexpr K4LaneTables kK4Lanes;

// Two consecutive Q4_K / Q5_K records (32 bytes) unpacked: per 128-bit lane, one row's 8 scales
// (bytes 0-7) and 8 mins (8-15), as bytes.
HWY_INLINE __m256i K4PairBytes(const uint8_t* HWY_RESTRICT two_records) {
  const auto table = [](const uint8_t* bytes) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes));
  };
  const __m256i records = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(two_records));
  const __m256i low = _mm256_shuffle_epi8(records, table(kK4Lanes.low_source));
  const __m256i high = _mm256_shuffle_epi8(records, table(kK4Lanes.high_source));
  return _mm256_or_si256(
      _mm256_or_si256(_mm256_and_si256(low, table(kK4Lanes.low_mask)),
                      _mm256_and_si256(_mm256_srli_epi16(low, 4), table(kK4Lanes.nibble_mask))),
      _mm256_and_si256(_mm256_srli_epi16(high, 2), table(kK4Lanes.high_mask)));
}

#if HWY_TARGET == HWY_AVX3_DL
// Q4_K / Q5_K: the four records of a full group's block (16 bytes each: d, dmin, then the 12
// bytes of 6-bit scales and mins that ScaleMinK4 unpacks) decoded together with byte permutes,
// where unpacking them one row at a time with scalar code took ~40% of a one-token Q4_K matmul.
// scale01 = [d0 * sc0[0..7] | d1 * sc1[0..7]], scale23 the same for rows 2-3; min01, min23:
// -min_factor * dmin * m likewise. The same f32 values as DecodeScales (d * sc is exact).
struct K4GroupScales {
  __m512 scale01, scale23, min01, min23;
};

// Byte p of the unpacked vector: scale (p < 32) or min (p >= 32) j = p % 8 of row (p % 32) / 8.
struct K4UnpackTables {
  alignas(64) uint8_t low_source[64];   // the byte holding the low bits
  alignas(64) uint8_t low_mask[64];     // 6 bits for j < 4, 4 for j >= 4
  alignas(64) uint8_t high_source[64];  // j >= 4: the byte whose top 2 bits are bits 4-5
  alignas(64) uint8_t high_mask[64];
  constexpr K4UnpackTables() : low_source(), low_mask(), high_source(), high_mask() {
    for (int p = 0; p < 64; ++p) {
      const int row = p % 32 / 8, j = p % 8, scales = 16 * row + 4;
      const bool is_min = p >= 32;
      low_source[p] = static_cast<uint8_t>(scales + (j < 4 && !is_min ? j : j + 4));
      low_mask[p] = j < 4 ? 0x3F : 0x0F;
      high_source[p] = static_cast<uint8_t>(j < 4 ? 0 : scales + (is_min ? j : j - 4));
      high_mask[p] = j < 4 ? 0 : 0x30;
    }
  }
};
inline constexpr K4UnpackTables kK4Unpack;

// Bytes 16q .. 16q + 15 (two rows' 8 values) in f32 times their rows' factors, lanes 2q, 2q + 1
// of d.
template <int kQuarter>
HWY_INLINE __m512 K4Quarter(__m512i bytes, __m512 d) {
  const __m512i rows =
      _mm512_inserti64x4(_mm512_set1_epi32(2 * kQuarter), _mm256_set1_epi32(2 * kQuarter + 1), 1);
  return _mm512_mul_ps(
      _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, kQuarter))),
      _mm512_permutexvar_ps(rows, d));
}

// The four rows' 6-bit scales and mins as bytes: scale j of row r at 8r + j, min j at 32 + 8r + j.
HWY_INLINE __m512i UnpackK4GroupBytes(const uint8_t* HWY_RESTRICT rec) {
  const auto table = [](const uint8_t* bytes) { return _mm512_load_si512(bytes); };
  const __m512i records = _mm512_loadu_si512(rec);
  const __m512i low = _mm512_permutexvar_epi8(table(kK4Unpack.low_source), records);
  const __m512i high = _mm512_permutexvar_epi8(table(kK4Unpack.high_source), records);
  // Mins j >= 4 take their low bits from the high nibble.
  constexpr __mmask64 kMinHighNibble = 0xF0F0F0F000000000ull;
  const __m512i low_bits =
      _mm512_mask_blend_epi8(kMinHighNibble, _mm512_and_si512(low, table(kK4Unpack.low_mask)),
                             _mm512_and_si512(_mm512_srli_epi16(low, 4), _mm512_set1_epi8(0x0F)));
  return _mm512_or_si512(low_bits,
                         _mm512_and_si512(_mm512_srli_epi16(high, 2), table(kK4Unpack.high_mask)));
}

HWY_INLINE K4GroupScales DecodeK4GroupScales(const uint8_t* HWY_RESTRICT rec, float min_factor) {
  const __m512i records = _mm512_loadu_si512(rec);
  const __m512i bytes = UnpackK4GroupBytes(rec);
  // d of the four rows, then dmin (words 8r and 8r + 1), dmin times -min_factor.
  const __m512i dwords =
      _mm512_permutexvar_epi16(_mm512_setr_epi32(8 << 16, 24 << 16 | 16, 9 << 16 | 1, 25 << 16 | 17,
                                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                               records);
  const __m512 d = _mm512_castps256_ps512(_mm256_mul_ps(
      _mm256_cvtph_ps(_mm512_castsi512_si128(dwords)),
      _mm256_setr_ps(1, 1, 1, 1, -min_factor, -min_factor, -min_factor, -min_factor)));
  return {K4Quarter<0>(bytes, d), K4Quarter<1>(bytes, d), K4Quarter<2>(bytes, d),
          K4Quarter<3>(bytes, d)};
}
#endif

// The K-quants' scales of one block for the four rows of a full group, one vector per row:
// scales 0-7 in lo[r]; scales 8-15 (Q6_K, Q3_K) or the 8 mins, halved (Q4_K, Q5_K), in hi[r].
// rec: the group's four scale records, one after another.
template <GgmlBlockType T>
HWY_INLINE void GroupScaleRows(const uint8_t* HWY_RESTRICT rec, __m256 lo[4], __m256 hi[4]) {
  if constexpr (T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K) {
#if HWY_TARGET == HWY_AVX3_DL
    const K4GroupScales g = DecodeK4GroupScales(rec, 0.5f);
    lo[0] = _mm512_castps512_ps256(g.scale01);
    lo[1] = _mm512_extractf32x8_ps(g.scale01, 1);
    lo[2] = _mm512_castps512_ps256(g.scale23);
    lo[3] = _mm512_extractf32x8_ps(g.scale23, 1);
    hi[0] = _mm512_castps512_ps256(g.min01);
    hi[1] = _mm512_extractf32x8_ps(g.min01, 1);
    hi[2] = _mm512_castps512_ps256(g.min23);
    hi[3] = _mm512_extractf32x8_ps(g.min23, 1);
#else
    const auto widen = [](__m128i bytes, float factor) {
      return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(factor));
    };
    for (int pair = 0; pair < 2; ++pair) {
      const __m256i bytes = K4PairBytes(rec + 32 * pair);
      for (int half = 0; half < 2; ++half) {
        const int r = 2 * pair + half;
        const __m128i row =
            half == 0 ? _mm256_castsi256_si128(bytes) : _mm256_extracti128_si256(bytes, 1);
        lo[r] = widen(row, HalfAt(rec + 16 * r));
        hi[r] = widen(_mm_srli_si128(row, 8), -0.5f * HalfAt(rec + 16 * r + 2));
      }
    }
#endif
  } else if constexpr (T == GgmlBlockType::kQ3_K) {
    constexpr size_t kRecord = FormatOf(T).record_bytes;
    for (int r = 0; r < 4; ++r) Q3KScales(rec + kRecord * r, &lo[r], &hi[r]);
  } else if constexpr (T == GgmlBlockType::kQ6_K) {
    for (int r = 0; r < 4; ++r) {
      const uint8_t* p = rec + 18 * r;  // 16 int8 scales, then d
      const float d = HalfAt(p + 16);
      lo[r] = BytesTimes<true>(p, d);
      hi[r] = BytesTimes<true>(p + 8, d);
    }
  }
}

// One block's scales and mins for the four rows of a full group, as the kernel's lane vectors:
// scale[j], min[j] for each scale index j of the block (BlockFormat::scales), min halved because
// each row has two lanes. rec: the group's four scale records, one after another.
template <GgmlBlockType T>
HWY_INLINE void GroupScales(const uint8_t* HWY_RESTRICT rec, __m256* scale, __m256* min) {
  const __m256 half = _mm256_set1_ps(0.5f);
  if constexpr (T == GgmlBlockType::kQ5_0) {
    const __m128 d = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rec)));
    scale[0] = _mm256_set_m128(_mm_unpackhi_ps(d, d), _mm_unpacklo_ps(d, d));
    min[0] = _mm256_mul_ps(scale[0], _mm256_set1_ps(-16.0f * 0.5f));
  } else if constexpr (T == GgmlBlockType::kQ4_1 || T == GgmlBlockType::kQ5_1) {
    const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec)));
    scale[0] = _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
    min[0] = _mm256_mul_ps(_mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7)),
                           half);
  } else if constexpr (T == GgmlBlockType::kQ2_K) {
    __m256 scale_lo[4], scale_hi[4], min_lo[4], min_hi[4];
    for (int r = 0; r < 4; ++r) {
      Q2KScaleRow(rec + FormatOf(T).record_bytes * r, 0.5f, &scale_lo[r], &scale_hi[r], &min_lo[r],
                  &min_hi[r]);
    }
    RowsToLanes(scale_lo, scale);
    RowsToLanes(scale_hi, scale + 8);
    RowsToLanes(min_lo, min);
    RowsToLanes(min_hi, min + 8);
  } else {
    __m256 lo[4], hi[4];
    GroupScaleRows<T>(rec, lo, hi);
    RowsToLanes(lo, scale);
    RowsToLanes(hi, T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K ? min : scale + 8);
  }
}

// What a token's sub-block adds besides the quants' dot product, for the types that have such
// a term: Q5_0's -16 * sum(x) in int32, half in each of a row's two lanes; the min term's
// x_scale * sum(x) of the others. Computed for kSumRun sub-blocks at a time with vector
// instructions, instead of with four scalar instructions per token and sub-block inside the
// tile's inner loop.
union SumTerm {
  int32_t offset;
  float scaled;
};
inline constexpr size_t kSumRun = 8;
// A token's terms for kSumRun sub-blocks: term i of sub-block i (Q2_K: of its first half, and
// term kSumRun + i of its second).
using SumTermRun = SumTerm[2 * kSumRun];

// Q2_K's terms x_scale * sum(x) of each half of the kSumRun sub-blocks from `sub` on: first
// halves in out[0 .. kSumRun), second halves in out[kSumRun ..). A run is always whole: Q2_K's
// rows are whole blocks of 256 = kSumRun * 32. Each sub-block's sums of 4 (vpdpbusd, or
// vpmaddubsw + vpmaddwd, against bytes of 1) are folded with two levels of horizontal adds: ~4
// instructions per sub-block and token, where vpsadbw one sub-block at a time took ~12 (figures:
// docs/kernels.md).
HWY_INLINE void Q2KHalfTerms(const Q8ActRow& a, size_t sub, __m256* first_terms,
                             __m256* second_terms) {
  const int8_t* HWY_RESTRICT q = a.q + sub * kGgmlSubBlockElems;
  __m256i fours[kSumRun];  // lanes 0-3: sums of 4 in the first half, 4-7 the second
  for (size_t i = 0; i < kSumRun; ++i) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * i));
#if HWY_TARGET == HWY_AVX3_DL
    fours[i] = DotBytesAccumulate(_mm256_setzero_si256(), _mm256_set1_epi8(1), x);
#else
    fours[i] =
        _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), x), _mm256_set1_epi16(1));
#endif
  }
  // [s0 s1 s2 s3 | s0' s1' s2' s3'] for sub-blocks 0-3 and 4-7 (s first halves, s' second).
  const __m256i s03 = _mm256_hadd_epi32(_mm256_hadd_epi32(fours[0], fours[1]),
                                        _mm256_hadd_epi32(fours[2], fours[3]));
  const __m256i s47 = _mm256_hadd_epi32(_mm256_hadd_epi32(fours[4], fours[5]),
                                        _mm256_hadd_epi32(fours[6], fours[7]));
  const __m256 xs = _mm256_loadu_ps(a.scale + sub);
  const __m256i first = _mm256_permute2x128_si256(s03, s47, 0x20);
  const __m256i second = _mm256_permute2x128_si256(s03, s47, 0x31);
  *first_terms = _mm256_mul_ps(xs, _mm256_cvtepi32_ps(first));
  *second_terms = _mm256_mul_ps(xs, _mm256_cvtepi32_ps(second));
}
HWY_INLINE void Q2KHalfTerms(const Q8ActRow& a, size_t sub, SumTerm* HWY_RESTRICT out) {
  __m256 first, second;
  Q2KHalfTerms(a, sub, &first, &second);
  _mm256_store_ps(reinterpret_cast<float*>(out), first);
  _mm256_store_ps(reinterpret_cast<float*>(out + kSumRun), second);
}

template <GgmlBlockType T>
HWY_INLINE void SumTerms(const Q8ActRow* act, size_t tokens, size_t sub, size_t subs,
                         SumTermRun* HWY_RESTRICT out) {
  if constexpr (FormatOf(T).centered()) return;  // Q6_K, Q3_K: signed quants, no such term
  const size_t n = HWY_MIN(kSumRun, subs - sub);
  if constexpr (T == GgmlBlockType::kQ2_K) {
    static_assert(kGgmlSuperBlockElems == kSumRun * kGgmlSubBlockElems, "whole runs");
    for (size_t t = 0; t < tokens; ++t) Q2KHalfTerms(act[t], sub, out[t]);
    return;
  }
  for (size_t t = 0; t < tokens; ++t) {
    const int32_t* HWY_RESTRICT sum = act[t].sum + sub;
    const float* HWY_RESTRICT scale = act[t].scale + sub;
    if (n == kSumRun) {
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum));
      if constexpr (T == GgmlBlockType::kQ5_0) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[t]),
                           _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 3)));
      } else {
        _mm256_store_ps(reinterpret_cast<float*>(out[t]),
                        _mm256_mul_ps(_mm256_loadu_ps(scale), _mm256_cvtepi32_ps(sums)));
      }
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if constexpr (T == GgmlBlockType::kQ5_0) {
        out[t][i].offset = ScaledBlockSum(sum[i], -8);
      } else {
        out[t][i].scaled = scale[i] * static_cast<float>(sum[i]);
      }
    }
  }
}

// A block's scale records, kWeightPrefetchBytes ahead in the group's stream like the quants
// (BeginSubBlock): every line they span, which the quants' prefetches need not reach.
template <GgmlBlockType T>
HWY_INLINE void PrefetchRecords(const uint8_t* group, size_t blk) {
  constexpr size_t kRecordBytes = FullGroup<T>::kRecordBytes;
  static_assert(kRecordBytes <= 128, "the prefetches below cover 128 bytes a block");
  const uint8_t* ahead = FullGroup<T>::Records(group, blk) + kWeightPrefetchBytes;
  hwy::Prefetch(ahead);
  if constexpr (kRecordBytes > 64) hwy::Prefetch(ahead + 64);
  hwy::Prefetch(ahead + kRecordBytes - 1);
}

// The start of sub-block `sub` in a group tile: the tokens' sum terms for the next kSumRun
// sub-blocks when a run begins, and the prefetch of the weight stream. Returns the sub-block's
// quants (group: the group's start, BlockLayout::GroupOffset).
template <GgmlBlockType T, size_t kTokens>
HWY_INLINE const uint8_t* BeginSubBlock(const uint8_t* group, size_t sub, const Q8ActRow* act,
                                        size_t k, SumTermRun* HWY_RESTRICT sum_terms) {
  constexpr size_t kSubBytes = FullGroup<T>::kSubBytes;
  if (sub % kSumRun == 0) SumTerms<T>(act, kTokens, sub, k / kGgmlSubBlockElems, sum_terms);
  const uint8_t* p = FullGroup<T>::SubBlock(group, sub);
  hwy::Prefetch(p + kWeightPrefetchBytes);
  if constexpr (kSubBytes > 64) hwy::Prefetch(p + kWeightPrefetchBytes + 64);
  // Sub-blocks need not start on a line since the records sit between blocks.
  hwy::Prefetch(p + kWeightPrefetchBytes + kSubBytes - 1);
  return p;
}

template <GgmlBlockType T, size_t kTokens>
HWY_NOINLINE void BlocksTile4xN_Avx2(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                     size_t r0, const uint8_t* HWY_RESTRICT x, size_t x_row_bytes,
                                     size_t k, float* HWY_RESTRICT y, size_t n_out) {
  constexpr BlockFormat F = FormatOf(T);
  [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);  // vpmaddwd pair sums
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  // Two accumulators per token: the two multiply-adds of a sub-block go to different ones, so
  // a one-token tile is not bound by one chain of dependent FMAs (4 cycles each).
  __m256 acc[kTokens], acc2[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = _mm256_setzero_ps();
    acc2[t] = _mm256_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  HWY_ALIGN SumTermRun sum_terms[kTokens];
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    __m256 scale[kMaxScales], min[kMaxScales];
    PrefetchRecords<T>(group, blk);
    GroupScales<T>(FullGroup<T>::Records(group, blk), scale, min);
    for (size_t s = 0; s < F.SubBlocks(); ++s) {
      const size_t sub = blk * F.SubBlocks() + s;
      const uint8_t* HWY_RESTRICT p = BeginSubBlock<T, kTokens>(group, sub, act, k, sum_terms);
      __m256i c[4];
      LoadGroupSubBlock<T>(p, c);
      // Types with a scale per half: signed quants (Q6_K, Q3_K) are multiplied as |w| (<= 32,
      // unsigned) against x carrying w's sign (vpsignb), Q2_K's unsigned ones as they are.
      [[maybe_unused]] __m256i weight[4];
      if constexpr (F.PerHalfScales()) {
        for (int e = 0; e < 4; ++e) weight[e] = F.centered() ? _mm256_sign_epi8(c[e], c[e]) : c[e];
      }
      for (size_t t = 0; t < kTokens; ++t) {
        const int8_t* xb = act[t].q + sub * kGgmlSubBlockElems;
        const float xs = act[t].scale[sub];
        if constexpr (F.PerHalfScales()) {
          const auto x_chunk = [&](int e) {
            const __m256i x = Broadcast8(xb + 8 * e);
            return F.centered() ? _mm256_sign_epi8(x, c[e]) : x;
          };
          // Without VNNI each half's two chunks of pair sums add up in int16: at most
          // 2 * 2 * 32 * 127 < 2^15.
          const auto half = [&](int e) {
#if HWY_TARGET == HWY_AVX3_DL
            const __m256i p0 = DotBytesAccumulate(_mm256_setzero_si256(), weight[e], x_chunk(e));
            return _mm256_cvtepi32_ps(DotBytesAccumulate(p0, weight[e + 1], x_chunk(e + 1)));
#else
            const __m256i p0 = _mm256_maddubs_epi16(weight[e], x_chunk(e));
            const __m256i p1 = _mm256_maddubs_epi16(weight[e + 1], x_chunk(e + 1));
            return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
#endif
          };
          const __m256 x_scale = _mm256_set1_ps(xs);
          acc[t] = _mm256_fmadd_ps(half(0), _mm256_mul_ps(scale[2 * s], x_scale), acc[t]);
          acc2[t] = _mm256_fmadd_ps(half(2), _mm256_mul_ps(scale[2 * s + 1], x_scale), acc2[t]);
          if constexpr (!F.centered()) {  // Q2_K: a min per half
            const SumTerm* terms = sum_terms[t] + sub % kSumRun;
            acc[t] = _mm256_fmadd_ps(min[2 * s], _mm256_set1_ps(terms[0].scaled), acc[t]);
            acc2[t] =
                _mm256_fmadd_ps(min[2 * s + 1], _mm256_set1_ps(terms[kSumRun].scaled), acc2[t]);
          }
        } else {
          // Unsigned quants of at most 5 bits: without VNNI, four chunks of pair sums stay below
          // 4 * 2 * 31 * 127 < 2^15 in int16.
          const size_t j = F.SubBlocks() == 1 ? 0 : s;
          // Q5_0: q - 16 shares the scale, so 16 * sum(x) is subtracted in int32 (half in each
          // of a row's two lanes) instead of a second multiply-add per token.
          const __m256i start = T == GgmlBlockType::kQ5_0
                                    ? _mm256_set1_epi32(sum_terms[t][sub % kSumRun].offset)
                                    : _mm256_setzero_si256();
#if HWY_TARGET == HWY_AVX3_DL
          // vpdpbusd sums four u8 x s8 products into each int32 lane: one instruction per
          // chunk, in two independent chains.
          const __m256i s0 = DotBytesAccumulate(DotBytesAccumulate(start, c[0], Broadcast8(xb)),
                                                c[1], Broadcast8(xb + 8));
          const __m256i s1 = DotBytesAccumulate(
              DotBytesAccumulate(_mm256_setzero_si256(), c[2], Broadcast8(xb + 16)), c[3],
              Broadcast8(xb + 24));
          const __m256i sums = _mm256_add_epi32(s0, s1);
#else
          const __m256i prod =
              _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(c[0], Broadcast8(xb)),
                                                _mm256_maddubs_epi16(c[1], Broadcast8(xb + 8))),
                               _mm256_add_epi16(_mm256_maddubs_epi16(c[2], Broadcast8(xb + 16)),
                                                _mm256_maddubs_epi16(c[3], Broadcast8(xb + 24))));
          const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(prod, ones), start);
#endif
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                   _mm256_mul_ps(scale[j], _mm256_set1_ps(xs)), acc[t]);
          if constexpr (T != GgmlBlockType::kQ5_0) {
            // The min term once per row: half of it in each of the row's two lanes.
            acc2[t] = _mm256_fmadd_ps(min[j], _mm256_set1_ps(sum_terms[t][sub % kSumRun].scaled),
                                      acc2[t]);
          }
        }
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    const __m256 sum = _mm256_add_ps(acc[t], acc2[t]);
    const __m128 rows = _mm_hadd_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    _mm_storeu_ps(y + t * n_out, rows);
  }
}

#include "ops/matmul_blocks_super_avx2-inl.h"
#if HWY_TARGET == HWY_AVX3_DL
#include "ops/matmul_blocks_decode_vnni-inl.h"
#include "ops/matmul_blocks_decode_lowbit_vnni-inl.h"
#include "ops/matmul_blocks_decode_lowbit_paired_vnni-inl.h"
#endif

// One full group against 1 .. 4 tokens: on AVX-512 VNNI the 512-bit decode kernel.
template <GgmlBlockType T, size_t kTokens>
HWY_INLINE void BlocksDecodeTile4xN_X86(const uint8_t* w, const BlockLayout& layout, size_t r0,
                                        const uint8_t* x, size_t x_row_bytes, size_t k, float* y,
                                        size_t n_out, [[maybe_unused]] bool super_activations) {
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K) {
    if (super_activations) {
      LowBitTile4xN_Avx512Vnni<T, kTokens, true>(w, layout, r0, x, x_row_bytes, k, y, n_out);
    } else {
      LowBitTile4xN_Avx512Vnni<T, kTokens, false>(w, layout, r0, x, x_row_bytes, k, y, n_out);
    }
  } else if constexpr (T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K) {
    Q4KQ5KTile4xN_Avx512Vnni<T, kTokens>(w, layout, r0, x, x_row_bytes, k, y, n_out);
  } else if constexpr (T == GgmlBlockType::kQ6_K) {
    Q6KTile4xN_Avx512Vnni<kTokens>(w, layout, r0, x, x_row_bytes, k, y, n_out);
  } else {
    BlocksTile4xN_Avx512Vnni<T, kTokens>(w, layout, r0, x, x_row_bytes, k, y, n_out);
  }
#else
  BlocksTile4xN_Avx2<T, kTokens>(w, layout, r0, x, x_row_bytes, k, y, n_out);
#endif
}

#endif  // x86 with AVX2

#if HWY_TARGET == HWY_AVX3_DL
#include "ops/matmul_panel_vnni-inl.h"

// A kept type for the token panels: each sub-block decoded into Q8_0's group-block layout,
// Q5_0 as q - 16, Q6_K as q - 32 and Q3_K as q - 4 (signed, no min term), Q4_1 and Q5_1
// unsigned with their min; scales decoded per row once per ggml block.
template <GgmlBlockType T>
struct BlockPanelSource {
  static constexpr BlockFormat F = FormatOf(T);
  static constexpr size_t kHalves = F.centered() ? 2 : 1;  // Q6_K, Q3_K: a scale per 16
  static constexpr bool kHasMin = !F.centered() && T != GgmlBlockType::kQ5_0;
  const uint8_t* w;
  const BlockLayout* layout;
  size_t r0;  // the tile's first row, the first of a full group

  static_assert(T != GgmlBlockType::kQ2_K, "Q2_K stays on the tiles (MatMulBlocks)");
  static constexpr bool kK4 = T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K;
  // PanelSuperTileMx16_Avx512Vnni: the types with integer scales per super-block it covers.
  static constexpr bool kSuperBlockTiles =
      T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K || T == GgmlBlockType::kQ6_K;
  // DecodeScales (ops/block_layout.h) with F16C and vector instructions: the same values.
  static HWY_INLINE void RowScales(const uint8_t* HWY_RESTRICT rec, float* HWY_RESTRICT scale,
                                   float* HWY_RESTRICT min) {
    if constexpr (T == GgmlBlockType::kQ5_0) {
      scale[0] = HalfAt(rec);
    } else if constexpr (T == GgmlBlockType::kQ4_1 || T == GgmlBlockType::kQ5_1) {
      scale[0] = HalfAt(rec);
      min[0] = HalfAt(rec + 2);
    } else if constexpr (T == GgmlBlockType::kQ6_K) {
      const float d = HalfAt(rec + 16);
      _mm256_store_ps(scale, BytesTimes<true>(rec, d));
      _mm256_store_ps(scale + 8, BytesTimes<true>(rec + 8, d));
    } else if constexpr (T == GgmlBlockType::kQ3_K) {
      __m256 lo, hi;
      Q3KScales(rec, &lo, &hi);
      _mm256_store_ps(scale, lo);
      _mm256_store_ps(scale + 8, hi);
    }
  }

  // Sub-blocks sub .. sub + n - 1 of the tile's kGroups groups into Q8_0's group-block layout.
  template <size_t kGroups, class Run>
  void LoadQuants(size_t sub, size_t n, Run* run) const {
    for (size_t g = 0; g < kGroups; ++g) {
      const uint8_t* group = w + layout->GroupOffset(r0 + kQuantGroupRows * g);
      for (size_t i = 0; i < n; ++i) {
        __m256i c[4];
        LoadGroupSubBlock<T>(FullGroup<T>::SubBlock(group, sub + i), c);
        for (size_t e = 0; e < 4; ++e) {
          if constexpr (T == GgmlBlockType::kQ5_0) {
            c[e] = _mm256_sub_epi8(c[e], _mm256_set1_epi8(16));
          }
          _mm256_store_si256(reinterpret_cast<__m256i*>(run->decoded[i][g] + 32 * e), c[e]);
        }
        run->quants[i][g] = reinterpret_cast<const uint8_t*>(run->decoded[i][g]);
      }
    }
  }

  // Super-block sub / 8 (sub a multiple of 8): quants, integer scales and mins, d and dmin.
  template <size_t kGroups>
  void LoadSuper(size_t sub, PanelSuperRun<kGroups, kHalves>* run) const {
    static_assert(kSuperBlockTiles);
    LoadQuants<kGroups>(sub, kSuperBlocks, run);
    const size_t block = sub / kSuperBlocks;
    for (size_t g = 0; g < kGroups; ++g) {
      const size_t first = r0 + kQuantGroupRows * g;
      if constexpr (kK4) {
        // The four rows' records are one 64-byte run (DecodeK4GroupScales reads it so).
        const uint8_t* rec = w + layout->RecordOffset(first, block);
        const __m512i bytes = UnpackK4GroupBytes(rec);  // scales [row][8], then mins [row][8]
        // Each half by its own immediate: without optimization a loop's index is no constant.
        _mm512_store_si512(run->scale[4 * g],
                           _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, 0)));
        _mm512_store_si512(run->scale[4 * g + 2],
                           _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, 1)));
        _mm512_store_si512(run->min_pairs[4 * g],
                           _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(bytes, 1)));
        for (size_t r = 0; r < kQuantGroupRows; ++r) {
          run->d[4 * g + r] = HalfAt(rec + 16 * r);
          run->dmin[4 * g + r] = HalfAt(rec + 16 * r + 2);
        }
      } else {  // Q6_K: 16 signed scales, then d
        for (size_t r = 0; r < kQuantGroupRows; ++r) {
          const uint8_t* rec = w + layout->RecordOffset(first + r, block);
          _mm512_store_si512(
              run->scale[4 * g + r],
              _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec))));
          run->d[4 * g + r] = HalfAt(rec + 16);
        }
      }
    }
  }

  template <size_t kGroups>
  void Load(size_t sub, size_t n, PanelRun<kGroups>* run) const {
    LoadQuants<kGroups>(sub, n, run);
    if constexpr (kK4) {
      // Four rows' scales and mins at a time (DecodeK4GroupScales), [row][sub-block].
      HWY_ALIGN float scale[kQuantGroupRows][8], min[kQuantGroupRows][8];
      for (size_t g = 0; g < kGroups; ++g) {
        const size_t first = r0 + kQuantGroupRows * g;
        for (size_t i = 0; i < n; ++i) {
          const size_t block = (sub + i) / F.SubBlocks(), s = (sub + i) % F.SubBlocks();
          if (i == 0 || s == 0) {
            const K4GroupScales k4 =
                DecodeK4GroupScales(w + layout->RecordOffset(first, block), 1.0f);
            _mm512_store_ps(scale[0], k4.scale01);
            _mm512_store_ps(scale[2], k4.scale23);
            _mm512_store_ps(min[0], k4.min01);
            _mm512_store_ps(min[2], k4.min23);
          }
          for (size_t r = 0; r < kQuantGroupRows; ++r) {
            run->scale[i][0][kQuantGroupRows * g + r] = scale[r][s];
            run->min[i][kQuantGroupRows * g + r] = min[r][s];
          }
        }
      }
      return;
    }
    for (size_t r = 0; r < kQuantGroupRows * kGroups; ++r) {
      HWY_ALIGN float scale[kMaxScales], min[kMaxScales];
      for (size_t i = 0; i < n; ++i) {
        const size_t block = (sub + i) / F.SubBlocks(), s = (sub + i) % F.SubBlocks();
        if (i == 0 || s == 0) RowScales(w + layout->RecordOffset(r0 + r, block), scale, min);
        if constexpr (F.centered()) {
          run->scale[i][0][r] = scale[2 * s];
          run->scale[i][1][r] = scale[2 * s + 1];
        } else {
          run->scale[i][0][r] = scale[s];
          if constexpr (kHasMin) run->min[i][r] = min[s];
        }
      }
    }
  }
};
#endif

// The kept types as a MatMulGroupTiles family: the tiles above.
template <GgmlBlockType T>
struct BlockGroups {
  const uint8_t* w;
  BlockLayout layout;
  size_t k, x_row_bytes, n_out;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // The types KQuantSuperTile4xN_Avx2 takes (on AVX3_DL Q2_K and Q3_K have tiles of their own).
  static constexpr bool kSuperTileType =
      PreferredActivationScaleBlock(T) == kGgmlSuperBlockElems &&
      (HWY_TARGET != HWY_AVX3_DL || (T != GgmlBlockType::kQ2_K && T != GgmlBlockType::kQ3_K));
  // Every token's activations have one scale per super-block, and a tile reads that.
  bool super_activations = false;
#if HWY_TARGET == HWY_AVX3_DL
  // Q2_K's and Q3_K's paired activations (PairLowBitActivations) of the tokens from x_first
  // on, or null.
  const uint8_t* x_first = nullptr;
  const uint8_t* paired = nullptr;
  size_t paired_row_bytes = 0, paired_copies = 1;
#endif

#if HWY_TARGET == HWY_AVX3_DL
  template <size_t kTokens, size_t kCopies>
  void PairedTile(size_t r, const uint8_t* x, const uint8_t* token_paired, float* y) const {
    LowBitPairedTile4xN_Avx512Vnni<T, kTokens, kCopies>(w, layout, r, x, x_row_bytes, token_paired,
                                                        paired_row_bytes, k, y + r, n_out);
  }
#endif

  template <size_t kTokens>
  void TileX86(size_t r, const uint8_t* x, float* y) const {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if constexpr (kTokens <= 4 && kSuperTileType) {
      if (super_activations) {
        KQuantSuperTile4xN_Avx2<T, kTokens>(w, layout, r, x, x_row_bytes, k, y + r, n_out);
        return;
      }
    }
#endif
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K) {
      if constexpr (kTokens <= 4) {
        if (paired != nullptr) {
          const size_t token = static_cast<size_t>(x - x_first) / x_row_bytes;
          const uint8_t* token_paired = paired + token * paired_row_bytes;
          if constexpr (kTokens == 1) {
            if (paired_copies == 4) {
              PairedTile<kTokens, 4>(r, x, token_paired, y);
              return;
            }
          }
          PairedTile<kTokens, 1>(r, x, token_paired, y);
          return;
        }
      }
    }
    if constexpr (T == GgmlBlockType::kQ2_K) {
      // Q2_K's prefill (the token panels lack its sums of 16): two 512-bit 4-token decode tiles
      // beat the 8-token 256-bit one (figures: docs/kernels.md).
      if constexpr (kTokens == 8) {
        if (super_activations) {
          for (size_t half = 0; half < 2; ++half) {
            LowBitTile4xN_Avx512Vnni<T, 4, true>(w, layout, r, x + half * 4 * x_row_bytes,
                                                 x_row_bytes, k, y + r + half * 4 * n_out, n_out);
          }
          return;
        }
      }
    }
#endif
    if constexpr (kTokens == kX86TokenTile) {
      BlocksTile4xN_Avx2<T, kTokens>(w, layout, r, x, x_row_bytes, k, y + r, n_out);
    } else {
      BlocksDecodeTile4xN_X86<T, kTokens>(w, layout, r, x, x_row_bytes, k, y + r, n_out,
                                          super_activations);
    }
  }
#endif
#if HWY_ARCH_ARM_A64
  void TileI8mm(size_t tokens, size_t r, const uint8_t* x, float* y) const {
    BlocksTile4xN_NeonI8mm(T, tokens, w, layout, r, x, x_row_bytes, k, y + r, n_out);
  }
  void TileDotProd(size_t tokens, size_t r, const uint8_t* x, float* y) const {
    BlocksTile4xN_NeonDotProd(T, tokens, w, layout, r, x, x_row_bytes, k, y + r, n_out);
  }
#endif
  // Row r alone, with the portable tiles.
  size_t Rest(size_t n_tokens, size_t r, size_t, const uint8_t* x, float* y) const {
    for (size_t t = 0; t < n_tokens; t += kTokenTile) {
      RowPortable<T>(HWY_MIN(kTokenTile, n_tokens - t), w, layout, r, x + t * x_row_bytes,
                     x_row_bytes, k, y + t * n_out + r, n_out);
    }
    return 1;
  }
};

// Rows [row_begin, row_end) for n_tokens tokens with the tiles above.
template <GgmlBlockType T>
void MatMulBlocksTiles(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                       float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                       size_t row_begin, size_t row_end) {
  BlockGroups<T> groups{w, BlockLayout(T, n_out, k), k, Q8ActRowBytes(k), n_out};
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // The tiles that read it: every K-quant's on AVX2 and AVX3 (KQuantSuperTile4xN_Avx2), Q2_K's
  // and Q3_K's on AVX3_DL, and there Q4_K-Q6_K's too where 512-bit operations run as two halves
  // (the same 256-bit tile; elsewhere they decode in tiles that read each block's scale).
  constexpr bool kLowBit = T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K;
  const bool reads_super_activations =
      HWY_TARGET == HWY_AVX3_DL
          ? kLowBit || (BlockGroups<T>::kSuperTileType && n_tokens <= 4 && CpuSplits512BitOps())
          : PreferredActivationScaleBlock(T) == kGgmlSuperBlockElems;
  if (reads_super_activations) {
    groups.super_activations = OneActivationScalePerSuperBlock(x, groups.x_row_bytes, n_tokens, k);
  }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K) {
    const size_t copies = n_tokens == 1 && k <= kLowBitPairedCopiesMaxK ? 4 : 1;
    const size_t paired_row_bytes = k / kGgmlSuperBlockElems * LowBitPairedBlockBytes(copies);
    if (groups.super_activations && n_tokens <= 4 &&
        n_tokens * paired_row_bytes <= kLowBitPairedMaxBytes) {
      alignas(64) uint8_t paired[kLowBitPairedMaxBytes];
      for (size_t t = 0; t < n_tokens; ++t) {
        PairLowBitActivations(Q8ActRowAt(x + t * groups.x_row_bytes, k).q, k, copies,
                              paired + t * paired_row_bytes);
      }
      groups.x_first = x;
      groups.paired = paired;
      groups.paired_row_bytes = paired_row_bytes;
      groups.paired_copies = copies;
      MatMulGroupTiles(groups, x, y, n_tokens, row_begin, row_end);
      return;
    }
  }
#endif
  MatMulGroupTiles(groups, x, y, n_tokens, row_begin, row_end);
}

// Rows [row_begin, row_end) for n_tokens tokens, in token blocks. On AVX-512 VNNI enough tokens
// go to the token panels and the edges to the tiles.
template <GgmlBlockType T>
void MatMulBlocks(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                  float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out, size_t row_begin,
                  size_t row_end) {
  const auto tiles = [&](const uint8_t* xp, float* yp, size_t n, size_t rb, size_t re) {
    MatMulBlocksTiles<T>(w, xp, yp, n, k, n_out, rb, re);
  };
#if HWY_TARGET == HWY_AVX3_DL
  // Q4_K / Q5_K too since their scales and mins are decoded four rows at a time
  // (DecodeK4GroupScales), which put the panels well ahead of the tiles for them (figures:
  // docs/kernels.md).
  // Not Q2_K: its mins per 16 need sums of half sub-blocks, which the panels lack.
  if constexpr (T != GgmlBlockType::kQ2_K) {
    const BlockLayout layout(T, n_out, k);
    const auto source_at = [&](size_t r) { return BlockPanelSource<T>{w, &layout, r}; };
    return MatMulPanelTokenBlocks(source_at, tiles, x, y, n_tokens, k, n_out, row_begin, row_end);
  }
#endif
  MatMulTokenBlocks(tiles, x, y, n_tokens, k, n_out, row_begin, row_end);
}

}  // namespace blocks

#define KESTREL_BLOCK_MATMUL_PER_TARGET(T)                                                      \
  void MatMul##T##PerTarget(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,       \
                            float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,     \
                            size_t row_begin, size_t row_end) {                                 \
    blocks::MatMulBlocks<GgmlBlockType::k##T>(w, x, y, n_tokens, k, n_out, row_begin, row_end); \
  }
KESTREL_BLOCK_TYPES(KESTREL_BLOCK_MATMUL_PER_TARGET)
#undef KESTREL_BLOCK_MATMUL_PER_TARGET

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

#define KESTREL_BLOCK_MATMUL_EXPORT(T)                                                           \
  HWY_EXPORT(MatMul##T##PerTarget);                                                              \
  void MatMul##T(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k,        \
                 size_t n_out, size_t row_begin, size_t row_end) {                               \
    HWY_DYNAMIC_DISPATCH(MatMul##T##PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end); \
  }                                                                                              \
  KESTREL_DEFINE_RESOLVE(MatMul##T)
KESTREL_BLOCK_TYPES(KESTREL_BLOCK_MATMUL_EXPORT)
#undef KESTREL_BLOCK_MATMUL_EXPORT

decltype(&MatMulQ4_1) ResolveBlockMatMul(GgmlBlockType type) {
  switch (type) {
#define KESTREL_BLOCK_MATMUL_CASE(T) \
  case GgmlBlockType::k##T: return ResolveMatMul##T();
    KESTREL_BLOCK_TYPES(KESTREL_BLOCK_MATMUL_CASE)
#undef KESTREL_BLOCK_MATMUL_CASE
    default: return nullptr;
  }
}

}  // namespace kestrel::ops
#endif  // HWY_ONCE
