// Q8_0 and Q4_0 against 1 to 4 tokens (decode) on AVX-512 VNNI (x86 AVX3_DL), 512-bit vectors.
// Included by ops/matmul_quant.cc inside its AVX3_DL namespace only (no include guard).
//
// Decode reads every weight once per token. Matrices that stream from DRAM are bound by the
// core's read bandwidth, which the 256-bit group tile (Q8Q4Tile4xN_Avx2) nearly reaches; but
// the smaller ones, which a layer finds in L2 or L3, were bound by instructions: that tile
// spends about 30 on a Q8_0 group block (4 rows x 32 quants, 128 bytes), per 8-quant chunk a
// broadcast, two vpsignb and a vpdpbusd. Here a 512-bit vector holds two chunks of the four
// rows, and a group block costs about 17: the matrices in cache run faster, and those from DRAM
// stay near the read bandwidth (figures: docs/kernels.md).
// - vpdpbusd multiplies unsigned by signed bytes. Q4_0's stored quants q = w + 8 (0..15) are
//   the unsigned operand against the signed activations; the sum carries 8 * sum(x) too much,
//   and the per-block sums that ops/quantize_rows.h stores with the activations take it off
//   (the block's int32 sum starts at -8 * sum(x) in one lane per row). Q8_0's weights stay
//   signed and the activations become unsigned, x + 128 (XOR 0x80); the excess 128 * sum(w) is
//   taken off in each lane with two vpdpbusd of the weights against bytes of 128, shared by
//   the tile's tokens. (Making the weights unsigned instead, w + 128, leaves lanes of about
//   128 * sum|x| to cancel in f32 after scaling: that version failed the exact-reference
//   test's rounding bound.) Every lane then holds an exact sum of 8 products, and no
//   intermediate exceeds 8 * 255 * 128 < 2^21.
// - A Q8_0 group block is [chunk 0 | chunk 1] and [chunk 2 | chunk 3] (chunk j: 8 quants of
//   each row, ops/quant_layout.h); a Q4_0 block's low nibbles are chunks 0 and 1, its high ones
//   2 and 3. The token's 32 quants are permuted to match: [x0..7 x4 | x8..15 x4] and
//   [x16..23 x4 | x24..31 x4]. Int32 lanes 2r, 2r + 1, 2r + 8 and 2r + 9 then hold row r's
//   four partial sums, scaled per block by [s0 s0 s1 s1 s2 s2 s3 s3] twice and added in f32.
// The integer block sums are the 256-bit tile's; the f32 sum runs in another order.

// One full group (4 rows) x kTokens (1..4) tokens. Arguments as for Q8Q4Tile4xN_Avx2.
template <size_t kTokens, bool kQ4>
HWY_NOINLINE void Q8Q4Tile4xN_Avx512Vnni(const uint8_t* HWY_RESTRICT w,
                                         const hwy::float16_t* HWY_RESTRICT ws,
                                         const uint8_t* HWY_RESTRICT x, size_t x_row_bytes,
                                         size_t k, float* HWY_RESTRICT y, size_t n_out) {
  static_assert(kTokens >= 1 && kTokens <= 4, "1 to 4 tokens");
  constexpr size_t kGroupBlockBytes = kQuantGroupRows * (kQ4 ? kQ4BlockBytes : kQ8BlockBytes);
  const size_t blocks = k / kQuantBlockElems;
  const __m512i chunks_01 = _mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i chunks_23 = _mm512_setr_epi64(2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i scale_lanes = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
  constexpr __mmask16 kFirstLaneOfEachRow = 0x0055;  // lanes 0, 2, 4, 6
  const __m512i bytes_128 = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[kTokens];
  Q8ActRow act[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    acc[t] = _mm512_setzero_ps();
    act[t] = Q8ActRowAt(x + t * x_row_bytes, k);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* HWY_RESTRICT wb = w + b * kGroupBlockBytes;
    hwy::Prefetch(wb + kWeightPrefetchBytes);
    if constexpr (!kQ4) hwy::Prefetch(wb + kWeightPrefetchBytes + 64);
    __m512i w01, w23;
    [[maybe_unused]] __m512i q8_start;
    if constexpr (kQ4) {
      const __m512i low = _mm512_set1_epi8(0x0F);
      const __m512i bytes = _mm512_loadu_si512(wb);
      w01 = _mm512_and_si512(bytes, low);
      w23 = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
    } else {
      w01 = _mm512_loadu_si512(wb);
      w23 = _mm512_loadu_si512(wb + 64);
      q8_start = _mm512_sub_epi32(
          _mm512_setzero_si512(),
          DotBytes512(DotBytes512(_mm512_setzero_si512(), bytes_128, w01), bytes_128, w23));
    }
    const __m128 s4 = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + b * 4)));
    const __m512 w_scale = _mm512_permutexvar_ps(scale_lanes, _mm512_castps128_ps512(s4));
    for (size_t t = 0; t < kTokens; ++t) {
      __m256i x32 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t].q + b * kQuantBlockElems));
      __m512i sums;
      if constexpr (kQ4) {
        const __m512i xv = _mm512_castsi256_si512(x32);
        const __m512i start =
            _mm512_maskz_set1_epi32(kFirstLaneOfEachRow, ScaledBlockSum(act[t].sum[b], -8));
        sums = DotBytes512(DotBytes512(start, w01, _mm512_permutexvar_epi64(chunks_01, xv)), w23,
                           _mm512_permutexvar_epi64(chunks_23, xv));
      } else {
        x32 = _mm256_xor_si256(x32, _mm512_castsi512_si256(bytes_128));
        const __m512i xv = _mm512_castsi256_si512(x32);
        sums = DotBytes512(DotBytes512(q8_start, _mm512_permutexvar_epi64(chunks_01, xv), w01),
                           _mm512_permutexvar_epi64(chunks_23, xv), w23);
      }
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                               _mm512_mul_ps(w_scale, _mm512_set1_ps(act[t].scale[b])), acc[t]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    // [r0 r0 r1 r1 r2 r2 r3 r3] twice -> once -> [r0 r1 r2 r3]
    const __m256 halves =
        _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1));
    const __m128 rows =
        _mm_hadd_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
    _mm_storeu_ps(y + t * n_out, rows);
  }
}
