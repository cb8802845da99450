// Q2_K against 1 to 4 tokens (decode) on AVX-512 VNNI (x86 AVX3_DL) for activations with one
// scale per super-block (QuantizeRowsQ8Super), from a copy of them reordered for it once per
// matmul call (PairQ2KActivations). Included by ops/matmul_blocks.cc inside its AVX3_DL
// namespace only (no include guard), after ops/matmul_blocks_decode_lowbit_vnni-inl.h, whose
// helpers it uses.
//
// Why: Q2KTile4xN_Avx512Vnni moves each row's 8 bytes of a sub-block to a 128-bit lane of its
// own (a permute per sub-block), shifts per chunk pair and picks each half's scales with a
// vpshufb: about 11 vector instructions per sub-block of four rows, most of them shuffles,
// which left its decode at 0.55-0.60 of one Zen 4 core's read bandwidth. Here a 64-byte load
// holds two sub-blocks of the group's four rows (a row's 32 quants of a sub-block in one qword,
// chunk c of 8 in bits 2c of its bytes); one permute interleaves the two sub-blocks' qwords,
// row by row, and then one shift and one mask give chunk c of all eight (row, sub-block)
// qwords. Each 128-bit lane then needs the 8 activations of chunk c of both sub-blocks, which
// PairQ2KActivations puts side by side (a reordering, the same size): one broadcast load. Both
// chunks of a half share its scale, so a pair of sub-blocks needs two scale vectors (one masked
// byte permute each) where the tile above needs four. The activations' sums of 16 for Q2_K's
// mins are made once per call too (the tile above makes them per group). About 18 vector
// instructions per two sub-blocks against 22. (Spreading each chunk's activations to the four
// qwords that need them instead saves the weight permute, but at 4x their size it fell out of
// L1 at k = 8192 and ran slower from DRAM.) Activations with a scale per 32 run the tile above.

// Bytes of one token's paired activations per super-block: 256 reordered, then its 16 half
// sums (HalfSums16).
inline constexpr size_t kQ2KPairedBlockBytes = kGgmlSuperBlockElems + 64;
// They live on the caller's stack: up to 40 KiB, 4 tokens of k up to 8192 or 1 of 32768.
// Larger calls run the tile above.
inline constexpr size_t kQ2KPairedMaxBytes = size_t{40} << 10;

// One token's activations q (k int8, k a multiple of 256) for Q2KPairedTile4xN: the 64 of
// sub-blocks 2p and 2p + 1 as their 8-byte chunks interleaved (chunk c of sub-block 2p + i at
// qword 2c + i), then each super-block's half sums.
HWY_INLINE void PairQ2KActivations(const int8_t* HWY_RESTRICT q, size_t k,
                                   uint8_t* HWY_RESTRICT out) {
  const __m512i interleave = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t b = 0; b < k / kGgmlSuperBlockElems; ++b) {
    const int8_t* HWY_RESTRICT qb = q + b * kGgmlSuperBlockElems;
    uint8_t* HWY_RESTRICT ob = out + b * kQ2KPairedBlockBytes;
    for (int pair = 0; pair < 4; ++pair) {
      _mm512_store_si512(ob + 64 * pair,
                         _mm512_permutexvar_epi64(interleave, _mm512_loadu_si512(qb + 64 * pair)));
    }
    _mm512_store_si512(ob + kGgmlSuperBlockElems, HalfSums16(qb));
  }
}

