// Quantized matmul (ops/matmul_quant.h), compiled for every Highway target and dispatched at
// run time.
//
// Full groups of 4 rows go to the x86 AVX2 kernel below or, on aarch64 cores with dotprod, to
// ops/matmul_quant_dotprod.cc; everything else to the portable Highway kernel described here.
// The work is cut into tiles of up to kQuantGroupRows weight rows (one packed group, see
// ops/quant_layout.h) x kQuantTokenTile tokens, each tile walking k block by block. A block of
// 32 is handled as two halves of 16 int16 lanes (at most: CappedTag), which for Q4_0 are the low
// and high nibbles of the same 16 bytes. Int8 quants are widened to int16 and multiplied
// pairwise into int32 (ReorderWidenMulAccumulate: pmaddwd on x86, widening multiply-accumulate
// on ARM), the block's int32 sum is converted once to f32 and accumulated with the product of
// the weight and activation scales. Exact in int32: |sum| <= 32 * 127 * 127 < 2^19.
// Q4_0 quants stay unsigned (0..15): sum((q - 8) * x) = sum(q * x) - 8 * sum(x), and the second
// term comes from the per-block sums that ops/quantize_rows.h stores with the activations.
#include "ops/matmul_quant.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_quant.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <type_traits>

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

#include "ops/simd_helpers-inl.h"
#include "ops/matmul_quant_dotprod.h"
#include "ops/matmul_quant_i8mm.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"
#include "ops/weight_prefetch.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#include "ops/count_dispatch-inl.h"

// Same register budget as ops/matmul-inl.h: x86 before AVX-512 has 16 vector registers.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
inline constexpr size_t kQuantTokenTile = 2;
#else
inline constexpr size_t kQuantTokenTile = 4;
#endif
// Weight scales are widened to f32 for this many blocks at a time (a stack buffer).
inline constexpr size_t kScaleChunkBlocks = 64;

#include "ops/matmul_group_driver-inl.h"

// Lanes [j, j + Lanes) of both halves of one weight block, as int16.
template <bool kQ4>
HWY_INLINE void LoadWeightHalves(const uint8_t* HWY_RESTRICT block, size_t j, V16& lo, V16& hi) {
  const D16 d16;
  if constexpr (kQ4) {
    const hn::Rebind<uint8_t, D16> du8;
    const V16 bytes = hn::PromoteTo(d16, hn::LoadU(du8, block + j));
    lo = hn::And(bytes, hn::Set(d16, 0x0F));
    hi = hn::ShiftRight<4>(bytes);
  } else {
    const hn::Rebind<int8_t, D16> d8;
    const int8_t* q = reinterpret_cast<const int8_t*>(block);
    lo = hn::PromoteTo(d16, hn::LoadU(d8, q + j));
    hi = hn::PromoteTo(d16, hn::LoadU(d8, q + 16 + j));
  }
}

// acc += (x_lo . w_lo + x_hi . w_hi) * scale, the dot products exact in int32.
HWY_INLINE void MulAddHalves(V16 x_lo, V16 x_hi, V16 w_lo, V16 w_hi, float scale, VF& acc) {
  const D32 d32;
  const DF df;
  auto odd = hn::Zero(d32);
  auto sum = hn::ReorderWidenMulAccumulate(d32, x_lo, w_lo, hn::Zero(d32), odd);
  sum = hn::ReorderWidenMulAccumulate(d32, x_hi, w_hi, sum, odd);
  sum = hn::RearrangeToOddPlusEven(sum, odd);
  acc = hn::MulAdd(hn::ConvertTo(df, sum), hn::Set(df, scale), acc);
}

// Widens count f16 scales to f32.
HWY_INLINE void WidenScales(const hwy::float16_t* HWY_RESTRICT in, size_t count,
                            float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= count; i += N) hn::Store(LoadAsF32(df, in + i), df, out + i);
  if (i < count) StorePartial(df, LoadPartialAsF32(df, in + i, count - i), out + i, count - i);
}

