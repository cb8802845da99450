// The K-quants (Q2_K to Q6_K) against 1 to 4 tokens on x86 without VNNI (Highway's AVX2 and AVX3
// targets: Zen 2/3, Intel client cores, Skylake-SP), for activations with one scale per
// super-block of 256 (QuantizeRowsQ8Super, which the converter gives these matmuls' inputs).
// Also Q4_K-Q6_K's decode on AVX3_DL where the CPU runs each 512-bit operation as two halves
// (Zen 4, CpuSplits512BitOps): there this tile's 256-bit vectors beat the 512-bit VNNI tiles by
// 5-10% (bench/matmul_bench BM_LargeMatMul n:1, weights in cache), and Q6_K multiplies its
// unsigned quants with vpdpbusd.
// Included by ops/matmul_blocks.cc inside its x86 namespace (no include guard), after
// BlocksTile4xN_Avx2, whose chunk layout and helpers it uses.
//
// Why a kernel of its own: with the token's scale xs constant over a block, row r's block is
//   d * xs * sum_j sc_j * dot_j  -  dmin * xs * sum_j m_j * sum(x_j)
// with sc_j, m_j the 6-bit integer scales and mins (Q6_K: d * xs * sum_h sc_h * dot_h over its
// 16 signed scales of halves of 16, no min; Q2_K: its 16 scales and mins of halves, the min
// terms on the activations' sums of 16, HalfSums; Q3_K as Q2_K with unsigned quants 0..7, its
// center 4 the min). The vpmaddwd that widens each sub-block's int16 pair sums to int32
// multiplies them by the sub-block's integer scale instead of by 1, so a sub-block costs its
// four vpmaddubsw, the adds and one vpmaddwd; the int32 sums are converted and scaled once per
// block, and the min terms are two vpmaddwd per block on the activations' block sums. The tile
// for any activations (BlocksTile4xN_Avx2) converts, multiplies the row and token scales and
// adds an FMA and a min term per sub-block, and turns the block's f32 scales into lanes with
// two 8 x 8 transposes: on one Zen 3 core it ran Q4_K decode at 65% of the read bandwidth.
// Integer sums stay in range: a sub-block's int16 lane is at most 4 * 2 * 31 * 127 (Q5_K) or
// 2 * 2 * 32 * 127 (Q6_K's halves; Q3_K's 2 * 2 * 7 * 127), times a scale of at most 63 (|sc|
// <= 128 for Q6_K, 32 for Q3_K), eight sub-blocks summed: below 2^27. Q6_K's unsigned int32
// halves on AVX3_DL: 16 * 63 * 127 times 128, sixteen summed: below 2^29.

// True when each token's eight block scales of every super-block are the same float, as
// QuantizeRowsQ8Super writes them: the condition of KQuantSuperTile4xN_Avx2 (and, on AVX3_DL,
// of Q2_K's and Q3_K's kSuper and paired decode tiles).
HWY_INLINE bool OneActivationScalePerSuperBlock(const uint8_t* HWY_RESTRICT x, size_t x_row_bytes,
                                                size_t n_tokens, size_t k) {
  if (k % kGgmlSuperBlockElems != 0) return false;
  for (size_t t = 0; t < n_tokens; ++t) {
    const float* scale = Q8ActRowAt(x + t * x_row_bytes, k).scale;
    for (size_t b = 0; b < k / kGgmlSuperBlockElems; ++b) {
      const __m256 s = _mm256_loadu_ps(scale + 8 * b);
      const __m256 first = _mm256_broadcast_ss(scale + 8 * b);
      if (_mm256_movemask_ps(_mm256_cmp_ps(s, first, _CMP_EQ_OQ)) != 0xFF) return false;
    }
  }
  return true;
}

// A block's integer scales of the group's four rows, one row per 64-bit quarter (the chunk
// vectors' row order): scales 0-7 in lo, the per-16 types' 8-15 in hi (bytes; signed for Q6_K
// and Q3_K). Q4_K / Q5_K mins 0-7 as int16, one row per 128-bit lane: rows 0-1 in mins01, 2-3
// in mins23 (decoded once per block, not per token: MinTerms). d and dmin (the min terms'
// factor; Q3_K's 4 * d) in the lanes [r0 r0 r1 r1 | r2 r2 r3 r3] where the kernel sums each row.
struct SuperBlockScales {
  __m256i lo, hi, mins01, mins23;
  // Q2_K (its mins) and Q3_K (its scales, for the center): row r's 16 per-half factors as int16
  // in the order of HalfSums, [m0 m2 .. m14 | m1 m3 .. m15].
  __m256i half_mins[4];
  __m256 d, dmin;
};