// Q2_K's group of four rows at r0 against kTokens tokens: x and x_row_bytes the tokens' Q8_ACT
// rows (for their scales), paired the first token's paired activations (PairQ2KActivations),
// paired_row_bytes apart. Integer sums are exact (|sum| <= 8 sub-blocks * 32 * 3 * 127 * 15 <
// 2^20 per lane); the f32 sums run in another order than the other tiles'.
template <size_t kTokens>
HWY_NOINLINE void Q2KPairedTile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w,
                                              const BlockLayout& layout, size_t r0,
                                              const uint8_t* HWY_RESTRICT x, size_t x_row_bytes,
                                              const uint8_t* HWY_RESTRICT paired,
                                              size_t paired_row_bytes, size_t k,
                                              float* HWY_RESTRICT y, size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr BlockFormat F = FormatOf(GgmlBlockType::kQ2_K);
  static_assert(F.record_bytes == 20 && F.SubBlocks() == 8, "Q2_K's record and block");
  using Group = FullGroup<GgmlBlockType::kQ2_K>;
  static_assert(Group::kSubBytes == 32, "a sub-block's four rows in 32 bytes");
  // One int32 chain per chunk for one token; two for more (registers).
  constexpr int kChains = kTokens == 1 ? 4 : 2;
  const uint8_t* HWY_RESTRICT group = w + layout.GroupOffset(r0);
  alignas(64) static constexpr struct Tables {
    uint8_t scale[4][2][64];  // [pair][half]: word u's scale byte (see below), odd bytes unused
    constexpr Tables() : scale() {
      // Word u of a chunk vector belongs to qword Q = u / 4: row Q / 2, sub-block
      // 2 pair + Q % 2. Its scale: byte 16 row + 2 sub-block + half of the [row][16] scales.
      for (int pair = 0; pair < 4; ++pair) {
        for (int h = 0; h < 2; ++h) {
          for (int u = 0; u < 32; ++u) {
            const int q = u / 4;
            scale[pair][h][2 * u] =
                static_cast<uint8_t>(16 * (q / 2) + 2 * (2 * pair + q % 2) + h);
            scale[pair][h][2 * u + 1] = 0;
          }
        }
      }
    }
  } kTables;
  const __mmask64 kLowBytes = 0x5555555555555555ull;
  const __m512i two_bits = _mm512_set1_epi8(3);
  // Qwords [sub-block][row] of two sub-blocks as [row][sub-block]: int32 lane i then holds row
  // i / 4, the [row][4] lanes StoreRowLanes takes.
  const __m512i interleave = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  __m512 acc[kTokens], min01[kTokens], min23[kTokens];
  const float* HWY_RESTRICT xs[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = min01[t] = min23[t] = _mm512_setzero_ps();
    xs[t] = Q8ActRowAt(x + t * x_row_bytes, k).scale;
  }
  for (size_t blk = 0; blk < layout.blocks_per_row; ++blk) {
    const size_t first_sub = blk * 8;
    PrefetchRecords<GgmlBlockType::kQ2_K>(group, blk);
    const Q2KGroupRecords g = DecodeQ2KGroupRecords(Group::Records(group, blk));
    const uint8_t* HWY_RESTRICT paired_block[kTokens];
    __m512i sums[kTokens][kChains];
    for (size_t t = 0; t < kTokens; ++t) {
      paired_block[t] = paired + t * paired_row_bytes + blk * kQ2KPairedBlockBytes;
      const __m512i halves = _mm512_load_si512(paired_block[t] + kGgmlSuperBlockElems);
      const __m512 xs_block = _mm512_set1_ps(xs[t][first_sub]);
      min01[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(halves, g.mins01)),
                                  _mm512_mul_ps(xs_block, g.dmin01), min01[t]);
      min23[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(halves, g.mins23)),
                                  _mm512_mul_ps(xs_block, g.dmin23), min23[t]);
      for (int c = 0; c < kChains; ++c) sums[t][c] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* HWY_RESTRICT p = Group::SubBlock(group, first_sub + 2 * pair);
      hwy::Prefetch(p + kWeightPrefetchBytes);
      const __m512i both = _mm512_permutexvar_epi64(interleave, _mm512_loadu_si512(p));
      const __m512i scale_half[2] = {
          _mm512_maskz_permutexvar_epi8(kLowBytes, _mm512_load_si512(kTables.scale[pair][0]),
                                        g.scales),
          _mm512_maskz_permutexvar_epi8(kLowBytes, _mm512_load_si512(kTables.scale[pair][1]),
                                        g.scales)};
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i chunk =
            _mm512_and_si512(c == 0 ? both : _mm512_srli_epi16(both, 2 * c), two_bits);
        for (size_t t = 0; t < kTokens; ++t) {
          const __m512i act = _mm512_broadcast_i32x4(_mm_load_si128(
              reinterpret_cast<const __m128i*>(paired_block[t] + 64 * pair + 16 * c)));
          sums[t][c % kChains] = DotWords512(
              sums[t][c % kChains], _mm512_maddubs_epi16(chunk, act), scale_half[c / 2]);
        }
      }
    }
    for (size_t t = 0; t < kTokens; ++t) {
      __m512i total = sums[t][0];
      for (int c = 1; c < kChains; ++c) total = _mm512_add_epi32(total, sums[t][c]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total),
                               _mm512_mul_ps(g.d_rows, _mm512_set1_ps(xs[t][first_sub])),
                               acc[t]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) StoreRowLanes(acc[t], min01[t], min23[t], y + t * n_out);
}