// One token's share of a block half for every row of the tile. q: the token's quants at the
// half's first lane; x_scale: its block scale; w_scale: the rows' block scales.
template <size_t kRows>
HWY_INLINE void TokenStep(const int8_t* HWY_RESTRICT q, float x_scale,
                          const float* HWY_RESTRICT w_scale, V16 l0, V16 h0, V16 l1, V16 h1, V16 l2,
                          V16 h2, V16 l3, V16 h3, VF& c0, VF& c1, VF& c2, VF& c3) {
  const D16 d16;
  const hn::Rebind<int8_t, D16> d8;
  const V16 x_lo = hn::PromoteTo(d16, hn::LoadU(d8, q));
  const V16 x_hi = hn::PromoteTo(d16, hn::LoadU(d8, q + 16));
  MulAddHalves(x_lo, x_hi, l0, h0, w_scale[0] * x_scale, c0);
  if constexpr (kRows > 1) MulAddHalves(x_lo, x_hi, l1, h1, w_scale[1] * x_scale, c1);
  if constexpr (kRows > 2) MulAddHalves(x_lo, x_hi, l2, h2, w_scale[2] * x_scale, c2);
  if constexpr (kRows > 3) MulAddHalves(x_lo, x_hi, l3, h3, w_scale[3] * x_scale, c3);
}

// y[r] = sum of lanes of c_r - offset * o_r, for one token's kRows outputs.
template <size_t kRows>
HWY_INLINE void StoreTokenColumn(VF c0, VF c1, VF c2, VF c3, float offset, float o0, float o1,
                                 float o2, float o3, float* HWY_RESTRICT y) {
  const DF df;
  y[0] = ReduceSum(df, c0) - offset * o0;
  if constexpr (kRows > 1) y[1] = ReduceSum(df, c1) - offset * o1;
  if constexpr (kRows > 2) y[2] = ReduceSum(df, c2) - offset * o2;
  if constexpr (kRows > 3) y[3] = ReduceSum(df, c3) - offset * o3;
}