// Four rows' 16 per-half scale bytes (one row per __m128i) as the chunk vectors' quarters:
// bytes 0-7 of each row into *lo, 8-15 into *hi.
HWY_INLINE void RowsToQuarters(const __m128i rows[4], __m256i* lo, __m256i* hi) {
  *lo =
      _mm256_set_m128i(_mm_unpacklo_epi64(rows[2], rows[3]), _mm_unpacklo_epi64(rows[0], rows[1]));
  *hi =
      _mm256_set_m128i(_mm_unpackhi_epi64(rows[2], rows[3]), _mm_unpackhi_epi64(rows[0], rows[1]));
}

template <GgmlBlockType T>
HWY_INLINE SuperBlockScales DecodeSuperBlockScales(const uint8_t* HWY_RESTRICT rec) {
  SuperBlockScales out;
  const auto word = [](const uint8_t* p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  };
  const auto half_bits = [](const uint8_t* p) {
    int16_t v;
    memcpy(&v, p, 2);
    return v;
  };
  const __m128i evens_then_odds =
      _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  if constexpr (FormatOf(T).centered()) {
    // Q6_K: 16 int8 scales, then d; Q3_K: 12 bytes of 6-bit scales, then d.
    constexpr size_t kRecord = FormatOf(T).record_bytes, kDAt = kRecord - 2;
    static_assert(T == GgmlBlockType::kQ6_K ? kRecord == 18 : kRecord == 14, "record, then d");
    __m128i rows[4];
    for (int r = 0; r < 4; ++r) {
      if constexpr (T == GgmlBlockType::kQ6_K) {
        rows[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kRecord * r));
      } else {
        // The quants stay unsigned (0..7); the center's 4 * sum_h sc_h * S_h is subtracted as
        // Q2_K's mins are, with sc_h as the min and 4 * d as dmin.
        rows[r] = Q3KScaleBytes(rec + kRecord * r);
        out.half_mins[r] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(rows[r], evens_then_odds));
      }
    }
    RowsToQuarters(rows, &out.lo, &out.hi);
    const __m128i halves = _mm_setr_epi16(half_bits(rec + kDAt), half_bits(rec + kRecord + kDAt),
                                          half_bits(rec + 2 * kRecord + kDAt),
                                          half_bits(rec + 3 * kRecord + kDAt), 0, 0, 0, 0);
    out.d = _mm256_permutevar8x32_ps(_mm256_cvtph_ps(halves),
                                     _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    out.mins01 = out.mins23 = _mm256_setzero_si256();
    out.dmin = T == GgmlBlockType::kQ3_K ? _mm256_mul_ps(out.d, _mm256_set1_ps(4.0f))
                                         : _mm256_setzero_ps();
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (T == GgmlBlockType::kQ6_K) {
      // Its quants stay unsigned here (vpdpbusd), so its center is subtracted as Q3_K's is.
      for (int r = 0; r < 4; ++r) {
        out.half_mins[r] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(rows[r], evens_then_odds));
      }
      out.dmin = _mm256_mul_ps(out.d, _mm256_set1_ps(static_cast<float>(FormatOf(T).center)));
    }
