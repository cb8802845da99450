// Per-target body of ops/matmul.h (compiled once per Highway target by ops/matmul.cc).
//
// Naming: `w` is the weight matrix [n_out, k] (one output feature per row), `x` the activations
// [n_tokens, k], `y` the result [n_tokens, n_out]. Every output y[t, r] is a dot product of two
// contiguous rows, w[r, :] and x[t, :].
//
// The work is cut into tiles of up to kRowTile weight rows x kTokenTile tokens. A tile keeps one
// f32 accumulator vector per output and walks k once: each weight vector is loaded (and widened
// from f16/bf16) once and used for every token of the tile, each activation vector once for every
// row. Decode (one token) is thus a GEMV that streams 4 weight rows at a time with 4 independent
// accumulators; prefill reuses each weight load across tokens instead of running n GEMVs.
// Accumulators are separate variables, not arrays: SVE vectors are sizeless and cannot be array
// elements.

#if defined(KESTREL_OPS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_MATMUL_INL_H_
#undef KESTREL_OPS_MATMUL_INL_H_
#else
#define KESTREL_OPS_MATMUL_INL_H_
#endif

#include <cstddef>
#include <cstring>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline constexpr size_t kRowTile = 4;
// Activation bytes of one token block (see MatMul): half of a typical 1 MiB L2, the rest for
// the weights passing through.
inline constexpr size_t kMatMulL2ActivationBytes = size_t{192} << 10;
// Row tiles shorter than this prefetch the next row tile (see MatMul): short rows give the
// hardware prefetcher too little runway (docs/kernels.md has the measurements).
inline constexpr size_t kMatMulPrefetchTileBytes = size_t{16} << 10;
// Columns of k a tile walks at a time when k is longer than twice this (see MatMul).
inline constexpr size_t kMatMulKSlice = 512;
// A full tile holds kRowTile * kTokenTile accumulators plus kRowTile weight vectors in registers.
// x86 before AVX-512 has 16 vector registers, enough for 4x2 (4x4 spills, and f16 prefill measured
// slower on AVX2: docs/kernels.md); AVX-512, NEON and SVE have 32. The 3- and 4-token tiles
// therefore run only on those targets; to exercise them on an AVX2 machine, build with
// kTokenTile = 4 everywhere.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
inline constexpr size_t kTokenTile = 2;
#else
inline constexpr size_t kTokenTile = 4;
#endif

// a_r += w_r * x for the first kRows rows: one token's column of the tile.
template <size_t kRows, class V>
HWY_INLINE void MulAddColumn(V x, V w0, V w1, V w2, V w3, V& a0, V& a1, V& a2, V& a3) {
  a0 = hn::MulAdd(w0, x, a0);
  if constexpr (kRows > 1) a1 = hn::MulAdd(w1, x, a1);
  if constexpr (kRows > 2) a2 = hn::MulAdd(w2, x, a2);
  if constexpr (kRows > 3) a3 = hn::MulAdd(w3, x, a3);
}

#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR
// Stores the sum of q's 128-bit blocks (4 floats) at y: q halved until one block remains.
template <class D>
HWY_INLINE void StoreBlockSum(D d, hn::Vec<D> q, float* HWY_RESTRICT y) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    StoreBlockSum(dh, hn::Add(hn::LowerHalf(dh, q), hn::UpperHalf(dh, q)), y);
  } else {
    hn::StoreU(q, d, y);
  }
}

// y[0..4) = the lane sums of a0..a3, the four rows of one token. Two levels of interleaved adds
// inside the 128-bit blocks leave [r0 r1 r2 r3] in every block, then the blocks are added: ~11
// vector operations for four outputs, where ReduceSum takes ~8 for each. At k = 384 (MiniLM)
// a 4 x 4 tile does 24 FMA steps per output, so the sums were a third of its work.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE void StoreRowSums4(DF df, V a0, V a1, V a2, V a3, float* HWY_RESTRICT y) {
  const hn::Repartition<uint64_t, DF> d64;
  const V p01 = hn::Add(hn::InterleaveLower(df, a0, a1), hn::InterleaveUpper(df, a0, a1));
  const V p23 = hn::Add(hn::InterleaveLower(df, a2, a3), hn::InterleaveUpper(df, a2, a3));
  const auto w01 = hn::BitCast(d64, p01), w23 = hn::BitCast(d64, p23);
  const V q = hn::Add(hn::BitCast(df, hn::InterleaveLower(d64, w01, w23)),
                      hn::BitCast(df, hn::InterleaveUpper(d64, w01, w23)));
  StoreBlockSum(df, q, y);
}
#endif

