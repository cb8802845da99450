// Integer matmul for many tokens on AVX-512 VNNI (x86 AVX3_DL), tokens in the lanes: Q8_0 and
// Q4_0 (ops/matmul_quant.cc) and the kept GGUF types (ops/matmul_blocks.cc). Included by those
// files inside their AVX3_DL namespace only (no include guard: each is compiled once per
// Highway target and includes this for one of them).
//
// Why beside the 4-row tiles: those put 4 weight rows in a 256-bit vector against one token's
// 8 quants broadcast, so every sub-block of 32 costs each token, besides its 4 vpdpbusd, the
// broadcasts, a convert, a multiply and an FMA (and for signed weights 4 vpsignb): about a third
// of the vector work is multiplication, far from VNNI's peak. Here a 512-bit vector holds 4
// quants of each of 16 tokens, and one vpdpbusd multiplies it by one weight row's 4 quants
// broadcast from memory (its {1to16} operand: no shuffle, no extra register): a row's
// sub-block is 8 vpdpbusd for 16 tokens, then one convert, multiply and FMA per scale.
// - Activations are repacked per 16 tokens into a panel [k/4][16 tokens] of 4-byte words (a
//   stack buffer of at most kPanelMaxK of k: longer rows are done in slices, adding into y).
//   vpdpbusd multiplies unsigned by signed bytes, so the panel holds q + 128 (XOR 0x80) and the
//   weights are signed bytes; each row's sub-block starts its int32 sum at -128 * sum(w), the
//   weight quants' sum, made with vpdpbusd against ones. Exact: |sum| <= 32 * 255 * 128 < 2^21.
// - Weights are read as Q8_0's packed group blocks (ops/quant_layout.h: 4 rows, 8-byte chunks):
//   Q8_0 in place; Q4_0 and a kept type's sub-block decoded into that layout first (ops/
//   matmul_blocks.cc LoadGroupSubBlock), once per 16 tokens: Q4_0, Q5_0, Q6_K and Q3_K as the
//   signed q - 8, q - 16, q - 32 and q - 4, Q4_1 and Q5_1 unsigned with their min term added as
//   min * x_scale * sum(x_q) per sub-block, Q4_K and Q5_K likewise with their
//   sub-blocks' scales and mins. Q2_K stays on the tiles.
// - A tile is up to 4 packed groups (16 rows) x 16 tokens: 16 f32 accumulators, a sub-block's
//   8 panel vectors and its scales in registers (32 on AVX-512), then a 16 x 16 transpose turns
//   per-row token vectors into per-token rows of y. Per run of 8 sub-blocks the weight side
//   (sums, scales, decoded quants) is laid out in memory first, so that the loop reads each
//   value with a broadcast load instead of shuffling it out of a register.
// The integer sums are the same as the tiles'; the f32 sum of the scaled sums runs in another
// order (within the tests' bounds).

inline constexpr size_t kPanelTokens = 16;
inline constexpr size_t kSuperBlockElems = 256;  // a K-quant super-block
inline constexpr size_t kSuperBlocks = kSuperBlockElems / kQuantBlockElems;
inline constexpr size_t kPanelMaxK = 2048;  // 32 KiB of quants + 8 KiB of scales and sums
inline constexpr size_t kPanelGroups = 4;
// Panels a row tile serves per pass: the tile's weight side (decoded quants, scales, each block's
// -128 * sum(w) start) is prepared once for all of them, so more panels share that work: 4
// panels (164 KiB of stack) beat one at Gemma's and MiniLM's prefill shapes, and 8 (328 KiB)
// beat 4, with no shape of bench/matmul_bench slower (figures: docs/kernels.md).
inline constexpr size_t kPanelGroupMax = 8;
inline constexpr size_t kPanelRun = 8;  // sub-blocks whose weight side is prepared at a time
inline constexpr size_t kPanelGroupBlockBytes = kQuantGroupRows * kQ8BlockBytes;
// Fewer tokens than this take the tiles: a padded panel lane costs as much as a used one.
inline constexpr size_t kPanelMinTokens = 8;

