// Q2_K and Q3_K against 1 to 4 tokens (decode) on AVX-512 VNNI (x86 AVX3_DL), 512-bit vectors.
// Included by ops/matmul_blocks.cc inside its AVX3_DL namespace only (no include guard), after
// ops/matmul_blocks_decode_vnni-inl.h.
//
// These types carry a scale per 16 weights for at most 3 bits of quant, so per byte of weights
// they have twice Q4_K's scale work and more decoding: applying scales in f32 per half
// sub-block, as BlocksTile4xN_Avx512Vnni does, cost two converts, two permutes and two FMAs per 128
// weights and left Q2_K and Q3_K at 0.26 and 0.38 of the read bandwidth. Here the scales are
// applied in int16 instead, and the rest of each block's scale work is done once per block:
// - A vector holds half h of one sub-block for the group's four rows, row r in 128-bit lane r
//   (its two 8-quant chunks 2h and 2h + 1 in the lane's two 64-bit halves). Every lane then has
//   one scale, and the token's 16 activations of that half are one broadcast load, with no
//   permute per token.
// - Quants stay unsigned (Q3_K's q - 4 as q, its -4 joining the per-block terms below);
//   vpmaddubsw multiplies them by the signed activations into int16 pair sums (at most
//   2 * 7 * 127), and vpdpwssd multiplies those by the int16 scale of their lane (one vpshufb
//   of the block's scales) and adds both halves into one int32 vector per sub-block: one
//   convert and one FMA (times the token's scale of the sub-block) per 128 weights.
// - d (f16, per row and block) multiplies the block's f32 sum once, in row lanes.
// - The terms that multiply the activations' sums of 16 (Q2_K's mins, dmin * m * sum(x); Q3_K's
//   -4 * d * (sc - 32) * sum(x)) are taken per block on [row][sub-block] lanes: the token's 16
//   half sums (HalfSums16) times the rows' mins or scales in int16 (vpmaddwd pairs a sub-block's
//   two halves), then one convert and FMA per two rows.
// Integer sums are exact; the f32 sums run in another order than the 256-bit tile's.
// Where the time goes (one Zen 5 core, in cache): about 18 vector instructions per sub-block of
// four rows, most of them shuffles and multiplies, which the core runs about 3.5 per cycle.
// The per-block half sums and their terms are ~13% (measured by leaving them out): sums of 16
// stored with the activations (ggml's Q8_K keeps them) or two groups per call would halve that.
// Tried and dropped: gf2p8affineqb for the shift and mask of the 2-bit fields (no change), and
// vpshufb tables of q * scale (one vpdpbusd per half instead of vpmaddubsw + vpmaddwd; 10%
// slower: the shuffles, not the multiplies, are the limit).

// acc + in each int32 lane the sum of the two products of a's and b's int16 pairs (vpdpwssd),
// in assembly for DotBytes512's reason (Highway's AVX3_DL target enables no avx512vnni).
HWY_INLINE __m512i DotWords512(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  return acc;
}

// The sums of each 16 of a block's 256 activations q, as int16 in position 2s + h (sub-block
// s, half h) of both 256-bit halves, so that vpmaddwd against [row][16] int16 scales adds a
// sub-block's two halves. Four vpdpbusd make sums of 4; packing two vectors to int16 and
// vpmaddwd against ones adds neighbours twice over (sums of 8, then 16); one permute orders
// them. |sum| <= 16 * 127 fits int16.
HWY_INLINE __m512i HalfSums16(const int8_t* HWY_RESTRICT q) {
  const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
  // Vector v, 128-bit lane L: the four sums of 4 of sub-block 2v + L / 2, half L % 2.
  __m512i fours[4];
  for (int v = 0; v < 4; ++v) {
    fours[v] = DotBytes512(_mm512_setzero_si512(), ones8, _mm512_loadu_si512(q + 64 * v));
  }
  const __m512i eights01 = _mm512_madd_epi16(_mm512_packs_epi32(fours[0], fours[1]), ones16);
  const __m512i eights23 = _mm512_madd_epi16(_mm512_packs_epi32(fours[2], fours[3]), ones16);
  // Lane L, int32 v: the half of vector v's lane L.
  const __m512i sums = _mm512_madd_epi16(_mm512_packs_epi32(eights01, eights23), ones16);
  // Position p = 2s + h takes int32 4L + v with L = 2 (s % 2) + h, v = s / 2 (its low word).
  const auto word = [](int p) {
    const int s = p % 16 / 2, h = p % 2;
    return static_cast<short>(2 * (4 * (2 * (s % 2) + h) + s / 2));
  };
  const __m512i order = _mm512_set_epi16(
      word(31), word(30), word(29), word(28), word(27), word(26), word(25), word(24), word(23),
      word(22), word(21), word(20), word(19), word(18), word(17), word(16), word(15), word(14),
      word(13), word(12), word(11), word(10), word(9), word(8), word(7), word(6), word(5), word(4),
      word(3), word(2), word(1), word(0));
  return _mm512_permutexvar_epi16(order, sums);
}