// y[r] = sum of lanes of a_r for the first kRows rows (y[r] += with add: the k slices after the
// first). y: one token's outputs, [kRows].
template <size_t kRows, class DF, class V = hn::Vec<DF>>
HWY_INLINE void StoreColumn(DF df, V a0, V a1, V a2, V a3, bool add, float* HWY_RESTRICT y) {
  float sums[4];
#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR
  // Every tile sums its outputs this way, partial ones too, so that an output has the same bits
  // whichever rows share its tile (threads' row splits compose exactly).
  if constexpr (hn::MaxLanes(DF()) >= 4) {
    if (kRows == 4 && !add) return StoreRowSums4(df, a0, a1, a2, a3, y);
    const V zero = hn::Zero(df);
    StoreRowSums4(df, a0, kRows > 1 ? a1 : zero, kRows > 2 ? a2 : zero, kRows > 3 ? a3 : zero,
                  sums);
  } else  // NOLINT: the portable sums below
#endif
  {
    sums[0] = ReduceSum(df, a0);
    if constexpr (kRows > 1) sums[1] = ReduceSum(df, a1);
    if constexpr (kRows > 2) sums[2] = ReduceSum(df, a2);
    if constexpr (kRows > 3) sums[3] = ReduceSum(df, a3);
  }
  for (size_t r = 0; r < kRows; ++r) y[r] = add ? y[r] + sums[r] : sums[r];
}

// The slice of k a tile walks: `len` columns of rows `stride` apart; `add` for every slice
// after the first, whose sums are added to the outputs the earlier slices stored.
struct KSlice {
  size_t stride, len;
  bool add;
};

// Accumulates one vector's worth of k for the whole tile. Row j of the tile starts at
// w + j * w_stride, token j at x + j * x_stride. Accumulator a<r><t> belongs to row r, token t.
template <size_t kRows, size_t kTokens, class DF, typename WT, class V = hn::Vec<DF>>
HWY_INLINE void TileStep(DF df, const WT* HWY_RESTRICT w, size_t w_stride,
                         const float* HWY_RESTRICT x, size_t x_stride,                    //
                         V& a00, V& a10, V& a20, V& a30, V& a01, V& a11, V& a21, V& a31,  //
                         V& a02, V& a12, V& a22, V& a32, V& a03, V& a13, V& a23, V& a33) {
  // Rows past kRows reload row 0 (an offset of 0, a cached line) and are never accumulated;
  // selecting on the offset rather than the vector keeps SVE's sizeless vectors out of ?:.
  const V w0 = LoadAsF32(df, w);
  const V w1 = LoadAsF32(df, w + (kRows > 1 ? w_stride : 0));
  const V w2 = LoadAsF32(df, w + (kRows > 2 ? 2 * w_stride : 0));
  const V w3 = LoadAsF32(df, w + (kRows > 3 ? 3 * w_stride : 0));
  MulAddColumn<kRows>(hn::LoadU(df, x), w0, w1, w2, w3, a00, a10, a20, a30);
  if constexpr (kTokens > 1) {
    MulAddColumn<kRows>(hn::LoadU(df, x + x_stride), w0, w1, w2, w3, a01, a11, a21, a31);
  }
  if constexpr (kTokens > 2) {
    MulAddColumn<kRows>(hn::LoadU(df, x + 2 * x_stride), w0, w1, w2, w3, a02, a12, a22, a32);
  }
  if constexpr (kTokens > 3) {
    MulAddColumn<kRows>(hn::LoadU(df, x + 3 * x_stride), w0, w1, w2, w3, a03, a13, a23, a33);
  }
}

