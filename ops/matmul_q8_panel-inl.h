// Q8_0 weights x Q8 activations for many tokens on AVX-512 VNNI (x86 AVX3_DL): tokens in the
// lanes. Included by ops/matmul_quant.cc inside its AVX3_DL namespace only (no include guard:
// that file is compiled once per Highway target and includes this for one of them).
//
// Why a second kernel beside QuantGroupTileX86: that one puts 4 weight rows in a 256-bit vector
// against one token's 8 quants broadcast, so every block of 32 costs each token, besides its
// 4 vpdpbusd, 4 vpsignb (moving the weight's sign onto the activation), a convert, a multiply
// and an FMA: about a third of the vector work is multiplication (121-152 GOP/s at the 128-token
// matmuls of all-MiniLM-L6-v2, ~1.3x the f32 FMA peak, where VNNI's is 4x). Here a 512-bit
// vector holds 4 quants of each of 16 tokens, and one vpdpbusd multiplies it by one weight
// row's 4 quants broadcast from memory (its {1to16} operand: no shuffle, no extra register):
// a row's block is 8 vpdpbusd for 16 tokens, then one convert, multiply and FMA.
// - Activations are repacked per 16 tokens into a panel [k/4][16 tokens] of 4-byte words (a
//   stack buffer of at most kPanelMaxK of k: longer rows are done in slices, adding into y).
//   vpdpbusd multiplies unsigned by signed bytes, so the panel holds q + 128 (XOR 0x80) and the
//   weights stay ggml's signed quants; each row's block starts its int32 sum at
//   -128 * sum(w), the weight quants' block sum, made with two vpdpbusd against ones per group
//   of 4 rows. Exact: |sum| <= 32 * 255 * 128 < 2^21.
// - A tile is up to 4 packed groups (16 rows) x 16 tokens: 16 f32 accumulators, the block's 8
//   panel vectors and its scales in registers (32 on AVX-512), then a 16 x 16 transpose turns
//   per-row token vectors into per-token rows of y.
// The integer block sums are the same as every other kernel's; the f32 sum of the blocks'
// scaled sums runs in another order (within the tests' bounds).

inline constexpr size_t kPanelTokens = 16;
inline constexpr size_t kPanelMaxK = 2048;  // 32 KiB of quants + 4 KiB of scales on the stack
inline constexpr size_t kPanelGroups = 4;
// Fewer tokens than this take the 8-token kernel: a padded panel lane costs as much as a used one.
inline constexpr size_t kPanelMinTokens = 8;

struct Q8ActPanel {
  alignas(64) uint32_t words[kPanelMaxK / 4 * kPanelTokens];             // [k/4][token]
  alignas(64) float scale[kPanelMaxK / kQuantBlockElems * kPanelTokens];  // [k/32][token]
};

// acc + vpdpbusd(u8, s8) on 512-bit vectors (assembly: see DotBytesAccumulate in ops/dispatch.h).
HWY_INLINE __m512i DotBytes512(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %[s8], %[u8], %[acc]" : [acc] "+v"(acc) : [u8] "v"(u8), [s8] "v"(s8));
  return acc;
}

// The same with the signed operand 4 bytes at s8_4 broadcast to every lane ({1to16}).
HWY_INLINE __m512i DotBytesBroadcast512(__m512i acc, __m512i u8, const uint8_t* s8_4) {
  using AliasedWord = int32_t __attribute__((may_alias));
  asm("vpdpbusd %[s8]%{1to16%}, %[u8], %[acc]"
      : [acc] "+v"(acc)
      : [u8] "v"(u8), [s8] "m"(*reinterpret_cast<const AliasedWord*>(s8_4)));
  return acc;
}

