// The kept GGUF types against 1 to 4 tokens (decode) on AVX-512 VNNI (x86 AVX3_DL), 512-bit
// vectors. Included by ops/matmul_blocks.cc inside its AVX3_DL namespace only (no include
// guard), after the 256-bit group tile (BlocksTile4xN_Avx2) whose helpers it uses.
//
// The plan of ops/matmul_quant_decode_vnni-inl.h (which says why): a vector holds two 8-quant
// chunks of the group's four rows, [c0 | c1] and [c2 | c3], against the token's sub-block
// permuted to match, so decoding a sub-block's quants and multiplying them take half the
// instructions of the 256-bit tile's four chunk vectors.
// - Quants are decoded as LoadGroupSubBlock does, on both chunks of a vector at once: the high
//   bits of the 5-bit types are shifted per 32-bit lane with a rotate (vprolvd; the bits it
//   wraps around land above the ones the mask keeps), Q6_K's per 16-bit lane.
// - Quants stay unsigned (0 .. 63) and multiply the signed activations; Q5_0's -16 * sum(x)
//   starts the int32 sum (in row r's lanes 2r and 2r + 1), the other types' min (or Q6_K's
//   -32 * sum(x)) term is added from the activations' sums.
// Integer sums as the 256-bit tile's; the f32 sums run in another order. BlocksTile4xN_Avx512Vnni
// takes Q4_1, Q5_0 and Q5_1; Q4_K / Q5_K and Q6_K have kernels of their own below, Q2_K and Q3_K in
// ops/matmul_blocks_decode_lowbit_vnni-inl.h.
// Faster than the 256-bit tile with the weights in cache and from DRAM (figures:
// docs/kernels.md).

// Shift counts for 16-bit lanes: low in the low half (chunk [c0] or [c2]), high in the other.
HWY_INLINE __m512i HalfCounts16(int16_t low, int16_t high) {
  return _mm512_inserti64x4(_mm512_set1_epi16(low), _mm256_set1_epi16(high), 1);
}

// Sub-block p of a full group as [c0 | c1] and [c2 | c3] (LoadGroupSubBlock's chunks), unsigned
// quants: the 4-bit types with their high bits (none, 1 or Q6_K's 2).
template <GgmlBlockType T>
HWY_INLINE void LoadGroupSubBlock512(const uint8_t* HWY_RESTRICT p, __m512i& w01, __m512i& w23) {
  constexpr BlockFormat F = FormatOf(T);
  static_assert(F.low_bits == 4, "nibbles; Q2_K and Q3_K decode in their own kernels");
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i b = _mm512_loadu_si512(p);  // LoadGroupSubBlock's b0 and b1
  w01 = _mm512_and_si512(b, low);
  w23 = _mm512_and_si512(_mm512_srli_epi16(b, 4), low);
  const uint8_t* high = p + kQuantGroupRows * F.LowBytes();
  if constexpr (F.high_bits == 1) {
    // Row r's 4 bytes in its lanes 2r and 2r + 1 of both halves; chunk c's bits sit at 2c
    // (first lane) and 2c + 1 (second) of every byte, moved to bit low_bits.
    const __m512i h = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3),
        _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(high))));
    const __m512i bit = _mm512_set1_epi8(static_cast<char>(1 << F.low_bits));
    constexpr int kLow = static_cast<int>(F.low_bits);
    // Chunk c's shift in LoadGroupSubBlock (ShiftLanePairs): left by kLow - 2c in a row's
    // first lane and kLow - 2c - 1 in its second, negative counts shifting right; here as left
    // rotations (a right shift by m is a rotation by 32 - m), chunk `first` in the low half
    // and chunk first + 1 in the high one.
    const auto rotations = [](int first) {
      int r[16];
      for (int i = 0; i < 16; ++i) {
        const int chunk = first + (i >= 8 ? 1 : 0);
        r[i] = (kLow - 2 * chunk - i % 2 + 32) % 32;
      }
      return _mm512_setr_epi32(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                               r[11], r[12], r[13], r[14], r[15]);
    };
    w01 = _mm512_or_si512(w01, _mm512_and_si512(_mm512_rolv_epi32(h, rotations(0)), bit));
    w23 = _mm512_or_si512(w23, _mm512_and_si512(_mm512_rolv_epi32(h, rotations(2)), bit));
  } else if constexpr (F.high_bits == 2) {
    // Q6_K: 8 bytes per row, lane-aligned with the chunks: chunk e's bits at 2e..2e+1.
    const __m512i h =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(high)));
    const __m512i mask = _mm512_set1_epi8(0x30);
    w01 = _mm512_or_si512(w01, _mm512_and_si512(_mm512_sllv_epi16(h, HalfCounts16(4, 2)), mask));
    w23 = _mm512_or_si512(w23, _mm512_and_si512(_mm512_srlv_epi16(h, HalfCounts16(0, 2)), mask));
  }
}