// The token block (ForEachTokenBlock) of a matmul whose many-token work goes to the panels: they
// keep their activations in L2 themselves (slices of kPanelMaxK), so a block need not shrink
// with k below one pass of kPanelGroupMax panels. At k = 8192 the L2 budget gives 16 tokens, one
// panel a pass, which loses the weight side's sharing across panels (figures: docs/kernels.md).
inline constexpr size_t kPanelTokenBlock = kPanelGroupMax * kPanelTokens;

struct Q8ActPanel {
  alignas(64) uint32_t words[kPanelMaxK / 4 * kPanelTokens];                   // [k/4][token]
  alignas(64) float scale[kPanelMaxK / kQuantBlockElems * kPanelTokens];       // [k/32][token]
  alignas(64) float scaled_sum[kPanelMaxK / kQuantBlockElems * kPanelTokens];  // scale * sum(q)
  // For the super-block tiles: sum(q) of blocks 2p and 2p + 1 as int16 halves of one word
  // ([k/64][token]; |sum| <= 32 * 127), and whether every token's eight block scales of each
  // super-block of 256 in the slice are one (QuantizeRows with scale_block 256 writes them so).
  alignas(64) uint32_t sum_pairs[kPanelMaxK / (2 * kQuantBlockElems) * kPanelTokens];
  bool super_uniform;
};

// The weight side of kPanelRun sub-blocks of a tile's 4 kGroups rows, as a source fills it:
// each group's 128 signed quant bytes in Q8_0's group-block layout, and per row the scale of
// each half (two halves of 16 for Q6_K and Q3_K, else one) and the min (types with one).
template <size_t kGroups>
struct PanelRun {
  const uint8_t* quants[kPanelRun][kGroups];
  alignas(64) int8_t decoded[kPanelRun][kGroups][kPanelGroupBlockBytes];
  alignas(64) float scale[kPanelRun][2][4 * kGroups];
  alignas(64) float min[kPanelRun][4 * kGroups];
};

// The same with the signed operand 4 bytes at s8_4 broadcast to every lane ({1to16}).
HWY_INLINE __m512i DotBytesBroadcast512(__m512i acc, __m512i u8, const void* s8_4) {
  using AliasedWord = int32_t __attribute__((may_alias));
  asm("vpdpbusd %[s8]%{1to16%}, %[u8], %[acc]"
      : [acc] "+v"(acc)
      : [u8] "v"(u8), [s8] "m"(*reinterpret_cast<const AliasedWord*>(s8_4)));
  return acc;
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

// Columns [k0, k0 + kk) of `count` Q8_ACT rows into the panel; lanes past count hold zeros
// (quant 0 = byte 128, scale 0). A full panel moves its quants 64 bytes per token at a time
// through a 16 x 16 transpose of 4-byte words (one word at a time cost MiniLM's q8 encoder 4% of
// its time: 16 scattered stores per 64 bytes).
inline void PackQ8Panel(const uint8_t* HWY_RESTRICT x, size_t x_row_bytes, size_t count, size_t k,
                        size_t k0, size_t kk, Q8ActPanel* HWY_RESTRICT panel) {
  const size_t words = kk / 4, blocks = kk / kQuantBlockElems;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  size_t word0 = 0;
  if (count == kPanelTokens) {
    for (; word0 + kPanelTokens <= words; word0 += kPanelTokens) {
      __m512 rows[kPanelTokens], cols[kPanelTokens];
      for (size_t t = 0; t < kPanelTokens; ++t) {
        const uint8_t* row = x + t * x_row_bytes + k0 + 4 * word0;
        rows[t] = _mm512_loadu_ps(reinterpret_cast<const float*>(row));
      }
      Transpose16x16(rows, cols);
      for (size_t i = 0; i < kPanelTokens; ++i) {
        _mm512_store_si512(panel->words + (word0 + i) * kPanelTokens,
                           _mm512_xor_si512(_mm512_castps_si512(cols[i]), flip));
      }
    }
  }
  panel->super_uniform = kk % kSuperBlockElems == 0;
  for (size_t t = 0; t < kPanelTokens; ++t) {
    if (t < count) {
      const uint8_t* row = x + t * x_row_bytes;
      for (size_t i = word0; i < words; ++i) {
        uint32_t word;
        memcpy(&word, row + k0 + 4 * i, 4);
        panel->words[i * kPanelTokens + t] = word ^ 0x80808080u;
      }
      const float* scale = reinterpret_cast<const float*>(row + k);
      const int32_t* sum = reinterpret_cast<const int32_t*>(scale + k / kQuantBlockElems);
      const size_t b0 = k0 / kQuantBlockElems;
      for (size_t b = 0; b < blocks; ++b) {
        panel->scale[b * kPanelTokens + t] = scale[b0 + b];
        panel->scaled_sum[b * kPanelTokens + t] = scale[b0 + b] * static_cast<float>(sum[b0 + b]);
        // (b0 is a multiple of 64 blocks: slices start at multiples of kPanelMaxK.)
        panel->super_uniform &= scale[b0 + b] == scale[b0 + b / kSuperBlocks * kSuperBlocks];
      }
      for (size_t b = 0; b + 1 < blocks; b += 2) {
        panel->sum_pairs[b / 2 * kPanelTokens + t] =
            static_cast<uint16_t>(sum[b0 + b]) | uint32_t{static_cast<uint16_t>(sum[b0 + b + 1])}
                                                     << 16;
      }
    } else {
      for (size_t i = 0; i < words; ++i) panel->words[i * kPanelTokens + t] = 0x80808080u;
      for (size_t b = 0; b < blocks; ++b) {
        panel->scale[b * kPanelTokens + t] = 0.0f;
        panel->scaled_sum[b * kPanelTokens + t] = 0.0f;
      }
      for (size_t b = 0; b + 1 < blocks; b += 2) panel->sum_pairs[b / 2 * kPanelTokens + t] = 0;
    }
  }
}

// -128 * each of a group's 4 rows' sums of the bytes in `sums` (vpdpbusd against ones: row r's
// in dwords 2r, 2r + 1, 8 + 2r and 9 + 2r), to out[0..3].
HWY_INLINE void StoreRowStarts(__m512i sums, int32_t* HWY_RESTRICT out) {
  __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(sums), _mm512_extracti64x4_epi64(sums, 1));
  half = _mm256_hadd_epi32(half, half);  // [r0 r1 r0 r1 | r2 r3 r2 r3]
  half = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(half, 7));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                       half, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7))));
}