// One tile: kRows rows of one packed group x kTokens tokens.
// w: the group's block 0 (ops/quant_layout.h); the tile's rows are rows first.. of the group's
// group_rows. ws: the scale of block 0 of the tile's first row; block b of tile row r has its
// scale at ws[b * group_rows + r]. x: the first token's Q8_ACT row; token t starts x_row_bytes
// later per token. y: y[t0, r0] of the output, row stride n_out.
template <size_t kRows, size_t kTokens, bool kQ4>
HWY_NOINLINE void Q8Q4TileMxN_Portable(const uint8_t* HWY_RESTRICT w,
                                       const hwy::float16_t* HWY_RESTRICT ws, size_t group_rows,
                                       size_t first, const uint8_t* HWY_RESTRICT x,
                                       size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                       size_t n_out) {
  static_assert(kRows >= 1 && kRows <= 4 && kTokens >= 1 && kTokens <= 4, "tile is at most 4x4");
  const D16 d16;
  const DF df;
  const size_t L = hn::Lanes(d16);
  const size_t block_bytes = kQ4 ? kQ4BlockBytes : kQ8BlockBytes;
  const size_t block_stride = group_rows * block_bytes;
  const size_t blocks = k / kQuantBlockElems;

  VF a00 = hn::Zero(df), a10 = hn::Zero(df), a20 = hn::Zero(df), a30 = hn::Zero(df);
  VF a01 = hn::Zero(df), a11 = hn::Zero(df), a21 = hn::Zero(df), a31 = hn::Zero(df);
  VF a02 = hn::Zero(df), a12 = hn::Zero(df), a22 = hn::Zero(df), a32 = hn::Zero(df);
  VF a03 = hn::Zero(df), a13 = hn::Zero(df), a23 = hn::Zero(df), a33 = hn::Zero(df);
  float offset[4][4] = {};  // Q4_0: sum over blocks of w_scale * x_scale * sum(x_q)

  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }

  HWY_ALIGN float w_scale[kScaleChunkBlocks * kQuantGroupRows];
  for (size_t b0 = 0; b0 < blocks; b0 += kScaleChunkBlocks) {
    const size_t chunk = HWY_MIN(kScaleChunkBlocks, blocks - b0);
    // Only the scales this tile owns: the last block's run ends at its kRows-th row.
    WidenScales(ws + b0 * group_rows, (chunk - 1) * group_rows + kRows, w_scale);
    for (size_t cb = 0; cb < chunk; ++cb) {
      const size_t b = b0 + cb;
      const uint8_t* HWY_RESTRICT group_block = w + b * block_stride;
      const float* HWY_RESTRICT sw = w_scale + cb * group_rows;
      // The rows' blocks, out of the 8-byte interleave (the x86 kernel reads it directly).
      HWY_ALIGN uint8_t row_blocks[4][kQ8BlockBytes];
      for (size_t r = 0; r < kRows; ++r) {
        CopyRowBlock(group_block, group_rows, first + r, block_bytes, row_blocks[r]);
      }
      // Rows past kRows reload row 0 and are never used, as in ops/matmul-inl.h.
      const uint8_t* wb = row_blocks[0];
      const uint8_t* w1 = row_blocks[kRows > 1 ? 1 : 0];
      const uint8_t* w2 = row_blocks[kRows > 2 ? 2 : 0];
      const uint8_t* w3 = row_blocks[kRows > 3 ? 3 : 0];
      for (size_t j = 0; j < 16; j += L) {
        V16 l0, h0, l1, h1, l2, h2, l3, h3;
        LoadWeightHalves<kQ4>(wb, j, l0, h0);
        LoadWeightHalves<kQ4>(w1, j, l1, h1);
        LoadWeightHalves<kQ4>(w2, j, l2, h2);
        LoadWeightHalves<kQ4>(w3, j, l3, h3);
        const size_t xb = b * kQuantBlockElems + j;
        TokenStep<kRows>(act[0].q + xb, act[0].scale[b], sw, l0, h0, l1, h1, l2, h2, l3, h3, a00,
                         a10, a20, a30);
        if constexpr (kTokens > 1) {
          TokenStep<kRows>(act[1].q + xb, act[1].scale[b], sw, l0, h0, l1, h1, l2, h2, l3, h3, a01,
                           a11, a21, a31);
        }
        if constexpr (kTokens > 2) {
          TokenStep<kRows>(act[2].q + xb, act[2].scale[b], sw, l0, h0, l1, h1, l2, h2, l3, h3, a02,
                           a12, a22, a32);
        }
        if constexpr (kTokens > 3) {
          TokenStep<kRows>(act[3].q + xb, act[3].scale[b], sw, l0, h0, l1, h1, l2, h2, l3, h3, a03,
                           a13, a23, a33);
        }
      }
      if constexpr (kQ4) {
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t t = 0; t < kTokens; ++t) {
            offset[r][t] += sw[r] * (act[t].scale[b] * static_cast<float>(act[t].sum[b]));
          }
        }
      }
    }
  }

  const float q4_offset = kQ4 ? 8.0f : 0.0f;
  StoreTokenColumn<kRows>(a00, a10, a20, a30, q4_offset, offset[0][0], offset[1][0], offset[2][0],
                          offset[3][0], y);
  if constexpr (kTokens > 1) {
    StoreTokenColumn<kRows>(a01, a11, a21, a31, q4_offset, offset[0][1], offset[1][1], offset[2][1],
                            offset[3][1], y + n_out);
  }
  if constexpr (kTokens > 2) {
    StoreTokenColumn<kRows>(a02, a12, a22, a32, q4_offset, offset[0][2], offset[1][2], offset[2][2],
                            offset[3][2], y + 2 * n_out);
  }
  if constexpr (kTokens > 3) {
    StoreTokenColumn<kRows>(a03, a13, a23, a33, q4_offset, offset[0][3], offset[1][3], offset[2][3],
                            offset[3][3], y + 3 * n_out);
  }
}