// v in both halves: a 256-bit lane vector [r0 r0 r1 r1 | r2 r2 r3 r3] for [c0 | c1].
HWY_INLINE __m512 BothHalves(__m256 v) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(v), v, 1);
}

// The K-quants' per-row scale vectors (GroupScaleRows) as two 512-bit vectors, rows 0-1 and
// rows 2-3: each sub-block then takes its scales with one permute (RowLanes) instead of the
// two 8 x 8 transposes per block and vector of GroupScales.
struct RowPairs {
  __m512 rows01, rows23;
  explicit RowPairs(const __m256 rows[4])
      : rows01(_mm512_insertf32x8(_mm512_castps256_ps512(rows[0]), rows[1], 1)),
        rows23(_mm512_insertf32x8(_mm512_castps256_ps512(rows[2]), rows[3], 1)) {}
  RowPairs(__m512 r01, __m512 r23) : rows01(r01), rows23(r23) {}
  RowPairs() : RowPairs(_mm512_setzero_ps(), _mm512_setzero_ps()) {}
  // Value j of each row in the lanes [r0 r0 r1 r1 r2 r2 r3 r3] twice.
  __m512 Lanes(size_t j) const {
    const __m512i first = _mm512_setr_epi32(0, 0, 8, 8, 16, 16, 24, 24, 0, 0, 8, 8, 16, 16, 24, 24);
    return _mm512_permutex2var_ps(
        rows01, _mm512_add_epi32(first, _mm512_set1_epi32(static_cast<int>(j))), rows23);
  }
};

// One full group (4 rows) of Q4_1, Q5_0 or Q5_1 x kTokens (1..4) tokens. Arguments as for
// BlocksTile4xN_Avx2.
template <GgmlBlockType T, size_t kTokens>
HWY_NOINLINE void BlocksTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                           size_t r0, const uint8_t* HWY_RESTRICT x,
                                           size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                           size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr BlockFormat F = FormatOf(T);
  static_assert(F.block_elems == kGgmlSubBlockElems && !F.centered(), "one scale per 32");
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  const __m512i chunks_01 = _mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i chunks_23 = _mm512_setr_epi64(2, 2, 2, 2, 3, 3, 3, 3);
  constexpr __mmask16 kLowHalf = 0x00FF;  // every row's lanes 2r, 2r + 1 of [c0]
  // acc: [c0 | c1]'s sums; acc_min: the min terms in GroupScales' 256-bit lanes.
  __m512 acc[kTokens];
  __m256 acc_min[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  HWY_ALIGN SumTermRun sum_terms[kTokens];
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    // The block's scale and halved min in the [r0 r0 r1 r1 r2 r2 r3 r3] lanes.
    __m256 scale[kMaxScales], min[kMaxScales];
    PrefetchRecords<T>(group, blk);
    GroupScales<T>(FullGroup<T>::Records(group, blk), scale, min);
    const __m512 scale_both = BothHalves(scale[0]);
    const uint8_t* HWY_RESTRICT p = BeginSubBlock<T, kTokens>(group, blk, act, k, sum_terms);
    __m512i w01, w23;
    LoadGroupSubBlock512<T>(p, w01, w23);
    for (size_t t = 0; t < kTokens; ++t) {
      const __m512i xv = _mm512_castsi256_si512(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(act[t].q + blk * kGgmlSubBlockElems)));
      const __m512i start =
          T == GgmlBlockType::kQ5_0
              ? _mm512_maskz_set1_epi32(kLowHalf, sum_terms[t][blk % kSumRun].offset)
              : _mm512_setzero_si512();
      const __m512i sums =
          DotBytes512(DotBytes512(start, w01, _mm512_permutexvar_epi64(chunks_01, xv)), w23,
                      _mm512_permutexvar_epi64(chunks_23, xv));
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                          _mm512_mul_ps(scale_both, _mm512_set1_ps(act[t].scale[blk])), acc[t]);
      if constexpr (T != GgmlBlockType::kQ5_0) {
        acc_min[t] =
            _mm256_fmadd_ps(min[0], _mm256_set1_ps(sum_terms[t][blk % kSumRun].scaled), acc_min[t]);
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    const __m256 sum = _mm256_add_ps(
        _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)),
        acc_min[t]);
    const __m128 rows = _mm_hadd_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    _mm_storeu_ps(y + t * n_out, rows);
  }
}