// A tile's per-row token sums (sums[p][row] lanes = panel p's tokens) into rows of y.
template <size_t kRows>
HWY_INLINE void StorePanelSums(const float (*sums)[kPanelTokens][16], const size_t* counts,
                               size_t n_panels, bool accumulate, float* HWY_RESTRICT y,
                               size_t n_out) {
  const __mmask16 row_mask = static_cast<__mmask16>((1u << kRows) - 1);
  for (size_t p = 0; p < n_panels; ++p) {
    __m512 acc[kPanelTokens], cols[kPanelTokens];
    for (size_t r = 0; r < kPanelTokens; ++r) acc[r] = _mm512_load_ps(sums[p][r]);
    Transpose16x16(acc, cols);
    for (size_t t = 0; t < counts[p]; ++t) {
      float* out = y + (p * kPanelTokens + t) * n_out;
      __m512 v = cols[t];
      if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(row_mask, out));
      _mm512_mask_storeu_ps(out, row_mask, v);
    }
  }
}

// Each of the first n sub-blocks' rows (for kHalves 2 each half's) -128 * the sum of its quants,
// to start[i][half][row]: the correction of the +128 the panel adds to every activation.
template <size_t kHalves, size_t kGroups, size_t kRows>
HWY_INLINE void StoreRunStarts(const uint8_t* const (*quants)[kGroups], size_t n,
                               int32_t (*start)[kHalves][kRows]) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (size_t i = 0; i < n; ++i) {
    for (size_t g = 0; g < kGroups; ++g) {
      const uint8_t* q = quants[i][g];
      const __m512i lo = DotBytes512(_mm512_setzero_si512(), ones, _mm512_loadu_si512(q));
      const __m512i hi = DotBytes512(_mm512_setzero_si512(), ones, _mm512_loadu_si512(q + 64));
      if constexpr (kHalves == 1) {
        StoreRowStarts(_mm512_add_epi32(lo, hi), &start[i][0][4 * g]);
      } else {
        StoreRowStarts(lo, &start[i][0][4 * g]);
        StoreRowStarts(hi, &start[i][1][4 * g]);
      }
    }
  }
}