// Columns [k0, k0 + kk) of `count` Q8_ACT rows into the panel; lanes past count hold zeros
// (quant 0 = byte 128, scale 0).
inline void PackQ8Panel(const uint8_t* HWY_RESTRICT x, size_t x_row_bytes, size_t count,
                        size_t k, size_t k0, size_t kk, Q8ActPanel* HWY_RESTRICT panel) {
  const size_t words = kk / 4, blocks = kk / kQuantBlockElems;
  for (size_t t = 0; t < kPanelTokens; ++t) {
    if (t < count) {
      const uint8_t* row = x + t * x_row_bytes;
      for (size_t i = 0; i < words; ++i) {
        uint32_t word;
        memcpy(&word, row + k0 + 4 * i, 4);
        panel->words[i * kPanelTokens + t] = word ^ 0x80808080u;
      }
      const float* scale = reinterpret_cast<const float*>(row + k) + k0 / kQuantBlockElems;
      for (size_t b = 0; b < blocks; ++b) panel->scale[b * kPanelTokens + t] = scale[b];
    } else {
      for (size_t i = 0; i < words; ++i) panel->words[i * kPanelTokens + t] = 0x80808080u;
      for (size_t b = 0; b < blocks; ++b) panel->scale[b * kPanelTokens + t] = 0.0f;
    }
  }
}

// rows[r] (16 lanes = tokens) -> cols[t] (16 lanes = rows): a 16 x 16 transpose.
HWY_INLINE void Transpose16x16(const __m512* rows, __m512* cols) {
  __m512 t[16], u[16];
  for (size_t i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
  }
  // u[4q + j] holds, per 128-bit lane l, column 4l + j of rows 4q .. 4q + 3.
  for (size_t q = 0; q < 4; ++q) {
    const __m512d lo0 = _mm512_castps_pd(t[4 * q]), lo1 = _mm512_castps_pd(t[4 * q + 2]);
    const __m512d hi0 = _mm512_castps_pd(t[4 * q + 1]), hi1 = _mm512_castps_pd(t[4 * q + 3]);
    u[4 * q + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
    u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
    u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
    u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
  }
  for (size_t j = 0; j < 4; ++j) {
    // Lanes 0, 2 / 1, 3 of rows 0-3 and 4-7, then of rows 8-11 and 12-15.
    const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    cols[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    cols[8 + j] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    cols[4 + j] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    cols[12 + j] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

// kGroups full packed groups (4 kGroups rows) x the panel's tokens, over the panel's blocks.
// w: block b0 of the first group (groups follow each other, group_stride bytes apart); ws: the
// f16 scale of its first row's block b0, group g's at ws + g * scale_stride. y: y[t0, r0], row
// stride n_out; `accumulate` adds to y (a later slice of k) instead of storing.
template <size_t kGroups>
HWY_NOINLINE void Q8PanelTile(const Q8ActPanel& HWY_RESTRICT panel, size_t count, size_t blocks,
                              const uint8_t* HWY_RESTRICT w, size_t group_stride,
                              const hwy::float16_t* HWY_RESTRICT ws, size_t scale_stride,
                              bool accumulate, float* HWY_RESTRICT y, size_t n_out) {
  constexpr size_t kRows = 4 * kGroups;
  constexpr size_t kGroupBlockBytes = kQuantGroupRows * kQ8BlockBytes;
  // First, per block and row: -128 * (the block's sum of weight quants), the int32 sum's start,
  // and the f32 weight scale. Kept in memory, so that the loop below reads each with a
  // broadcast load instead of shuffling it out of a register.
  alignas(64) int32_t start[kPanelMaxK / kQuantBlockElems][kRows];
  alignas(64) float w_scale[kPanelMaxK / kQuantBlockElems][kRows];
  const __m512i ones = _mm512_set1_epi8(1);
  // Row r's sums land in dwords 2r, 2r + 1 (chunk 0 or 2) and 8 + 2r, 9 + 2r (chunk 1 or 3).
  const __m256i pick_rows = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t g = 0; g < kGroups; ++g) {
      const uint8_t* gb = w + g * group_stride + b * kGroupBlockBytes;
      const __m512i sums = DotBytes512(DotBytes512(_mm512_setzero_si512(), ones,
                                                   _mm512_loadu_si512(gb)),
                                       ones, _mm512_loadu_si512(gb + 64));
      __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(sums),
                                      _mm512_extracti64x4_epi64(sums, 1));
      half = _mm256_hadd_epi32(half, half);  // [r0 r1 r0 r1 | r2 r3 r2 r3]
      half = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(half, 7));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(&start[b][4 * g]),
                       _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(half, pick_rows)));
      _mm_storeu_ps(&w_scale[b][4 * g],
                    _mm_cvtph_ps(_mm_loadl_epi64(
                        reinterpret_cast<const __m128i*>(ws + g * scale_stride + b * 4))));
    }
  }
  __m512 acc[kPanelTokens];
  for (size_t r = 0; r < kPanelTokens; ++r) acc[r] = _mm512_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    __m512i act[8];
    for (size_t s = 0; s < 8; ++s) {
      act[s] = _mm512_load_si512(panel.words + (b * 8 + s) * kPanelTokens);
    }
    const __m512 x_scale = _mm512_load_ps(panel.scale + b * kPanelTokens);