// One tile: kRows (<= 4) weight rows x kTokens (<= 4) tokens over one slice of k.
// w: first row of the tile at the slice, kRows rows of ks.stride. x: first token, likewise.
// y: y[t0, r0] of the full output, row stride n_out.
template <size_t kRows, size_t kTokens, class DF, typename WT>
HWY_NOINLINE void FloatTileMxN_Hwy(DF df, const WT* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                                   const KSlice& ks, float* HWY_RESTRICT y, size_t n_out,
                                   const WT* HWY_RESTRICT prefetch) {
  static_assert(kRows >= 1 && kRows <= 4 && kTokens >= 1 && kTokens <= 4, "tile is at most 4x4");
  using V = hn::Vec<DF>;
  const size_t N = hn::Lanes(df);
  V a00 = hn::Zero(df), a10 = hn::Zero(df), a20 = hn::Zero(df), a30 = hn::Zero(df);
  V a01 = hn::Zero(df), a11 = hn::Zero(df), a21 = hn::Zero(df), a31 = hn::Zero(df);
  V a02 = hn::Zero(df), a12 = hn::Zero(df), a22 = hn::Zero(df), a32 = hn::Zero(df);
  V a03 = hn::Zero(df), a13 = hn::Zero(df), a23 = hn::Zero(df), a33 = hn::Zero(df);

  const size_t k = ks.stride;
  size_t i = 0;
  for (; i + N <= ks.len; i += N) {
    if (prefetch != nullptr) {
      for (size_t r = 0; r < kRowTile; ++r) hwy::Prefetch(prefetch + r * k + i);
    }
    TileStep<kRows, kTokens>(df, w + i, k, x + i, k, a00, a10, a20, a30, a01, a11, a21, a31, a02,
                             a12, a22, a32, a03, a13, a23, a33);
  }
  // Tail: copy the last len - i columns into zero-padded rows so one more full step finishes
  // them without reading past the end of w or x.
  if (i < ks.len) {
    const size_t rest = ks.len - i;
    HWY_ALIGN WT w_pad[kRows * kMaxF32Lanes] = {};
    HWY_ALIGN float x_pad[kTokens * kMaxF32Lanes] = {};
    for (size_t r = 0; r < kRows; ++r) {
      memcpy(w_pad + r * kMaxF32Lanes, w + r * k + i, rest * sizeof(WT));
    }
    for (size_t t = 0; t < kTokens; ++t) {
      memcpy(x_pad + t * kMaxF32Lanes, x + t * k + i, rest * sizeof(float));
    }
    TileStep<kRows, kTokens>(df, w_pad, kMaxF32Lanes, x_pad, kMaxF32Lanes, a00, a10, a20, a30, a01,
                             a11, a21, a31, a02, a12, a22, a32, a03, a13, a23, a33);
  }

  StoreColumn<kRows>(df, a00, a10, a20, a30, ks.add, y);
  if constexpr (kTokens > 1) StoreColumn<kRows>(df, a01, a11, a21, a31, ks.add, y + n_out);
  if constexpr (kTokens > 2) StoreColumn<kRows>(df, a02, a12, a22, a32, ks.add, y + 2 * n_out);
  if constexpr (kTokens > 3) StoreColumn<kRows>(df, a03, a13, a23, a33, ks.add, y + 3 * n_out);
}

// Picks the tile instantiation for a partial tile at the right or bottom edge.
template <size_t kRows, class DF, typename WT>
HWY_INLINE void FloatTileMxTokens_Hwy(DF df, size_t tokens, const WT* HWY_RESTRICT w,
                                      const float* HWY_RESTRICT x, const KSlice& k,
                                      float* HWY_RESTRICT y, size_t n_out,
                                      const WT* HWY_RESTRICT prefetch) {
  switch (tokens) {
    case 1: return FloatTileMxN_Hwy<kRows, 1>(df, w, x, k, y, n_out, prefetch);
    case 2: return FloatTileMxN_Hwy<kRows, 2>(df, w, x, k, y, n_out, prefetch);
    case 3: return FloatTileMxN_Hwy<kRows, HWY_MIN(3, kTokenTile)>(df, w, x, k, y, n_out, prefetch);
    default: return FloatTileMxN_Hwy<kRows, kTokenTile>(df, w, x, k, y, n_out, prefetch);
  }
}