template <size_t kRows, bool kQ4>
HWY_INLINE void Q8Q4TileMxTokens_Portable(size_t tokens, const uint8_t* w, const hwy::float16_t* ws,
                                          size_t group_rows, size_t first, const uint8_t* x,
                                          size_t x_row_bytes, size_t k, float* y, size_t n_out) {
  DispatchCount<kQuantTokenTile>(tokens, [&](auto n) {
    Q8Q4TileMxN_Portable<kRows, decltype(n)::value, kQ4>(w, ws, group_rows, first, x, x_row_bytes,
                                                         k, y, n_out);
  });
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// x86 with AVX2: one full group of 4 rows against kTokens tokens, written with raw intrinsics
// because Highway 1.0.3 cannot express the instruction it is built on, vpmaddubsw (u8 x s8
// products summed in pairs to i16: 32 products in one instruction). Q4_0 quants are unsigned
// already (0..15, |pair sum| <= 2 * 15 * 127); Q8_0 moves the weight's sign onto the activation
// first (vpsignb), the usual trick. The 8-byte interleave of ops/quant_layout.h puts one 8-value
// chunk of all four rows in a vector, [r0 r1 | r2 r3], against the token's matching 8 quants
// broadcast to every 64-bit lane, so the block's four chunks add up vertically into
// [r0 r0 r1 r1 | r2 r2 r3 r3] (int32) and each token needs one convert and one multiply-add per
// block for all four rows. A horizontal-add version of this kernel already ran q4 decode and
// prefill well ahead of the portable one below; the interleave then removed the horizontal adds
// (figures: docs/kernels.md).
// The result is the same integer block sums as the portable kernel, scaled the same way.

// The group's block b as four vectors, one per 8-value chunk (chunk j: elements 8j..8j+7) of the
// four rows. Q4: unsigned quants 0..15; Q8: the signed quants.
template <bool kQ4>
HWY_INLINE void LoadGroupBlock(const uint8_t* HWY_RESTRICT block, __m256i& c0, __m256i& c1,
                               __m256i& c2, __m256i& c3) {
  const auto* v = reinterpret_cast<const __m256i*>(block);
  if constexpr (kQ4) {
    // Bytes 0-7 hold elements 0-7 (low nibbles) and 16-23 (high); bytes 8-15: 8-15 and 24-31.
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i b0 = _mm256_loadu_si256(v), b1 = _mm256_loadu_si256(v + 1);
    c0 = _mm256_and_si256(b0, low);
    c1 = _mm256_and_si256(b1, low);
    c2 = _mm256_and_si256(_mm256_srli_epi16(b0, 4), low);
    c3 = _mm256_and_si256(_mm256_srli_epi16(b1, 4), low);
  } else {
    c0 = _mm256_loadu_si256(v), c1 = _mm256_loadu_si256(v + 1);
    c2 = _mm256_loadu_si256(v + 2), c3 = _mm256_loadu_si256(v + 3);
  }
}

// The token's 8 quants of one chunk broadcast to every 64-bit lane; for Q8 with each weight's
// sign moved onto them, to be multiplied by |w|.
template <bool kQ4>
HWY_INLINE __m256i SignedChunk(const int8_t* HWY_RESTRICT x8, __m256i w) {
  int64_t chunk;
  memcpy(&chunk, x8, 8);
  const __m256i x = _mm256_set1_epi64x(chunk);
  if constexpr (kQ4) return x;
  return _mm256_sign_epi8(x, w);
}

// One chunk's products, i16 pair sums: [r0 x4, r1 x4 | r2 x4, r3 x4]. aw: the unsigned weight
// operand (Q4: w; Q8: |w|).
template <bool kQ4>
HWY_INLINE __m256i ChunkProducts(const int8_t* HWY_RESTRICT x8, __m256i w, __m256i aw) {
  return _mm256_maddubs_epi16(aw, SignedChunk<kQ4>(x8, w));
}

// One full group (4 rows) x kTokens tokens. w: the group's block 0; ws: the scale of its first
// row's block 0. x, x_row_bytes, k, y, n_out as for Q8Q4TileMxN_Portable.
template <size_t kTokens, bool kQ4>
HWY_NOINLINE void Q8Q4Tile4xN_Avx2(const uint8_t* HWY_RESTRICT w,
                                   const hwy::float16_t* HWY_RESTRICT ws,
                                   const uint8_t* HWY_RESTRICT x, size_t x_row_bytes, size_t k,
                                   float* HWY_RESTRICT y, size_t n_out) {
  constexpr size_t kBlockBytes = kQ4 ? kQ4BlockBytes : kQ8BlockBytes;
  const size_t blocks = k / kQuantBlockElems;
  [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);  // vpmaddwd pair sums
  __m256 acc[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = _mm256_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* HWY_RESTRICT wb = w + b * kQuantGroupRows * kBlockBytes;
    hwy::Prefetch(wb + kWeightPrefetchBytes);  // a group block: 64 bytes for Q4_0, 128 for Q8_0
    if constexpr (!kQ4) hwy::Prefetch(wb + kWeightPrefetchBytes + 64);
    __m256i c0, c1, c2, c3;
    LoadGroupBlock<kQ4>(wb, c0, c1, c2, c3);
    __m256i a0 = c0, a1 = c1, a2 = c2, a3 = c3;
    if constexpr (!kQ4) {
      a0 = _mm256_sign_epi8(c0, c0), a1 = _mm256_sign_epi8(c1, c1);
      a2 = _mm256_sign_epi8(c2, c2), a3 = _mm256_sign_epi8(c3, c3);
    }
    // The 4 rows' f16 scales as [s0 s0 s1 s1 | s2 s2 s3 s3], the lanes of the block sums.
    const __m128 s4 = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + b * 4)));
    const __m256 w_scale = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
    for (size_t t = 0; t < kTokens; ++t) {
      const int8_t* xb = act[t].q + b * kQuantBlockElems;
#if HWY_TARGET == HWY_AVX3_DL
      // vpdpbusd sums four u8 x s8 products into each int32 lane: one instruction per chunk,
      // in two independent chains. Q4 starts from -8 * sum(x) (half in each of a row's lanes).
      const __m256i start =
          kQ4 ? _mm256_set1_epi32(ScaledBlockSum(act[t].sum[b], -4)) : _mm256_setzero_si256();
      const __m256i s0 = DotBytesAccumulate(DotBytesAccumulate(start, a0, SignedChunk<kQ4>(xb, c0)),
                                            a1, SignedChunk<kQ4>(xb + 8, c1));
      const __m256i s1 = DotBytesAccumulate(
          DotBytesAccumulate(_mm256_setzero_si256(), a2, SignedChunk<kQ4>(xb + 16, c2)), a3,
          SignedChunk<kQ4>(xb + 24, c3));
      const __m256i sums = _mm256_add_epi32(s0, s1);
#else
      __m256i sums;
      if constexpr (kQ4) {
        // Four chunks of i16 pair sums add up to at most 4 * 3810 < 2^15 before widening.
        const __m256i p = _mm256_add_epi16(
            _mm256_add_epi16(ChunkProducts<true>(xb, c0, a0), ChunkProducts<true>(xb + 8, c1, a1)),
            _mm256_add_epi16(ChunkProducts<true>(xb + 16, c2, a2),
                             ChunkProducts<true>(xb + 24, c3, a3)));
        // Quants are stored + 8: subtract 8 * sum(x) per row, half of it in each of its lanes.
        sums = _mm256_sub_epi32(_mm256_madd_epi16(p, ones),
                                _mm256_set1_epi32(ScaledBlockSum(act[t].sum[b], 4)));
      } else {
        // |pair sum| <= 2 * 128 * 127 < 2^15 even for a -128 quant; widen each before adding.
        sums = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_madd_epi16(ChunkProducts<false>(xb, c0, a0), ones),
                             _mm256_madd_epi16(ChunkProducts<false>(xb + 8, c1, a1), ones)),
            _mm256_add_epi32(_mm256_madd_epi16(ChunkProducts<false>(xb + 16, c2, a2), ones),
                             _mm256_madd_epi16(ChunkProducts<false>(xb + 24, c3, a3), ones)));
      }
