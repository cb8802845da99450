// Q2_K and Q3_K against 1 to 4 tokens (decode) on AVX-512 VNNI (x86 AVX3_DL) for activations
// with one scale per super-block (QuantizeRowsQ8Super), from a copy of them reordered for it
// once per matmul call (PairLowBitActivations). Included by ops/matmul_blocks.cc inside its
// AVX3_DL namespace only (no include guard), after ops/matmul_blocks_decode_lowbit_vnni-inl.h,
// whose helpers it uses.
//
// Why: LowBitTile4xN_Avx512Vnni's Q2_K and Q3_K tiles move each row's 8 bytes of a sub-block
// to a 128-bit lane of their own (a permute per sub-block), shift per chunk pair and pick each
// half's scales with a vpshufb: most of their instructions are shuffles, which left their
// decode at 0.55-0.60 of one Zen 4 core's read bandwidth. Here the low 2 bits of two sub-blocks
// of the group's four rows (a row's 32 quants of a sub-block in one qword, chunk c of 8 in bits
// 2c of its bytes) are interleaved row by row by one permute, and then one shift and one mask
// give chunk c of all eight (row, sub-block) qwords. Each 128-bit lane then needs the 8
// activations of chunk c of both sub-blocks, which PairLowBitActivations puts side by side: one
// broadcast load, or for one token of k <= 2048 a plain load of four copies made beforehand (a
// broadcast costs about 15% of the Q2_K tile on a Zen 4). Both chunks of a half share its
// scale, so a pair of sub-blocks needs two scale vectors (one permute each) where the tiles
// above need four. The activations' sums of 16 (Q2_K's mins, Q3_K's center) are made once per
// call too, not once per group. Activations with a scale per 32 run the tiles above.

// Bytes of one token's paired activations per super-block: 256 reordered, each 16-byte pair of
// chunks written `copies` times (1, or 4: the broadcast done beforehand), then its 16 half sums
// (HalfSums16).
constexpr size_t LowBitPairedBlockBytes(size_t copies) {
  return kGgmlSuperBlockElems * copies + 64;
}
// They live on the caller's stack: up to 40 KiB, 4 tokens of k up to 8192 or 1 of 32768.
// Larger calls run the tile above.
inline constexpr size_t kLowBitPairedMaxBytes = size_t{40} << 10;
// Four copies for one token of k up to this: a plain 64-byte load instead of a broadcast per
// chunk, in 8.5 KiB, which is faster from DRAM at k = 2048 (figures: docs/kernels.md); at k =
// 4096 and 8192 four copies (17 and 34 KiB) were slower than one from DRAM (L1 is 32 KiB), though
// faster in cache.
inline constexpr size_t kLowBitPairedCopiesMaxK = 2048;

// One token's activations q (k int8, k a multiple of 256) for the paired tiles: the 64 of
// sub-blocks 2p and 2p + 1 as their 8-byte chunks interleaved (chunk c of sub-block 2p + i at
// qword 2c + i of 64 bytes; with 4 copies, the 16 bytes of chunk c in each 128-bit lane of
// their own 64), then each super-block's half sums.
HWY_INLINE void PairLowBitActivations(const int8_t* HWY_RESTRICT q, size_t k, size_t copies,
                                      uint8_t* HWY_RESTRICT out) {
  const __m512i interleave = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t b = 0; b < k / kGgmlSuperBlockElems; ++b) {
    const int8_t* HWY_RESTRICT qb = q + b * kGgmlSuperBlockElems;
    uint8_t* HWY_RESTRICT ob = out + b * LowBitPairedBlockBytes(copies);
    for (int pair = 0; pair < 4; ++pair) {
      const __m512i paired =
          _mm512_permutexvar_epi64(interleave, _mm512_loadu_si512(qb + 64 * pair));
      if (copies == 1) {
        _mm512_store_si512(ob + 64 * pair, paired);
      } else {
        _mm512_store_si512(ob + 256 * pair, _mm512_shuffle_i64x2(paired, paired, 0x00));
        _mm512_store_si512(ob + 256 * pair + 64, _mm512_shuffle_i64x2(paired, paired, 0x55));
        _mm512_store_si512(ob + 256 * pair + 128, _mm512_shuffle_i64x2(paired, paired, 0xAA));
        _mm512_store_si512(ob + 256 * pair + 192, _mm512_shuffle_i64x2(paired, paired, 0xFF));
      }
    }
    _mm512_store_si512(ob + kGgmlSuperBlockElems * copies, HalfSums16(qb));
  }
}