// Source: kHalves (1, or 2 for scales per 16), kHasMin, and
// Load<kGroups>(sub, n, run): sub-blocks sub .. sub + n - 1 (n <= kPanelRun) of the tile's rows.
template <class Source, size_t kGroups>
HWY_NOINLINE void PanelTileMx16_Avx512Vnni(const Q8ActPanel* HWY_RESTRICT panels,
                                           const size_t* counts, size_t n_panels,
                                           const Source& source, size_t sub0, size_t subs,
                                           bool accumulate, float* HWY_RESTRICT y, size_t n_out) {
  constexpr size_t kRows = 4 * kGroups;
  constexpr size_t kHalves = Source::kHalves;
  constexpr size_t kStepsPerHalf = 8 / kHalves;  // 4-byte words per scale
  // Each panel's accumulators, kept here between runs (the registers serve one panel at a time).
  alignas(64) float sums[kPanelGroupMax][kPanelTokens][16];
  for (size_t p = 0; p < n_panels; ++p) {
    for (size_t r = 0; r < kPanelTokens; ++r) _mm512_store_ps(sums[p][r], _mm512_setzero_ps());
  }
  PanelRun<kGroups> run;
  alignas(64) int32_t start[kPanelRun][kHalves][kRows];
  for (size_t run0 = 0; run0 < subs; run0 += kPanelRun) {
    const size_t n = HWY_MIN(kPanelRun, subs - run0);
    source.template Load<kGroups>(sub0 + run0, n, &run);
    StoreRunStarts<kHalves, kGroups, kRows>(run.quants, n, start);
    for (size_t p = 0; p < n_panels; ++p) {
      const Q8ActPanel& panel = panels[p];
      __m512 acc[kPanelTokens];
      for (size_t r = 0; r < kPanelTokens; ++r) acc[r] = _mm512_load_ps(sums[p][r]);
      for (size_t i = 0; i < n; ++i) {
        const size_t b = run0 + i;
        __m512i act[8];
        for (size_t s = 0; s < 8; ++s) {
          act[s] = _mm512_load_si512(panel.words + (b * 8 + s) * kPanelTokens);
        }
        const __m512 x_scale = _mm512_load_ps(panel.scale + b * kPanelTokens);
        [[maybe_unused]] __m512 x_sum;
        if constexpr (Source::kHasMin) {
          x_sum = _mm512_load_ps(panel.scaled_sum + b * kPanelTokens);
        }
#pragma GCC unroll 16
        for (size_t r = 0; r < kRows; ++r) {
          // Row r's 8-byte chunk c sits at c * 32 + (r % 4) * 8 of its group block.
          const uint8_t* wr = run.quants[i][r / 4] + r % 4 * 8;
#pragma GCC unroll 2
          for (size_t h = 0; h < kHalves; ++h) {
            // Two dependency chains of vpdpbusd instead of one hide its latency at MiniLM's and
            // Gemma's prefill shapes (four chains spill registers and lose the gain again).
            __m512i sum = _mm512_set1_epi32(start[i][h][r]), sum2 = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (size_t s = h * kStepsPerHalf; s < (h + 1) * kStepsPerHalf; s += 2) {
              sum = DotBytesBroadcast512(sum, act[s], wr + s / 2 * 32);
              sum2 = DotBytesBroadcast512(sum2, act[s + 1], wr + s / 2 * 32 + 4);
            }
            sum = _mm512_add_epi32(sum, sum2);
            acc[r] = _mm512_fmadd_ps(
                _mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(run.scale[i][h][r])), x_scale,
                acc[r]);
          }
          if constexpr (Source::kHasMin) {
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(run.min[i][r]), x_sum, acc[r]);
          }
        }
      }
      for (size_t r = 0; r < kPanelTokens; ++r) _mm512_store_ps(sums[p][r], acc[r]);
    }
  }
  StorePanelSums<kRows>(sums, counts, n_panels, accumulate, y, n_out);
}