// vpshufb index taking int16 j (0..7) of a [lane][8] int16 vector into every word of its lane
// (kWords), or byte j of a [lane][16] byte vector, zero-extended.
template <bool kWords>
HWY_INLINE __m512i ScaleIndex(int j) {
  return kWords ? _mm512_set1_epi16(static_cast<short>((2 * j + 1) << 8 | 2 * j))
                : _mm512_set1_epi16(static_cast<short>(0x8000 | j));
}

// Row r's qword (8 bytes of a [row][8] vector) in both qwords of 128-bit lane r, for the first
// (rows 0-3) or second (4-7) half of the source.
HWY_INLINE __m512i RowQwordsToLanes(__m512i v, bool second) {
  return _mm512_permutexvar_epi64(second ? _mm512_setr_epi64(4, 4, 5, 5, 6, 6, 7, 7)
                                         : _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3),
                                  v);
}

// Half h of a sub-block's 2-bit quants from RowQwordsToLanes' vector: chunk 2h in each lane's
// first qword, 2h + 1 in its second (bits 4h.. and 4h + 2.. of every byte). Shifting the
// whole qword moves the next byte's bits above the two kept.
HWY_INLINE __m512i TwoBitHalf(__m512i rows, int h) {
  const __m512i shift =
      _mm512_setr_epi64(4 * h, 4 * h + 2, 4 * h, 4 * h + 2, 4 * h, 4 * h + 2, 4 * h, 4 * h + 2);
  return _mm512_and_si512(_mm512_srlv_epi64(rows, shift), _mm512_set1_epi8(3));
}

// One token's int32 sums of a sub-block, [row][4] lanes: both halves' quants w0, w1 times the
// activations q (32 at q) and their lanes' scales s0, s1.
HWY_INLINE __m512i ScaledSubBlock(__m512i w0, __m512i w1, __m512i s0, __m512i s1,
                                  const int8_t* HWY_RESTRICT q) {
  const __m512i x0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  const __m512i x1 =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  return DotWords512(_mm512_madd_epi16(_mm512_maddubs_epi16(w0, x0), s0),
                     _mm512_maddubs_epi16(w1, x1), s1);
}

// ScaledSubBlock added to acc (kSuper: the block's activations share one scale, so its
// sub-blocks add up in int32 and are converted once per block).
HWY_INLINE __m512i AddScaledSubBlock(__m512i acc, __m512i w0, __m512i w1, __m512i s0, __m512i s1,
                                     const int8_t* HWY_RESTRICT q) {
  const __m512i x0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  const __m512i x1 =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
  return DotWords512(DotWords512(acc, _mm512_maddubs_epi16(w0, x0), s0),
                     _mm512_maddubs_epi16(w1, x1), s1);
}

// One token's sub-block of the group into its half-block sums: in int32 (kSuper, AddScaledSubBlock)
// or converted and scaled by the sub-block's activation scale xs (ScaledSubBlock).
template <bool kSuper>
HWY_INLINE void AddSubBlock(__m512i w0, __m512i w1, __m512i s0, __m512i s1,
                            const int8_t* HWY_RESTRICT q, float xs, __m512& part, __m512i& whole) {
  if constexpr (kSuper) {
    whole = AddScaledSubBlock(whole, w0, w1, s0, s1, q);
  } else {
    part = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ScaledSubBlock(w0, w1, s0, s1, q)),
                           _mm512_set1_ps(xs), part);
  }
}