template <class DF, typename WT>
HWY_INLINE void FloatTileFor_Hwy(DF df, size_t rows, size_t tokens, const WT* HWY_RESTRICT w,
                                 const float* HWY_RESTRICT x, const KSlice& k,
                                 float* HWY_RESTRICT y, size_t n_out,
                                 const WT* HWY_RESTRICT prefetch) {
  switch (rows) {
    case 1: return FloatTileMxTokens_Hwy<1>(df, tokens, w, x, k, y, n_out, prefetch);
    case 2: return FloatTileMxTokens_Hwy<2>(df, tokens, w, x, k, y, n_out, prefetch);
    case 3: return FloatTileMxTokens_Hwy<3>(df, tokens, w, x, k, y, n_out, prefetch);
    default: return FloatTileMxTokens_Hwy<kRowTile>(df, tokens, w, x, k, y, n_out, prefetch);
  }
}

// See ops/matmul.h. Rows outside [row_begin, row_end) are neither read from w nor written to y.
template <typename WT>
void MatMul(const WT* HWY_RESTRICT w, const float* HWY_RESTRICT x, float* HWY_RESTRICT y,
            size_t n_tokens, size_t k, size_t n_out, size_t row_begin, size_t row_end) {
  const hn::ScalableTag<float> df;
  // Rows outer, tokens inner: a row tile (4 rows of k weights) stays in L1 while every token of
  // a block passes over it. Blocks of tokens small enough for their activations to stay in L2:
  // an encoder step of 32 texts x 128 tokens has 6 MiB of activations per matmul, and streaming
  // them from memory once per row tile would make the whole GEMM memory-bound. Each output is
  // summed in the same order either way.
  const size_t fit = kMatMulL2ActivationBytes / (k * sizeof(float)) / kTokenTile * kTokenTile;
  const size_t block = HWY_MAX(kTokenTile, fit);
  // Short rows give the hardware prefetcher little runway (a tile's 4 streams restart every few
  // dozen lines), so the first token tile of each row tile prefetches the next row tile; long
  // rows stream well on their own, and prefetching a whole next tile of them evicts the current
  // one from L1.
  const bool prefetch_next_tile = kRowTile * k * sizeof(WT) < kMatMulPrefetchTileBytes;
  // Long rows are walked in slices, each slice of a row tile passing over every token tile of
  // the block before the next slice starts: a 4 x 4 tile's two sides then stay in L1 together
  // (2 x 8 KiB), where whole rows of k = 1536 (2 x 24 KiB) filled Zen 5's 48 KiB L1. Slices
  // depend on k only, so each output is summed in the same order for any token count or rows.
  const size_t slice = k > 2 * kMatMulKSlice ? kMatMulKSlice : k;
  for (size_t t0 = 0; t0 < n_tokens; t0 += block) {
    const size_t t1 = HWY_MIN(n_tokens, t0 + block);
    for (size_t r = row_begin; r < row_end; r += kRowTile) {
      const size_t rows = HWY_MIN(kRowTile, row_end - r);
      for (size_t c = 0; c < k; c += slice) {
        const KSlice ks{k, HWY_MIN(slice, k - c), c > 0};
        for (size_t t = t0; t < t1; t += kTokenTile) {
          const size_t tokens = HWY_MIN(kTokenTile, t1 - t);
          const bool ahead = prefetch_next_tile && c == 0 && t == t0 && r + 2 * kRowTile <= row_end;
          FloatTileFor_Hwy(df, rows, tokens, w + r * k + c, x + t * k + c, ks, y + t * n_out + r,
                           n_out, ahead ? w + (r + kRowTile) * k : nullptr);
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_MATMUL_INL_H_ toggle