// The weight side of one super-block (kSuperBlocks sub-blocks) of a tile's rows for
// PanelSuperTileMx16_Avx512Vnni: the quants as PanelRun's, and per row the integer scale of each
// sub-block (of each half of 16 for kHalves 2: [row][2 * sub + half]), the integer mins in int16
// pairs (sub-blocks 2p and 2p + 1 in word p) and the super-block's factors d and dmin.
template <size_t kGroups, size_t kHalves>
struct PanelSuperRun {
  const uint8_t* quants[kSuperBlocks][kGroups];
  alignas(64) int8_t decoded[kSuperBlocks][kGroups][kPanelGroupBlockBytes];
  alignas(64) int32_t scale[4 * kGroups][kSuperBlocks * kHalves];
  alignas(64) uint32_t min_pairs[4 * kGroups][kSuperBlocks / 2];
  alignas(64) float d[4 * kGroups];
  alignas(64) float dmin[4 * kGroups];
};

// The K-quants against activations whose 8 block scales per super-block are one (every panel's
// super_uniform: QuantizeRows with scale_block 256, which the converter gives their matmuls): a
// super-block's sub-block sums are scaled by their integer scales and added in int32, then
// converted and multiplied once per super-block, as llama.cpp's Q8_K activations allow. Per row
// and sub-block that is 8 vpdpbusd, a multiply and an add (Q6_K: two of each) where
// PanelTileMx16_Avx512Vnni spends 8 vpdpbusd, a convert, a multiply and an FMA per scale and
// one more FMA for a min. The mins are one integer dot of the super-block's 8 mins and the
// tokens' 8 block sums (4 vpdpwssd of int16 pairs). That brings the K-quants' prefill nearer
// Q8_0's (figures: docs/kernels.md). Integer sums wrap harmlessly: the corrected total is at most
// 16 halves * 127 * 16 * 127 * 32 < 2^31.
// Source: kHalves, kHasMin and LoadSuper<kGroups>(sub, run): super-block sub / kSuperBlocks.
template <class Source, size_t kGroups>
HWY_NOINLINE void PanelSuperTileMx16_Avx512Vnni(const Q8ActPanel* HWY_RESTRICT panels,
                                                const size_t* counts, size_t n_panels,
                                                const Source& source, size_t sub0, size_t subs,
                                                bool accumulate, float* HWY_RESTRICT y,
                                                size_t n_out) {
  constexpr size_t kRows = 4 * kGroups;
  constexpr size_t kHalves = Source::kHalves;
  constexpr size_t kStepsPerHalf = 8 / kHalves;
  alignas(64) float sums[kPanelGroupMax][kPanelTokens][16];
  for (size_t p = 0; p < n_panels; ++p) {
    for (size_t r = 0; r < kPanelTokens; ++r) _mm512_store_ps(sums[p][r], _mm512_setzero_ps());
  }
  PanelSuperRun<kGroups, kHalves> run;
  for (size_t run0 = 0; run0 < subs; run0 += kSuperBlocks) {
    source.template LoadSuper<kGroups>(sub0 + run0, &run);
    // Each row's correction of the +128 the panel adds to every activation: the sum over the
    // super-block of scale * -128 * sum(w), where PanelTileMx16 starts each sub-block's sum.
    alignas(64) int32_t starts[kSuperBlocks][kHalves][kRows];
    StoreRunStarts<kHalves, kGroups, kRows>(run.quants, kSuperBlocks, starts);
    alignas(64) int32_t start[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      uint32_t total = 0;  // wrapping, as the vector lanes do
      for (size_t i = 0; i < kSuperBlocks; ++i) {
        for (size_t h = 0; h < kHalves; ++h) {
          total += static_cast<uint32_t>(starts[i][h][r]) *
                   static_cast<uint32_t>(run.scale[r][i * kHalves + h]);
        }
      }
      start[r] = static_cast<int32_t>(total);
    }
    const size_t b0 = run0;  // the super-block's first sub-block within the slice
    for (size_t p = 0; p < n_panels; ++p) {
      const Q8ActPanel& panel = panels[p];
      __m512i acc[kRows];
      for (size_t r = 0; r < kRows; ++r) acc[r] = _mm512_set1_epi32(start[r]);
      for (size_t i = 0; i < kSuperBlocks; ++i) {
        __m512i act[8];
        for (size_t s = 0; s < 8; ++s) {
          act[s] = _mm512_load_si512(panel.words + ((b0 + i) * 8 + s) * kPanelTokens);
        }
#pragma GCC unroll 16
        for (size_t r = 0; r < kRows; ++r) {
          const uint8_t* wr = run.quants[i][r / 4] + r % 4 * 8;
#pragma GCC unroll 2
          for (size_t h = 0; h < kHalves; ++h) {
            __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (size_t s = h * kStepsPerHalf; s < (h + 1) * kStepsPerHalf; ++s) {
              sum = DotBytesBroadcast512(sum, act[s], wr + s / 2 * 32 + s % 2 * 4);
            }
            acc[r] = _mm512_add_epi32(
                acc[r], _mm512_mullo_epi32(sum, _mm512_set1_epi32(run.scale[r][i * kHalves + h])));
          }
        }
      }
      const __m512 x_scale = _mm512_load_ps(panel.scale + b0 * kPanelTokens);
      [[maybe_unused]] __m512i pairs[kSuperBlocks / 2];
      if constexpr (Source::kHasMin) {
        for (size_t j = 0; j < kSuperBlocks / 2; ++j) {
          pairs[j] = _mm512_load_si512(panel.sum_pairs + (b0 / 2 + j) * kPanelTokens);
        }
      }
#pragma GCC unroll 16
      for (size_t r = 0; r < kRows; ++r) {
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), _mm512_set1_ps(run.d[r]));
        if constexpr (Source::kHasMin) {
          __m512i m = _mm512_setzero_si512();
          for (size_t j = 0; j < kSuperBlocks / 2; ++j) {
            m = DotPairs512(m, pairs[j],
                            _mm512_set1_epi32(static_cast<int32_t>(run.min_pairs[r][j])));
          }
          v = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(run.dmin[r]), v);
        }
        _mm512_store_ps(sums[p][r], _mm512_fmadd_ps(v, x_scale, _mm512_load_ps(sums[p][r])));
      }
    }
  }
  StorePanelSums<kRows>(sums, counts, n_panels, accumulate, y, n_out);
}