#pragma GCC unroll 16
    for (size_t r = 0; r < kRows; ++r) {
      const size_t g = r / 4, in_group = r % 4;
      __m512i sum = _mm512_set1_epi32(start[b][r]);
      // Row in_group's 8-byte chunk c sits at c * 32 + in_group * 8 of the group block.
      const uint8_t* wr = w + g * group_stride + b * kGroupBlockBytes + in_group * 8;
#pragma GCC unroll 8
      for (size_t s = 0; s < 8; ++s) {
        sum = DotBytesBroadcast512(sum, act[s], wr + s / 2 * 32 + s % 2 * 4);
      }
      acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum),
                                             _mm512_set1_ps(w_scale[b][r])),
                               x_scale, acc[r]);
    }
  }
  __m512 cols[kPanelTokens];
  Transpose16x16(acc, cols);
  const __mmask16 row_mask = static_cast<__mmask16>((1u << kRows) - 1);
  for (size_t t = 0; t < count; ++t) {
    float* out = y + t * n_out;
    __m512 v = cols[t];
    if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(row_mask, out));
    _mm512_mask_storeu_ps(out, row_mask, v);
  }
}

// Rows [row_begin, row_end) (whole packed groups of 4) x n_tokens tokens (at least
// kPanelMinTokens): token panels of 16, k in slices of kPanelMaxK, row tiles of 16.
inline void MatMulQ8Panels(const uint8_t* HWY_RESTRICT w, const uint8_t* HWY_RESTRICT x,
                           float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                           size_t row_begin, size_t row_end) {
  const QuantLayout layout(n_out, k, kQ8BlockBytes);
  const size_t x_row_bytes = Q8ActRowBytes(k);
  const size_t blocks_per_row = k / kQuantBlockElems;
  const size_t group_stride = kQuantGroupRows * blocks_per_row * kQ8BlockBytes;
  const size_t scale_stride = kQuantGroupRows * blocks_per_row;
  Q8ActPanel panel;
  for (size_t t0 = 0; t0 < n_tokens; t0 += kPanelTokens) {
    const size_t count = HWY_MIN(kPanelTokens, n_tokens - t0);
    for (size_t k0 = 0; k0 < k; k0 += kPanelMaxK) {
      const size_t kk = HWY_MIN(kPanelMaxK, k - k0);
      const size_t b0 = k0 / kQuantBlockElems, blocks = kk / kQuantBlockElems;
      PackQ8Panel(x + t0 * x_row_bytes, x_row_bytes, count, k, k0, kk, &panel);
      for (size_t r = row_begin; r < row_end;) {
        const size_t groups = HWY_MIN(kPanelGroups, (row_end - r) / kQuantGroupRows);
        const uint8_t* wt = w + layout.GroupBlockOffset(r, b0);
        const auto* ws = reinterpret_cast<const hwy::float16_t*>(w + layout.ScaleOffset(r, b0));
        float* yt = y + t0 * n_out + r;
        const bool accumulate = k0 > 0;
        switch (groups) {
          case 1:
            Q8PanelTile<1>(panel, count, blocks, wt, group_stride, ws, scale_stride, accumulate,
                           yt, n_out);
            break;
          case 2:
            Q8PanelTile<2>(panel, count, blocks, wt, group_stride, ws, scale_stride, accumulate,
                           yt, n_out);
            break;
          case 3:
            Q8PanelTile<3>(panel, count, blocks, wt, group_stride, ws, scale_stride, accumulate,
                           yt, n_out);
            break;
          default:
            Q8PanelTile<4>(panel, count, blocks, wt, group_stride, ws, scale_stride, accumulate,
                           yt, n_out);
        }
        r += groups * kQuantGroupRows;
      }
    }
  }
}