// A token's four outputs: acc in [row][4] lanes, terms01 / terms23 in [row][8] lanes (rows 0-1,
// 2-3).
HWY_INLINE void StoreRowLanes(__m512 acc, __m512 terms01, __m512 terms23, float* y) {
  const __m512 terms =
      _mm512_add_ps(_mm512_shuffle_f32x4(terms01, terms23, _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_f32x4(terms01, terms23, _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 v = _mm512_add_ps(acc, terms);
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  const __m512 rows =
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), v);
  _mm_storeu_ps(y, _mm512_castps512_ps128(rows));
}

// The f16 words at word indices i[0..7] of v as f32 lanes 0..7 (the four rows' d, and dmin).
HWY_INLINE __m512 HalvesAt(__m512i v, const short (&i)[8]) {
  const __m512i words = _mm512_permutexvar_epi16(
      _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, i[7],
                       i[6], i[5], i[4], i[3], i[2], i[1], i[0]),
      v);
  return _mm512_castps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(words)));
}

// Row lanes of the values of rows 0-3 in f32 lanes 0-3 of v: [row][4] (every lane of 128-bit
// lane r); RowLanes8: [row][8] of the rows in lanes first and first + 1.
HWY_INLINE __m512 RowLanes4(__m512 v) {
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                               v);
}
HWY_INLINE __m512 RowLanes8(__m512 v, int first) {
  return _mm512_permutexvar_ps(
      _mm512_inserti64x4(_mm512_set1_epi32(first), _mm256_set1_epi32(first + 1), 1), v);
}

// A token's terms on its half sums of one block (HalfSums16), added to [row][8] lanes of rows
// 0-1 and 2-3: the half sums times each row's int16 factors (Q2_K's mins, Q3_K's scales), times
// the activations' scales and the rows' f32 factors (Q2_K's -dmin, Q3_K's -4 d).
struct HalfTermFactors {
  __m512i factor01, factor23;
  __m512 d01, d23;
};

// A Q2_K block's records of a group's four rows (d, dmin, then 16 bytes of 4-bit scale | 4-bit
// min << 4 per row), in one byte permute: the scales as bytes [row][16] (for vpshufb or a byte
// permute, zero-extended to int16), d in [row][4] lanes, and for the half sums the mins widened
// to int16 [row][16] for rows 0-1 and 2-3 with -dmin in [row][8] lanes.
struct Q2KGroupRecords {
  __m512i scales;
  __m512 d_rows;
  HalfTermFactors half;

  // A sub-block's four rows are 32 bytes, two sub-blocks per load.
  template <class Add>
  HWY_INLINE void SubBlocks(const uint8_t* HWY_RESTRICT group, size_t first_sub,
                            const Add& add) const {
    // Two sub-blocks' 64 bytes per load; unrolled so that every index is a constant.
#pragma GCC unroll 4
    for (size_t pair = 0; pair < 4; ++pair) {
      const uint8_t* HWY_RESTRICT p =
          FullGroup<GgmlBlockType::kQ2_K>::SubBlock(group, first_sub + 2 * pair);
      hwy::Prefetch(p + kWeightPrefetchBytes);
      const __m512i both = _mm512_loadu_si512(p);
#pragma GCC unroll 2
      for (size_t u = 0; u < 2; ++u) {
        const int s = static_cast<int>(2 * pair + u);
        const __m512i rows = RowQwordsToLanes(both, u == 1);
        const __m512i w0 = TwoBitHalf(rows, 0), w1 = TwoBitHalf(rows, 1);
        const __m512i s0 = _mm512_shuffle_epi8(scales, ScaleIndex<false>(2 * s));
        const __m512i s1 = _mm512_shuffle_epi8(scales, ScaleIndex<false>(2 * s + 1));
        add(s, w0, w1, s0, s1);
      }
    }
  }
};
HWY_INLINE Q2KGroupRecords DecodeQ2KGroupRecords(const uint8_t* HWY_RESTRICT rec) {
  constexpr BlockFormat F = FormatOf(GgmlBlockType::kQ2_K);
  static_assert(F.record_bytes == 20 && F.SubBlocks() == 8, "Q2_K's record and block");
  // Record byte 4 + i of row r (at 20r + 4 + i) into lane r, byte i: rows 0-2 from the first
  // 64 bytes, row 3 from the 64 at byte 16 (table index 64 + 48 + i).
  alignas(64) static constexpr struct ScaleSource {
    uint8_t index[64];
    constexpr ScaleSource() : index() {
      for (int p = 0; p < 64; ++p) {
        const int r = p / 16, i = p % 16;
        index[p] = static_cast<uint8_t>(r < 3 ? 20 * r + 4 + i : 64 + 48 + i);
      }
    }
  } kScaleSource;
  const __m512i rec0 = _mm512_loadu_si512(rec), rec16 = _mm512_loadu_si512(rec + 16);
  const __m512i packed =
      _mm512_permutex2var_epi8(rec0, _mm512_load_si512(kScaleSource.index), rec16);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i mins = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
  // d of rows 0-3 in lanes 0-3, dmin in 4-7 (words 10r and 10r + 1).
  const __m512 d = HalvesAt(rec0, {0, 10, 20, 30, 1, 11, 21, 31});
  return {_mm512_and_si512(packed, nibble),
          RowLanes4(d),
          {_mm512_cvtepu8_epi16(_mm512_castsi512_si256(mins)),
           _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(mins, 1)),
           RowLanes8(_mm512_sub_ps(_mm512_setzero_ps(), d), 4),
           RowLanes8(_mm512_sub_ps(_mm512_setzero_ps(), d), 6)}};
}