// Rows [row_begin, row_end) (whole packed groups of 4) x n_tokens tokens: token panels of 16,
// k in slices of kPanelMaxK, row tiles of 16. source_at(r) gives the Source of the tile whose
// first row is r.
template <class SourceAt>
void MatMulPanels(const SourceAt& source_at, const uint8_t* HWY_RESTRICT x, float* HWY_RESTRICT y,
                  size_t n_tokens, size_t k, size_t n_out, size_t row_begin, size_t row_end) {
  const size_t x_row_bytes = Q8ActRowBytes(k);
  Q8ActPanel panels[kPanelGroupMax];
  size_t counts[kPanelGroupMax];
  for (size_t t0 = 0; t0 < n_tokens; t0 += kPanelGroupMax * kPanelTokens) {
    size_t n_panels = 0;
    for (size_t t = t0; t < n_tokens && n_panels < kPanelGroupMax; t += kPanelTokens) {
      counts[n_panels++] = HWY_MIN(kPanelTokens, n_tokens - t);
    }
    for (size_t k0 = 0; k0 < k; k0 += kPanelMaxK) {
      const size_t kk = HWY_MIN(kPanelMaxK, k - k0);
      const size_t sub0 = k0 / kQuantBlockElems, subs = kk / kQuantBlockElems;
      for (size_t p = 0; p < n_panels; ++p) {
        PackQ8Panel(x + (t0 + p * kPanelTokens) * x_row_bytes, x_row_bytes, counts[p], k, k0, kk,
                    &panels[p]);
      }
      for (size_t r = row_begin; r < row_end;) {
        const size_t groups = HWY_MIN(kPanelGroups, (row_end - r) / kQuantGroupRows);
        const auto source = source_at(r);
        float* yt = y + t0 * n_out + r;
        const bool accumulate = k0 > 0;
        using Source = decltype(source);
        if constexpr (Source::kSuperBlockTiles) {
          bool uniform = sub0 % kSuperBlocks == 0;
          for (size_t p = 0; p < n_panels; ++p) uniform &= panels[p].super_uniform;
          if (uniform) {
            DispatchCount<kPanelGroups>(groups, [&](auto n) {
              PanelSuperTileMx16_Avx512Vnni<Source, decltype(n)::value>(
                  panels, counts, n_panels, source, sub0, subs, accumulate, yt, n_out);
            });
            r += groups * kQuantGroupRows;
            continue;
          }
        }
        DispatchCount<kPanelGroups>(groups, [&](auto n) {
          PanelTileMx16_Avx512Vnni<Source, decltype(n)::value>(panels, counts, n_panels, source,
                                                               sub0, subs, accumulate, yt, n_out);
        });
        r += groups * kQuantGroupRows;
      }
    }
  }
}