// A token's four outputs y[0..3]: the rows' sums in acc's [r0 r0 r1 r1 r2 r2 r3 r3] lanes of both
// halves, plus per-block terms on [row][8 lanes] vectors (rows 0-1 in terms01, 2-3 in terms23).
HWY_INLINE void StoreGroupRows(__m512 acc, __m512 terms01, __m512 terms23, float* y) {
  const __m256 sum = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  const __m128 rows = _mm_hadd_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  // Each row's 8 lanes: [r0 r0 r1 r1 | r0 r0 r1 r1] pair sums, then rows 0-3.
  const __m256 t01 =
      _mm256_hadd_ps(_mm512_castps512_ps256(terms01), _mm512_extractf32x8_ps(terms01, 1));
  const __m256 t23 =
      _mm256_hadd_ps(_mm512_castps512_ps256(terms23), _mm512_extractf32x8_ps(terms23, 1));
  const __m256 t = _mm256_hadd_ps(t01, t23);
  const __m128 terms = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  _mm_storeu_ps(y, _mm_add_ps(rows, terms));
}

// Q4_K / Q5_K against 1 to 4 tokens: BlocksTile4xN_Avx512Vnni's plan with each block's work taken
// out of its sub-block loop. Per block and token, the token's 8 activation scales are multiplied
// into the four rows' 8 scales, and the min terms (min * x_scale * sum(x)) of all 8 sub-blocks are
// two FMAs on [row][sub-block] lanes; per sub-block and token that leaves two vpdpbusd, a
// convert, one permute (the sub-block's scales into the rows' lanes) and one FMA, where
// BlocksTile4xN_Avx512Vnni also multiplied the scales and added a min term. The fewer
// instructions pay in cache and from DRAM alike (figures: docs/kernels.md).
template <GgmlBlockType T, size_t kTokens>
HWY_NOINLINE void Q4KQ5KTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                           size_t r0, const uint8_t* HWY_RESTRICT x,
                                           size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                           size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  static_assert(T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K, "Q4_K and Q5_K");
  static_assert(kSumRun == 8, "a run of sum terms is one block's 8 sub-blocks");
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  const __m512i chunks_01 = _mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i chunks_23 = _mm512_setr_epi64(2, 2, 2, 2, 3, 3, 3, 3);
  // acc / acc2: even / odd sub-blocks' sums in [r0 r0 r1 r1 r2 r2 r3 r3] lanes of both halves
  // (two chains of FMAs); min01 / min23: the min terms on [row][sub-block] lanes.
  __m512 acc[kTokens], acc2[kTokens], min01[kTokens], min23[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = acc2[t] = min01[t] = min23[t] = _mm512_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  HWY_ALIGN SumTermRun sum_terms[kTokens];
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    const size_t first_sub = blk * 8;
    PrefetchRecords<T>(group, blk);
    const K4GroupScales g = DecodeK4GroupScales(FullGroup<T>::Records(group, blk), 1.0f);
    RowPairs scaled[kTokens];
#pragma GCC unroll 8
    for (size_t s = 0; s < 8; ++s) {
      const size_t sub = first_sub + s;
      const uint8_t* HWY_RESTRICT p = BeginSubBlock<T, kTokens>(group, sub, act, k, sum_terms);
      if (s == 0) {
        for (size_t t = 0; t < kTokens; ++t) {
          const __m512 x_scales = _mm512_broadcast_f32x8(_mm256_loadu_ps(act[t].scale + sub));
          scaled[t] =
              RowPairs(_mm512_mul_ps(g.scale01, x_scales), _mm512_mul_ps(g.scale23, x_scales));
          const __m512 terms =
              _mm512_broadcast_f32x8(_mm256_load_ps(reinterpret_cast<const float*>(sum_terms[t])));
          min01[t] = _mm512_fmadd_ps(g.min01, terms, min01[t]);
          min23[t] = _mm512_fmadd_ps(g.min23, terms, min23[t]);
        }
      }
      __m512i w01, w23;
      LoadGroupSubBlock512<T>(p, w01, w23);
      for (size_t t = 0; t < kTokens; ++t) {
        const __m512i xv = _mm512_castsi256_si512(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(act[t].q + sub * kGgmlSubBlockElems)));
        const __m512i sums = DotBytes512(
            DotBytes512(_mm512_setzero_si512(), w01, _mm512_permutexvar_epi64(chunks_01, xv)), w23,
            _mm512_permutexvar_epi64(chunks_23, xv));
        __m512& into = s % 2 == 0 ? acc[t] : acc2[t];
        into = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scaled[t].Lanes(s), into);
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    StoreGroupRows(_mm512_add_ps(acc[t], acc2[t]), min01[t], min23[t], y + t * n_out);
  }
}