#endif
      const __m256 scale = _mm256_mul_ps(w_scale, _mm256_set1_ps(act[t].scale[b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc[t]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    // [r0 r0 r1 r1] and [r2 r2 r3 r3] -> [r0 r1 r2 r3]
    const __m128 rows =
        _mm_hadd_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
    _mm_storeu_ps(y + t * n_out, rows);
  }
}

#if HWY_TARGET == HWY_AVX3_DL
#include "ops/matmul_quant_decode_vnni-inl.h"
#endif

// One full group against 1 .. 4 tokens: on AVX-512 VNNI the 512-bit decode kernel.
template <size_t kTokens, bool kQ4>
HWY_INLINE void Q8Q4DecodeTile4xN_X86(const uint8_t* w, const hwy::float16_t* ws, const uint8_t* x,
                                      size_t x_row_bytes, size_t k, float* y, size_t n_out) {
#if HWY_TARGET == HWY_AVX3_DL
  Q8Q4Tile4xN_Avx512Vnni<kTokens, kQ4>(w, ws, x, x_row_bytes, k, y, n_out);
#else
  Q8Q4Tile4xN_Avx2<kTokens, kQ4>(w, ws, x, x_row_bytes, k, y, n_out);
#endif
}

#endif  // x86 with AVX2

#if HWY_TARGET == HWY_AVX3_DL
#include "ops/matmul_panel_vnni-inl.h"
#endif

// Q8_0 / Q4_0 as a MatMulGroupTiles family: the tiles above.
template <bool kQ4>
struct QuantGroups {
  const uint8_t* w;
  QuantLayout layout;
  size_t k, x_row_bytes, n_out;

  const uint8_t* Quants(size_t r) const { return w + layout.GroupBlockOffset(r, 0); }
  const hwy::float16_t* Scales(size_t r) const {
    return reinterpret_cast<const hwy::float16_t*>(w + layout.ScaleOffset(r, 0));
  }
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  template <size_t kTokens>
  void TileX86(size_t r, const uint8_t* x, float* y) const {
    if constexpr (kTokens == kX86TokenTile) {
      Q8Q4Tile4xN_Avx2<kTokens, kQ4>(Quants(r), Scales(r), x, x_row_bytes, k, y + r, n_out);
    } else {
      Q8Q4DecodeTile4xN_X86<kTokens, kQ4>(Quants(r), Scales(r), x, x_row_bytes, k, y + r, n_out);
    }
  }
#endif
#if HWY_ARCH_ARM_A64
  void TileI8mm(size_t tokens, size_t r, const uint8_t* x, float* y) const {
    Q8Q4Tile4xN_NeonI8mm(kQ4, tokens, Quants(r), reinterpret_cast<const uint16_t*>(Scales(r)), x,
                         x_row_bytes, k, y + r, n_out);
  }
  void TileDotProd(size_t tokens, size_t r, const uint8_t* x, float* y) const {
    Q8Q4Tile4xN_NeonDotProd(kQ4, tokens, Quants(r), reinterpret_cast<const uint16_t*>(Scales(r)), x,
                            x_row_bytes, k, y + r, n_out);
  }
#endif
  // The rows of r's group from r on (up to row_end), with the portable tiles.
  size_t Rest(size_t n_tokens, size_t r, size_t row_end, const uint8_t* x, float* y) const {
    const size_t group_rows = layout.GroupRows(r), first = r % kQuantGroupRows;
    const size_t rows = HWY_MIN(group_rows - first, row_end - r);
    for (size_t t = 0; t < n_tokens; t += kQuantTokenTile) {
      const size_t tokens = HWY_MIN(kQuantTokenTile, n_tokens - t);
      const uint8_t* xt = x + t * x_row_bytes;
      float* yt = y + t * n_out + r;
      const auto tile = [&](auto kRows) {
        Q8Q4TileMxTokens_Portable<decltype(kRows)::value, kQ4>(
            tokens, Quants(r), Scales(r), group_rows, first, xt, x_row_bytes, k, yt, n_out);
      };
      DispatchCount<4>(rows, tile);
    }
    return rows;
  }
};

// Rows [row_begin, row_end) for n_tokens tokens with the tiles above.
template <bool kQ4>
void MatMulQuantTiles(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                      float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                      size_t row_begin, size_t row_end) {
  const QuantGroups<kQ4> groups{w, QuantLayout(n_out, k, kQ4 ? kQ4BlockBytes : kQ8BlockBytes), k,
                                Q8ActRowBytes(k), n_out};
  MatMulGroupTiles(groups, x, y, n_tokens, row_begin, row_end);
}

#if HWY_TARGET == HWY_AVX3_DL
// Q8_0 and Q4_0 for the token panels: Q8_0's packed group blocks as they are, Q4_0's decoded
// into that layout as q - 8; the f16 scales widened.
template <bool kQ4>
struct QuantPanelSource {
  static constexpr size_t kHalves = 1;
  static constexpr bool kHasMin = false;
  static constexpr bool kSuperBlockTiles = false;
  const uint8_t* w;  // the tile's first group, block 0; groups group_stride bytes apart
  size_t group_stride;
  const hwy::float16_t* ws;  // the scale of its first row's block 0; groups scale_stride apart
  size_t scale_stride;

  template <size_t kGroups>
  void Load(size_t sub, size_t n, PanelRun<kGroups>* run) const {
    constexpr size_t kGroupBlockBytes = kQuantGroupRows * (kQ4 ? kQ4BlockBytes : kQ8BlockBytes);
    for (size_t i = 0; i < n; ++i) {
      for (size_t g = 0; g < kGroups; ++g) {
        const uint8_t* block = w + g * group_stride + (sub + i) * kGroupBlockBytes;
        if constexpr (kQ4) {
          __m256i c[4];
          LoadGroupBlock<true>(block, c[0], c[1], c[2], c[3]);
          for (size_t e = 0; e < 4; ++e) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(run->decoded[i][g] + 32 * e),
                               _mm256_sub_epi8(c[e], _mm256_set1_epi8(8)));
          }
          run->quants[i][g] = reinterpret_cast<const uint8_t*>(run->decoded[i][g]);
        } else {
          run->quants[i][g] = block;
        }
        _mm_storeu_ps(&run->scale[i][0][4 * g],
                      _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
                          ws + g * scale_stride + (sub + i) * kQuantGroupRows))));
      }
    }
  }
};
#endif