// Splits rows [row_begin, row_end) x n_tokens tokens between the panels (whole groups of full
// packed groups, whole panels or a last one of at least kPanelMinTokens) and tiles(x, y,
// n_tokens, row_begin, row_end), the target's other kernel, which takes the edges. Returns
// false (doing nothing) when the panels would get no work.
template <class Panels, class Tiles>
bool SplitForPanels(const uint8_t* x, float* y, size_t n_tokens, size_t k, size_t n_out,
                    size_t row_begin, size_t row_end, const Panels& panels, const Tiles& tiles) {
  const size_t tail = n_tokens % kPanelTokens;
  const size_t panel_tokens = tail >= kPanelMinTokens ? n_tokens : n_tokens - tail;
  const size_t first =
      HWY_MIN((row_begin + kQuantGroupRows - 1) / kQuantGroupRows, row_end / kQuantGroupRows) *
      kQuantGroupRows;
  const size_t last = HWY_MIN(row_end, n_out / kQuantGroupRows * kQuantGroupRows) /
                      kQuantGroupRows * kQuantGroupRows;
  if (panel_tokens == 0 || first >= last) return false;
  panels(x, y, panel_tokens, first, last);
  if (row_begin < first) tiles(x, y, panel_tokens, row_begin, first);
  if (last < row_end) tiles(x, y, panel_tokens, last, row_end);
  if (panel_tokens < n_tokens) {
    tiles(x + panel_tokens * Q8ActRowBytes(k), y + panel_tokens * n_out, n_tokens - panel_tokens,
          row_begin, row_end);
  }
  return true;
}

// The panels for what SplitForPanels gives them (tiles, as there, for the rest): false, doing
// nothing, when that is nothing. source_at as for MatMulPanels.
template <class SourceAt, class Tiles>
bool MatMulPanelsAndTiles(const SourceAt& source_at, const Tiles& tiles, const uint8_t* x, float* y,
                          size_t n_tokens, size_t k, size_t n_out, size_t row_begin,
                          size_t row_end) {
  const auto panels = [&](const uint8_t* xp, float* yp, size_t n, size_t rb, size_t re) {
    MatMulPanels(source_at, xp, yp, n, k, n_out, rb, re);
  };
  return SplitForPanels(x, y, n_tokens, k, n_out, row_begin, row_end, panels, tiles);
}

// MatMulTokenBlocks (ops/matmul_group_driver-inl.h) for a matmul whose many-token work goes to
// the panels: blocks of kPanelTokenBlock tokens at least, each to the panels and the tiles
// (MatMulPanelsAndTiles), or to the tiles alone where the panels would get none of it.
template <class SourceAt, class Tiles>
void MatMulPanelTokenBlocks(const SourceAt& source_at, const Tiles& tiles, const uint8_t* x,
                            float* y, size_t n_tokens, size_t k, size_t n_out, size_t row_begin,
                            size_t row_end) {
  const auto panels_or_tiles = [&](const uint8_t* xb, float* yb, size_t n, size_t rb, size_t re) {
    if (!MatMulPanelsAndTiles(source_at, tiles, xb, yb, n, k, n_out, rb, re)) {
      tiles(xb, yb, n, rb, re);
    }
  };
  MatMulTokenBlocks(panels_or_tiles, x, y, n_tokens, k, n_out, row_begin, row_end,
                    kPanelTokenBlock);
}