// Chunk c of sub-block pair `pair` of a block's paired activations, in every 128-bit lane.
template <size_t kCopies>
HWY_INLINE __m512i PairedChunk(const uint8_t* HWY_RESTRICT block, int pair, int c) {
  if constexpr (kCopies == 4) {
    return _mm512_load_si512(block + 256 * pair + 64 * c);
  } else {
    return _mm512_broadcast_i32x4(
        _mm_load_si128(reinterpret_cast<const __m128i*>(block + 64 * pair + 16 * c)));
  }
}

// Q2_K's or Q3_K's group of four rows at r0 against kTokens tokens: x and x_row_bytes the
// tokens' Q8_ACT rows (for their scales), paired the first token's paired activations
// (PairLowBitActivations, kCopies copies), paired_row_bytes apart.
// - Q2_K: a sub-block's four rows are 32 bytes, two sub-blocks one 64-byte load; its scales
//   (0..15) are bytes, picked by a masked byte permute, and its mins' terms go on the half sums.
// - Q3_K: a sub-block's four rows are 32 bytes of low 2 bits (as Q2_K's) and 16 of high bits
//   (row r's 4 bytes at 4r: element 8c + 4e + i's bit at bit 2c + e of byte i). One two-source
//   permute gives each (row, sub-block) qword its row's 4 high bytes twice, and a rotate per
//   32-bit lane moves chunk c's bits to bit 2, ORed in with the low bits (q = 0..7; the center
//   -4 goes on the half sums as in LowBitTile4xN). Its scales are signed: a word permute of the
//   [row][16] int16 scales.
// Integer sums are exact: |sum| <= 8 sub-blocks * 32 * 7 * 127 * 32 < 2^23 per lane. The f32
// sums run in another order than the other tiles'.
template <GgmlBlockType T, size_t kTokens, size_t kCopies>
HWY_NOINLINE void LowBitPairedTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w,
                                                 const BlockLayout& layout, size_t r0,
                                                 const uint8_t* HWY_RESTRICT x, size_t x_row_bytes,
                                                 const uint8_t* HWY_RESTRICT paired,
                                                 size_t paired_row_bytes, size_t k,
                                                 float* HWY_RESTRICT y, size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr bool kQ2 = T == GgmlBlockType::kQ2_K;
  static_assert(kQ2 || T == GgmlBlockType::kQ3_K, "Q2_K or Q3_K");
  constexpr BlockFormat F = FormatOf(T);
  using Group = FullGroup<T>;
  constexpr size_t kLowBytes = kQuantGroupRows * 8;  // a sub-block's low 2 bits
  static_assert(F.SubBlocks() == 8 && Group::kSubBytes == (kQ2 ? 32 : 48),
                "a sub-block's four rows");
  // One int32 chain per chunk for one token; two for more (registers).
  constexpr int kChains = kTokens == 1 ? 4 : 2;
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  // [pair][half][u]: word u's scale j of row r as 16 r + j, a word index into Q3_K's [row][16]
  // int16 scales (rows 0-1, then 2-3) and, in its low byte, a byte index into Q2_K's [row][16]
  // bytes. Qword Q = u / 4 is row Q / 2 of sub-block 2 pair + Q % 2.
  alignas(64) static constexpr struct Tables {
    uint16_t scale[4][2][32];
    constexpr Tables() : scale() {
      for (int pair = 0; pair < 4; ++pair) {
        for (int h = 0; h < 2; ++h) {
          for (int u = 0; u < 32; ++u) {
            const int q = u / 4;
            scale[pair][h][u] = static_cast<uint16_t>(16 * (q / 2) + 2 * (2 * pair + q % 2) + h);
          }
        }
      }
    }
  } kTables;
  const __m512i two_bits = _mm512_set1_epi8(3), bit2 = _mm512_set1_epi8(4);
  // Qwords [sub-block][row] of two sub-blocks as [row][sub-block]: int32 lane i then holds row
  // i / 4, the [row][4] lanes StoreRowLanes takes.
  const __m512i interleave = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  // Q3_K's high bits: dwords 2Q and 2Q + 1 both row Q / 2's of sub-block Q % 2 (source 2 from 16).
  const __m512i high_rows =
      _mm512_setr_epi32(0, 0, 16, 16, 1, 1, 17, 17, 2, 2, 18, 18, 3, 3, 19, 19);
  __m512 acc[kTokens], terms01[kTokens], terms23[kTokens];
  const float* HWY_RESTRICT xs[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = terms01[t] = terms23[t] = _mm512_setzero_ps();
    xs[t] = Q8ActRowAt(x + t * x_row_bytes, k).scale;
  }
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    const size_t first_sub = blk * 8;
    PrefetchRecords<T>(group, blk);
    const auto g = DecodeLowBitGroupRecords<T>(Group::Records(group, blk));
    const uint8_t* HWY_RESTRICT paired_block[kTokens];
    __m512i sums[kTokens][kChains];
    for (size_t t = 0; t < kTokens; ++t) {
      paired_block[t] = paired + t * paired_row_bytes + blk * LowBitPairedBlockBytes(kCopies);
      const __m512i halves = _mm512_load_si512(paired_block[t] + kGgmlSuperBlockElems * kCopies);
      AddHalfTerms(halves, _mm512_set1_ps(xs[t][first_sub]), g.half, terms01[t], terms23[t]);
      for (int c = 0; c < kChains; ++c) sums[t][c] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* HWY_RESTRICT p0 = Group::SubBlock(group, first_sub + 2 * pair);
      const uint8_t* HWY_RESTRICT p1 = p0 + Group::kSubBytes;
      hwy::Prefetch(p0 + kWeightPrefetchBytes);
      if constexpr (!kQ2) hwy::Prefetch(p1 + kWeightPrefetchBytes);
      const __m512i low = _mm512_permutex2var_epi64(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))),
          interleave,
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1))));
      __m512i high = _mm512_setzero_si512();
      if constexpr (!kQ2) {
        high = _mm512_permutex2var_epi32(_mm512_castsi128_si512(_mm_loadu_si128(
                                             reinterpret_cast<const __m128i*>(p0 + kLowBytes))),
                                         high_rows,
                                         _mm512_castsi128_si512(_mm_loadu_si128(
                                             reinterpret_cast<const __m128i*>(p1 + kLowBytes))));
      }
      __m512i scale_half[2];
      for (int h = 0; h < 2; ++h) {
        const __m512i index = _mm512_load_si512(kTables.scale[pair][h]);
        if constexpr (kQ2) {
          scale_half[h] = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, index, g.scales);
        } else {
          scale_half[h] = _mm512_permutex2var_epi16(g.sc01, index, g.sc23);
        }
      }
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m512i chunk = _mm512_and_si512(c == 0 ? low : _mm512_srli_epi16(low, 2 * c), two_bits);
        if constexpr (!kQ2) {
          // Chunk c's high bits: bit 2c + e of the row's byte i, e = 0 in the qword's low
          // dword and 1 in its high one, rotated right to bit 2.
          const int left0 = (34 - 2 * c) % 32, left1 = (33 - 2 * c) % 32;
          const __m512i rotate =
              _mm512_set_epi32(left1, left0, left1, left0, left1, left0, left1, left0, left1, left0,
                               left1, left0, left1, left0, left1, left0);
          chunk = _mm512_ternarylogic_epi32(chunk, _mm512_rolv_epi32(high, rotate), bit2,
                                            0xF8);  // low | high & 4
        }
        for (size_t t = 0; t < kTokens; ++t) {
          const __m512i act = PairedChunk<kCopies>(paired_block[t], pair, c);
          sums[t][c % kChains] = DotWords512(sums[t][c % kChains], _mm512_maddubs_epi16(chunk, act),
                                             scale_half[c / 2]);
        }
      }
    }
    for (size_t t = 0; t < kTokens; ++t) {
      __m512i total = sums[t][0];
      for (int c = 1; c < kChains; ++c) total = _mm512_add_epi32(total, sums[t][c]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total),
                               _mm512_mul_ps(g.d_rows, _mm512_set1_ps(xs[t][first_sub])), acc[t]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    StoreRowLanes(acc[t], terms01[t], terms23[t], y + t * n_out);
  }
}