// Q6_K against 1 to 4 tokens. The quants stay unsigned (0..63) against the signed activations,
// as the one-scale types', and q - 32's -32 * sum(x) of each half sub-block joins the rows'
// scales once per block, like Q4KQ5KTile4xN_Avx512Vnni's min terms (from the activations' half
// sums, Q2KHalfTerms); each token's activation scales are multiplied into the rows' scales once per
// block. Against BlocksTile4xN_Avx512Vnni's centered path that drops, per sub-block, the q - 32,
// the -128 * sum(w) start (two vpdpbusd) and per token the x + 128 and two multiplies, which
// shows with the weights in cache (figures: docs/kernels.md).
template <size_t kTokens>
HWY_NOINLINE void Q6KTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                        size_t r0, const uint8_t* HWY_RESTRICT x,
                                        size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                        size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr GgmlBlockType T = GgmlBlockType::kQ6_K;
  constexpr BlockFormat F = FormatOf(T);
  static_assert(F.SubBlocks() == kSumRun, "a run of half-sum terms is one block");
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  const __m512i chunks_01 = _mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i chunks_23 = _mm512_setr_epi64(2, 2, 2, 2, 3, 3, 3, 3);
  // Scale j (0..15) of the block in lane i of a [row][j % 8] vector is that of half j % 2 of
  // sub-block j / 2: the lanes' activation scales and half-sum terms (first halves' terms at
  // 0..7, second halves' at 8..15 of Q2KHalfTerms' output).
  const __m512i scales_lo = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
  const __m512i scales_hi = _mm512_add_epi32(scales_lo, _mm512_set1_epi32(4));
  const __m512i terms_lo = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i terms_hi = _mm512_add_epi32(terms_lo, _mm512_set1_epi32(4));
  const __m512 minus_center = _mm512_set1_ps(-static_cast<float>(F.center));
  // acc / acc2: first / second halves' sums in [r0 r0 r1 r1 r2 r2 r3 r3] lanes of both 256-bit
  // halves; center01 / center23: the -32 * sum(x) terms on [row][scale] lanes.
  __m512 acc[kTokens], acc2[kTokens], center01[kTokens], center23[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = acc2[t] = center01[t] = center23[t] = _mm512_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    const size_t first_sub = blk * F.SubBlocks();
    __m256 lo[4], hi[4];
    PrefetchRecords<T>(group, blk);
    GroupScaleRows<T>(FullGroup<T>::Records(group, blk), lo, hi);
    const RowPairs lo_rows(lo), hi_rows(hi);
    RowPairs scaled_lo[kTokens], scaled_hi[kTokens];
    for (size_t t = 0; t < kTokens; ++t) {
      // In registers: stored as two halves and loaded as one vector, they stalled every block
      // on a failed store-to-load forward (Q6_K decode slower than BlocksTile4xN_Avx512Vnni).
      __m256 first_terms, second_terms;
      Q2KHalfTerms(act[t], first_sub, &first_terms, &second_terms);
      const __m512 all_terms = _mm512_mul_ps(
          _mm512_insertf32x8(_mm512_castps256_ps512(first_terms), second_terms, 1), minus_center);
      const __m512 t_lo = _mm512_permutexvar_ps(terms_lo, all_terms);
      const __m512 t_hi = _mm512_permutexvar_ps(terms_hi, all_terms);
      center01[t] =
          _mm512_fmadd_ps(hi_rows.rows01, t_hi, _mm512_fmadd_ps(lo_rows.rows01, t_lo, center01[t]));
      center23[t] =
          _mm512_fmadd_ps(hi_rows.rows23, t_hi, _mm512_fmadd_ps(lo_rows.rows23, t_lo, center23[t]));
      const __m512 x_scales = _mm512_castps256_ps512(_mm256_loadu_ps(act[t].scale + first_sub));
      const __m512 x_lo = _mm512_permutexvar_ps(scales_lo, x_scales);
      const __m512 x_hi = _mm512_permutexvar_ps(scales_hi, x_scales);
      scaled_lo[t] =
          RowPairs(_mm512_mul_ps(lo_rows.rows01, x_lo), _mm512_mul_ps(lo_rows.rows23, x_lo));
      scaled_hi[t] =
          RowPairs(_mm512_mul_ps(hi_rows.rows01, x_hi), _mm512_mul_ps(hi_rows.rows23, x_hi));
    }
    // Sub-blocks 0-3 take their scales from the rows' scales 0-7, 4-7 from 8-15; unrolled so
    // that each permute's lanes are a constant.
    for (size_t quarter = 0; quarter < 2; ++quarter) {
#pragma GCC unroll 4
      for (size_t i = 0; i < 4; ++i) {
        const size_t sub = first_sub + 4 * quarter + i;
        const uint8_t* HWY_RESTRICT p = FullGroup<T>::SubBlock(group, sub);
        hwy::Prefetch(p + kWeightPrefetchBytes);
        hwy::Prefetch(p + kWeightPrefetchBytes + 64);
        __m512i w01, w23;
        LoadGroupSubBlock512<T>(p, w01, w23);
        for (size_t t = 0; t < kTokens; ++t) {
          const __m512i xv = _mm512_castsi256_si512(_mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(act[t].q + sub * kGgmlSubBlockElems)));
          const __m512i half0 =
              DotBytes512(_mm512_setzero_si512(), w01, _mm512_permutexvar_epi64(chunks_01, xv));
          const __m512i half1 =
              DotBytes512(_mm512_setzero_si512(), w23, _mm512_permutexvar_epi64(chunks_23, xv));
          const RowPairs& scaled = quarter == 0 ? scaled_lo[t] : scaled_hi[t];
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(half0), scaled.Lanes(2 * i), acc[t]);
          acc2[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(half1), scaled.Lanes(2 * i + 1), acc2[t]);
        }
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    StoreGroupRows(_mm512_add_ps(acc[t], acc2[t]), center01[t], center23[t], y + t * n_out);
  }
}