// A token's terms (HalfTermFactors) on the half sums halves of one block, added to terms01 /
// terms23; xs the activations' scales.
HWY_INLINE void AddHalfTerms(__m512i halves, __m512 xs, const HalfTermFactors& f, __m512& terms01,
                             __m512& terms23) {
  terms01 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(halves, f.factor01)),
                            _mm512_mul_ps(xs, f.d01), terms01);
  terms23 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(halves, f.factor23)),
                            _mm512_mul_ps(xs, f.d23), terms23);
}

// A token's block into acc: its sub-blocks' f32 sums part (activations with a scale per 32) or
// its int32 sums whole times its one activation scale xs (kSuper), times the rows' d.
template <bool kSuper>
HWY_INLINE __m512 AddBlock(__m512 acc, const __m512 (&part)[2], const __m512i (&whole)[2],
                           __m512 d_rows, float xs) {
  if constexpr (kSuper) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(whole[0], whole[1])),
                           _mm512_mul_ps(d_rows, _mm512_set1_ps(xs)), acc);
  } else {
    return _mm512_fmadd_ps(_mm512_add_ps(part[0], part[1]), d_rows, acc);
  }
}

// A Q3_K block's records of a group's four rows (12 bytes of 6-bit scales, then d, per row),
// the 16 scales (sc - 32) unpacked together: one byte permute each for their low nibbles and
// their high bits, then shifts per 64-bit or 32-bit lane. sc_lo / sc_hi: [row][8] int16,
// scales 0-7 and 8-15 of row r in 128-bit lane r (for vpshufb); sc01 / sc23: [row][16] int16
// for rows 0-1 and 2-3, scale j at position j (against the half sums, with -4 d in [row][8]
// lanes for rows 0-1 and 2-3: the center's factor). d in [row][4] lanes.
struct Q3KGroupRecords {
  __m512i sc_lo, sc_hi, sc01, sc23;
  __m512 d_rows;
  HalfTermFactors half;