#endif
  } else if constexpr (T == GgmlBlockType::kQ2_K) {
    // d, dmin, then 16 bytes: a half's scale in the low nibble, its min in the high one.
    constexpr size_t kRecord = FormatOf(T).record_bytes;
    static_assert(kRecord == 20, "d, dmin, 16 scale bytes");
    const __m128i nibble = _mm_set1_epi8(0x0F);
    __m128i rows[4];
    for (int r = 0; r < 4; ++r) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kRecord * r + 4));
      rows[r] = _mm_and_si128(b, nibble);
      out.half_mins[r] = _mm256_cvtepu8_epi16(
          _mm_shuffle_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), nibble), evens_then_odds));
    }
    RowsToQuarters(rows, &out.lo, &out.hi);
    const __m256 d_dmin = _mm256_cvtph_ps(_mm_setr_epi32(
        word(rec), word(rec + kRecord), word(rec + 2 * kRecord), word(rec + 3 * kRecord)));
    out.d = _mm256_permutevar8x32_ps(d_dmin, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
    out.dmin = _mm256_permutevar8x32_ps(d_dmin, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7));
    out.mins01 = out.mins23 = _mm256_setzero_si256();
  } else {
    static_assert(T == GgmlBlockType::kQ4_K || T == GgmlBlockType::kQ5_K,
                  "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K");
    // Per pair of rows, [row: sc0-7 m0-7] per 128-bit lane.
    const __m256i pair_bytes[2] = {K4PairBytes(rec), K4PairBytes(rec + 32)};
    // [r0 | r2 || r1 | r3] quarters, then rows in order.
    constexpr int kRowOrder = _MM_SHUFFLE(3, 1, 2, 0);
    out.lo =
        _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(pair_bytes[0], pair_bytes[1]), kRowOrder);
    const __m256i mins =
        _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(pair_bytes[0], pair_bytes[1]), kRowOrder);
    out.hi = _mm256_setzero_si256();
    out.mins01 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(mins));
    out.mins23 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(mins, 1));
    // d and dmin: the first 4 bytes of each row's record.
    const __m256 d_dmin =
        _mm256_cvtph_ps(_mm_setr_epi32(word(rec), word(rec + 16), word(rec + 32), word(rec + 48)));
    out.d = _mm256_permutevar8x32_ps(d_dmin, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
    out.dmin = _mm256_permutevar8x32_ps(d_dmin, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7));
  }
  return out;
}

// Byte j of each row's quarter of `bytes` as that row's four int16 lanes: unsigned, or signed
// (kSigned: moved to the high byte, then shifted down with its sign).
template <bool kSigned>
HWY_INLINE __m256i RowScale16(__m256i bytes, int j) {
  const __m256i source =
      kSigned ? _mm256_setr_epi8(-128, j, -128, j, -128, j, -128, j, -128, 8 + j, -128, 8 + j, -128,
                                 8 + j, -128, 8 + j, -128, j, -128, j, -128, j, -128, j, -128,
                                 8 + j, -128, 8 + j, -128, 8 + j, -128, 8 + j)
              : _mm256_setr_epi8(j, -128, j, -128, j, -128, j, -128, 8 + j, -128, 8 + j, -128,
                                 8 + j, -128, 8 + j, -128, j, -128, j, -128, j, -128, j, -128,
                                 8 + j, -128, 8 + j, -128, 8 + j, -128, 8 + j, -128);
  const __m256i picked = _mm256_shuffle_epi8(bytes, source);
  return kSigned ? _mm256_srai_epi16(picked, 8) : picked;
}

#if HWY_TARGET == HWY_AVX3_DL
// Signed byte j of each row's quarter of `bytes` as that row's two int32 lanes.
HWY_INLINE __m256i RowScale32Signed(__m256i bytes, int j) {
  const int8_t z = -128;  // vpshufb's zero
  const __m128i source = _mm_setr_epi8(z, z, z, j, z, z, z, j, z, z, z, 8 + j, z, z, z, 8 + j);
  return _mm256_srai_epi32(_mm256_shuffle_epi8(bytes, _mm256_broadcastsi128_si256(source)), 24);
}
#endif

// Row r's min term sum_j m_j * sum(x_j) of one block in lanes 2r, 2r + 1 (int32, halves of it).
HWY_INLINE __m256i MinTerms(const SuperBlockScales& s, const int32_t* HWY_RESTRICT block_sums) {
  const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block_sums));
  // |sum| <= 32 * 127 fits int16: [s0..s7 | s0..s7].
  const __m256i sums16 =
      _mm256_permute4x64_epi64(_mm256_packs_epi32(sums, sums), _MM_SHUFFLE(2, 0, 2, 0));
  const __m256i m01 = _mm256_madd_epi16(s.mins01, sums16);  // [r0: 4 pair sums | r1: 4]
  const __m256i m23 = _mm256_madd_epi16(s.mins23, sums16);
  // hadd: [r0 r0 r2 r2 | r1 r1 r3 r3]; then the rows in order.
  return _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(m01, m23),
                                     _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
}