// Rows [row_begin, row_end) for n_tokens tokens, in token blocks. On AVX-512 VNNI enough tokens
// go to the token panels and the edges to the tiles.
template <bool kQ4>
void MatMulQuant(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                 float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out, size_t row_begin,
                 size_t row_end) {
  const auto tiles = [&](const uint8_t* xp, float* yp, size_t n, size_t rb, size_t re) {
    MatMulQuantTiles<kQ4>(w, xp, yp, n, k, n_out, rb, re);
  };
#if HWY_TARGET == HWY_AVX3_DL
  constexpr size_t kBlockBytes = kQ4 ? kQ4BlockBytes : kQ8BlockBytes;
  const QuantLayout layout(n_out, k, kBlockBytes);
  const size_t blocks = k / kQuantBlockElems;
  const auto source_at = [&](size_t r) {
    return QuantPanelSource<kQ4>{
        w + layout.GroupBlockOffset(r, 0), kQuantGroupRows * blocks * kBlockBytes,
        reinterpret_cast<const hwy::float16_t*>(w + layout.ScaleOffset(r, 0)),
        kQuantGroupRows * blocks};
  };
  MatMulPanelTokenBlocks(source_at, tiles, x, y, n_tokens, k, n_out, row_begin, row_end);
#else
  MatMulTokenBlocks(tiles, x, y, n_tokens, k, n_out, row_begin, row_end);
#endif
}

void MatMulQ8PerTarget(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                       float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                       size_t row_begin, size_t row_end) {
  MatMulQuant<false>(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulQ4PerTarget(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                       float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                       size_t row_begin, size_t row_end) {
  MatMulQuant<true>(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(MatMulQ8PerTarget);
HWY_EXPORT(MatMulQ4PerTarget);

void MatMulQ8(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k, size_t n_out,
              size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulQ8PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulQ4(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k, size_t n_out,
              size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulQ4PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

KESTREL_DEFINE_RESOLVE(MatMulQ8)
KESTREL_DEFINE_RESOLVE(MatMulQ4)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