  // Element value d * (sc - 32) * (q - 4) with q = low 2 bits | high bit << 2: q stays unsigned
  // and -4 * sum(x) of each half joins the per-block terms with the same scale.
  template <class Add>
  HWY_INLINE void SubBlocks(const uint8_t* HWY_RESTRICT group, size_t first_sub,
                            const Add& add) const {
    constexpr size_t kLowBytes = kQuantGroupRows * FormatOf(GgmlBlockType::kQ3_K).LowBytes();
    // Unrolled so that every index is a constant.
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const size_t sub = first_sub + static_cast<size_t>(s);
      const uint8_t* HWY_RESTRICT p = FullGroup<GgmlBlockType::kQ3_K>::SubBlock(group, sub);
      hwy::Prefetch(p + kWeightPrefetchBytes);
      const __m512i rows = RowQwordsToLanes(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), false);
      // Row r's 4 bytes of high bits in every 32-bit lane of lane r. Element 8c + 4e + i has
      // its bit at bit 2c + e of byte i: in half h, 32-bit lane 2 (c - 2h) + e of a row's lane,
      // bit 4h + (its lane index), rotated to bit 2.
      const __m512i high = _mm512_permutexvar_epi32(
          _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
          _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kLowBytes))));
      const __m512i bit = _mm512_set1_epi8(4);
      const __m512i w0 = _mm512_ternarylogic_epi32(
          TwoBitHalf(rows, 0),
          _mm512_rolv_epi32(high,
                            _mm512_setr_epi32(2, 1, 0, 31, 2, 1, 0, 31, 2, 1, 0, 31, 2, 1, 0, 31)),
          bit, 0xF8);
      const __m512i w1 = _mm512_ternarylogic_epi32(
          TwoBitHalf(rows, 1),
          _mm512_rolv_epi32(high, _mm512_setr_epi32(30, 29, 28, 27, 30, 29, 28, 27, 30, 29, 28, 27,
                                                    30, 29, 28, 27)),
          bit, 0xF8);
      const int j0 = 2 * s, j1 = 2 * s + 1;  // the halves' scales
      const __m512i s0 = _mm512_shuffle_epi8(j0 < 8 ? sc_lo : sc_hi, ScaleIndex<true>(j0 % 8));
      const __m512i s1 = _mm512_shuffle_epi8(j1 < 8 ? sc_lo : sc_hi, ScaleIndex<true>(j1 % 8));
      add(s, w0, w1, s0, s1);
    }
  }
};
HWY_INLINE Q3KGroupRecords DecodeQ3KGroupRecords(const uint8_t* HWY_RESTRICT rec_at) {
  constexpr BlockFormat F = FormatOf(GgmlBlockType::kQ3_K);
  static_assert(F.record_bytes == 14 && F.SubBlocks() == 8, "Q3_K's record and block");
  // Byte b of qword 4H + r (scale j = 8H + b of row r): the record byte holding its low 4 bits
  // (b, either nibble) and the one holding its high 2 (8 + b % 4).
  alignas(64) static constexpr struct ScaleSource {
    uint8_t low[64], high[64];
    constexpr ScaleSource() : low(), high() {
      for (int p = 0; p < 64; ++p) {
        const int r = p / 8 % 4, b = p % 8;
        low[p] = static_cast<uint8_t>(14 * r + b);
        high[p] = static_cast<uint8_t>(14 * r + 8 + b % 4);
      }
    }
  } kScaleSource;
  // The four records are 56 bytes: a masked load reads nothing past them.
  const __m512i rec = _mm512_maskz_loadu_epi8((__mmask64{1} << 56) - 1, rec_at);
  // Low 4 bits: the low nibble for scales 0-7 (qwords 0-3), the high one for 8-15.
  const __m512i low = _mm512_and_si512(
      _mm512_srlv_epi64(_mm512_permutexvar_epi8(_mm512_load_si512(kScaleSource.low), rec),
                        _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)),
      _mm512_set1_epi8(0x0F));
  // High 2 bits of scale j: bits 2 (j / 4) of its byte, rotated to bits 4-5 per 32-bit lane
  // (bytes 0-3 of a qword are j / 4 = 2H, bytes 4-7 2H + 1).
  const __m512i high =
      _mm512_rolv_epi32(_mm512_permutexvar_epi8(_mm512_load_si512(kScaleSource.high), rec),
                        _mm512_setr_epi32(4, 2, 4, 2, 4, 2, 4, 2, 0, 30, 0, 30, 0, 30, 0, 30));
  const __m512i sc = _mm512_sub_epi8(
      _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi8(0x30), 0xF8),  // low | high & 0x30
      _mm512_set1_epi8(32));
  Q3KGroupRecords g;
  g.sc_lo = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(sc));
  g.sc_hi = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(sc, 1));
  g.sc01 = _mm512_permutex2var_epi64(g.sc_lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), g.sc_hi);
  g.sc23 =
      _mm512_permutex2var_epi64(g.sc_lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), g.sc_hi);
  const __m512 d = HalvesAt(rec, {6, 13, 20, 27, 6, 13, 20, 27});  // d at byte 14r + 12
  const __m512 minus_4 = _mm512_set1_ps(-4.0f);
  g.d_rows = RowLanes4(d);
  g.half = {g.sc01, g.sc23, _mm512_mul_ps(RowLanes8(d, 0), minus_4),
            _mm512_mul_ps(RowLanes8(d, 2), minus_4)};
  return g;
}