// A token's 16 sums of 16 quants over one super-block (x: its 256 quants) as int16, in the
// order two rounds of vphaddd leave them: [S0 S2 .. S14 | S1 S3 .. S15]. |S| <= 16 * 127.
HWY_INLINE __m256i HalfSums(const int8_t* HWY_RESTRICT x) {
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  __m256i v[8];  // sub-block s: lanes 0-3 sum to S_2s, 4-7 to S_2s+1
  for (int s = 0; s < 8; ++s) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * s));
    v[s] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
  }
  // [S0 S2 S4 S6 | S1 S3 S5 S7], then the same for sub-blocks 4-7.
  const __m256i first =
      _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i second =
      _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_packs_epi32(first, second);
}

// Q2_K and Q3_K: row r's min term sum_h m_h * S_h of one block in lanes 2r, 2r + 1 (halves of
// it).
HWY_INLINE __m256i HalfMinTerms(const SuperBlockScales& s, __m256i half_sums) {
  __m256i t[4];
  for (int r = 0; r < 4; ++r) t[r] = _mm256_madd_epi16(s.half_mins[r], half_sums);
  // [r0 r1 r2 r3 (sums of lanes 0-3) | r0 r1 r2 r3 (lanes 4-7)], then the rows in order.
  const __m256i rows =
      _mm256_hadd_epi32(_mm256_hadd_epi32(t[0], t[1]), _mm256_hadd_epi32(t[2], t[3]));
  return _mm256_permutevar8x32_epi32(rows, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <GgmlBlockType T, size_t kTokens>
HWY_NOINLINE void KQuantSuperTile4xN_Avx2(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                          size_t r0, const uint8_t* HWY_RESTRICT x,
                                          size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                          size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr BlockFormat F = FormatOf(T);
  // Q6_K: signed quants q - 32, a signed scale per half of 16, no min.
  constexpr bool kQ6K = T == GgmlBlockType::kQ6_K;
  // Q2_K and Q3_K: unsigned quants (0..3, 0..7) and a scale per half of 16 (Q3_K's signed),
  // with a min per half (Q3_K's center, 4 * scale) subtracted on the activations' half sums;
  // on AVX3_DL Q6_K too (0..63, its center 32 * scale).
  constexpr bool kHalfMins = T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K ||
                             (HWY_TARGET == HWY_AVX3_DL && T == GgmlBlockType::kQ6_K);
  constexpr size_t kSubBytes = FullGroup<T>::kSubBytes;
  static_assert(F.SubBlocks() == 8, "super-blocks of 8 sub-blocks");
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  __m256 acc[kTokens];  // [r0 r0 r1 r1 | r2 r2 r3 r3]
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = _mm256_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    PrefetchRecords<T>(group, blk);
    const SuperBlockScales scales = DecodeSuperBlockScales<T>(FullGroup<T>::Records(group, blk));
    __m256i sums[kTokens];
    for (size_t t = 0; t < kTokens; ++t) sums[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (size_t s = 0; s < 8; ++s) {
      const size_t sub = blk * 8 + s;
      const uint8_t* HWY_RESTRICT p = FullGroup<T>::SubBlock(group, sub);
      hwy::Prefetch(p + kWeightPrefetchBytes);
      if constexpr (kSubBytes > 64) hwy::Prefetch(p + kWeightPrefetchBytes + 64);
      __m256i c[4];
      LoadGroupSubBlock<T, /*kUncentered=*/kHalfMins>(p, c);
      if constexpr (kQ6K) {
#if HWY_TARGET == HWY_AVX3_DL
        // Unsigned quants (0..63) against x with vpdpbusd, each half's int32 sum times its
        // scale; the center's 32 * sum_h sc_h * S_h is subtracted per block as Q3_K's is. On
        // Zen 4 this ran Q6_K decode faster than the vpsignb path below (docs/kernels.md).
        const __m256i& quarter = s < 4 ? scales.lo : scales.hi;
        const __m256i half_scale0 = RowScale32Signed(quarter, static_cast<int>(2 * s % 8));
        const __m256i half_scale1 = RowScale32Signed(quarter, static_cast<int>((2 * s + 1) % 8));
        for (size_t t = 0; t < kTokens; ++t) {
          const int8_t* xb = act[t].q + sub * kGgmlSubBlockElems;
          const __m256i half0 =
              DotBytesAccumulate(DotBytesAccumulate(_mm256_setzero_si256(), c[0], Broadcast8(xb)),
                                 c[1], Broadcast8(xb + 8));
          const __m256i half1 = DotBytesAccumulate(
              DotBytesAccumulate(_mm256_setzero_si256(), c[2], Broadcast8(xb + 16)), c[3],
              Broadcast8(xb + 24));
          sums[t] =
              _mm256_add_epi32(sums[t], _mm256_add_epi32(_mm256_mullo_epi32(half0, half_scale0),
                                                         _mm256_mullo_epi32(half1, half_scale1)));
        }
#else
        // Signed quants (q - 32) as |q - 32| against x carrying their sign (vpsignb), each half
        // of 16 with its own scale.
        const __m256i half_scale0 =
            RowScale16<true>(s < 4 ? scales.lo : scales.hi, static_cast<int>(2 * s % 8));
        const __m256i half_scale1 =
            RowScale16<true>(s < 4 ? scales.lo : scales.hi, static_cast<int>((2 * s + 1) % 8));
        __m256i magnitude[4];
        for (int e = 0; e < 4; ++e) magnitude[e] = _mm256_sign_epi8(c[e], c[e]);
        for (size_t t = 0; t < kTokens; ++t) {
          const int8_t* xb = act[t].q + sub * kGgmlSubBlockElems;
          const auto dot = [&](int e) {
            return _mm256_maddubs_epi16(magnitude[e],
                                        _mm256_sign_epi8(Broadcast8(xb + 8 * e), c[e]));
          };
          const __m256i half0 = _mm256_madd_epi16(_mm256_add_epi16(dot(0), dot(1)), half_scale0);
          const __m256i half1 = _mm256_madd_epi16(_mm256_add_epi16(dot(2), dot(3)), half_scale1);
          sums[t] = _mm256_add_epi32(sums[t], _mm256_add_epi32(half0, half1));
        }
#endif
      } else if constexpr (kHalfMins) {
        constexpr bool kSignedScales = T == GgmlBlockType::kQ3_K;
        const __m256i half_scale0 =
            RowScale16<kSignedScales>(s < 4 ? scales.lo : scales.hi, static_cast<int>(2 * s % 8));
        const __m256i half_scale1 = RowScale16<kSignedScales>(s < 4 ? scales.lo : scales.hi,
                                                              static_cast<int>((2 * s + 1) % 8));
        for (size_t t = 0; t < kTokens; ++t) {
          const int8_t* xb = act[t].q + sub * kGgmlSubBlockElems;
          const auto dot = [&](int e) {
            return _mm256_maddubs_epi16(c[e], Broadcast8(xb + 8 * e));
          };
          const __m256i half0 = _mm256_madd_epi16(_mm256_add_epi16(dot(0), dot(1)), half_scale0);
          const __m256i half1 = _mm256_madd_epi16(_mm256_add_epi16(dot(2), dot(3)), half_scale1);
          sums[t] = _mm256_add_epi32(sums[t], _mm256_add_epi32(half0, half1));
        }
      } else {
        const __m256i scale = RowScale16<false>(scales.lo, static_cast<int>(s));
        for (size_t t = 0; t < kTokens; ++t) {
          const int8_t* xb = act[t].q + sub * kGgmlSubBlockElems;
          const __m256i pairs =
              _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(c[0], Broadcast8(xb)),
                                                _mm256_maddubs_epi16(c[1], Broadcast8(xb + 8))),
                               _mm256_add_epi16(_mm256_maddubs_epi16(c[2], Broadcast8(xb + 16)),
                                                _mm256_maddubs_epi16(c[3], Broadcast8(xb + 24))));
          sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(pairs, scale));
        }
      }
    }
    for (size_t t = 0; t < kTokens; ++t) {
      const __m256 x_scale = _mm256_broadcast_ss(act[t].scale + blk * 8);
      acc[t] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), _mm256_mul_ps(scales.d, x_scale), acc[t]);
      if constexpr (kHalfMins) {
        const __m256i mins = HalfMinTerms(scales, HalfSums(act[t].q + blk * kGgmlSuperBlockElems));
        acc[t] =
            _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(scales.dmin, x_scale), acc[t]);
      } else if constexpr (!kQ6K) {
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(MinTerms(scales, act[t].sum + blk * 8)),
                                  _mm256_mul_ps(scales.dmin, x_scale), acc[t]);
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    const __m128 rows =
        _mm_hadd_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
    _mm_storeu_ps(y + t * n_out, rows);
  }
}