// A Q2_K or Q3_K block's records of a group's four rows: d_rows, the half sums' factors half,
// and SubBlocks(group, first_sub, add), which decodes the block's 8 sub-blocks into each half's
// unsigned quants w0, w1 ([row][4] lanes as TwoBitHalf leaves them) and their lanes' int16
// scales s0, s1, and calls add(s, w0, w1, s0, s1) for sub-block s = 0 .. 7 (a constant once
// unrolled).
template <GgmlBlockType T>
HWY_INLINE auto DecodeLowBitGroupRecords(const uint8_t* HWY_RESTRICT rec) {
  static_assert(T == GgmlBlockType::kQ2_K || T == GgmlBlockType::kQ3_K, "Q2_K or Q3_K");
  if constexpr (T == GgmlBlockType::kQ2_K) {
    return DecodeQ2KGroupRecords(rec);
  } else {
    return DecodeQ3KGroupRecords(rec);
  }
}

// Q2_K or Q3_K against 1 to 4 tokens (DecodeLowBitGroupRecords for what differs). kSuper: the
// activations have one scale per super-block, and the sub-blocks add up in int32
// (AddScaledSubBlock; one convert per block). Decode of 1-4 tokens with kSuper takes
// LowBitPairedTile4xN_Avx512Vnni where its activations fit its stack buffer; this tile takes
// Q2_K's prefill, 4 tokens at a time.
// Q2_K: the 256-bit tile stayed far below the core's read bandwidth on Q2_K decode, in cache
// and from DRAM alike; this one reads the weights more than twice as fast. Q3_K: faster than
// BlocksTile4xN_Avx512Vnni's centered path in cache and from DRAM; from DRAM most of the gain
// needs PrefetchRecords (figures: docs/kernels.md).
template <GgmlBlockType T, size_t kTokens, bool kSuper>
HWY_NOINLINE void LowBitTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w, const BlockLayout& layout,
                                           size_t r0, const uint8_t* HWY_RESTRICT x,
                                           size_t x_row_bytes, size_t k, float* HWY_RESTRICT y,
                                           size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  // terms01 / terms23: the half sums' terms (Q2_K's mins, Q3_K's center).
  __m512 acc[kTokens], terms01[kTokens], terms23[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = terms01[t] = terms23[t] = _mm512_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    const size_t first_sub = blk * 8;
    PrefetchRecords<T>(group, blk);
    const auto g = DecodeLowBitGroupRecords<T>(FullGroup<T>::Records(group, blk));
    __m512 part[kTokens][2];
    __m512i whole[kTokens][2];
    for (size_t t = 0; t < kTokens; ++t) {
      part[t][0] = part[t][1] = _mm512_setzero_ps();
      whole[t][0] = whole[t][1] = _mm512_setzero_si512();
      const __m512i halves = HalfSums16(act[t].q + first_sub * kGgmlSubBlockElems);
      const __m512 xs = _mm512_broadcast_f32x8(_mm256_loadu_ps(act[t].scale + first_sub));
      AddHalfTerms(halves, xs, g.half, terms01[t], terms23[t]);
    }
    const auto add = [&](int s, __m512i w0, __m512i w1, __m512i s0, __m512i s1) {
      const size_t sub = first_sub + static_cast<size_t>(s);
      for (size_t t = 0; t < kTokens; ++t) {
        AddSubBlock<kSuper>(w0, w1, s0, s1, act[t].q + sub * kGgmlSubBlockElems, act[t].scale[sub],
                            part[t][s % 2], whole[t][s % 2]);
      }
    };
    g.SubBlocks(group, first_sub, add);
    for (size_t t = 0; t < kTokens; ++t) {
      acc[t] = AddBlock<kSuper>(acc[t], part[t], whole[t], g.d_rows, act[t].scale[first_sub]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) StoreRowLanes(acc[t], terms01[t], terms23[t], y + t * n_out);
}
