// MatMulF32Panels (ops/matmul_f32_panels.h), compiled for every Highway target and dispatched at
// run time.
//
// A tile is two vectors of output rows (32 on AVX-512: two panels; 16 on AVX2: one) for a block
// of tokens; ops/broadcast_fma-inl.h walks its tokens kBroadcastFmaMaxItems at a time, each
// loaded panel column serving all of them. k is walked in slices so that the tile's panel
// columns stay in L1 while the block's tokens pass; a slice after the first continues the chains
// from the outputs the earlier ones stored, so slicing leaves the bits alone.
#include "ops/matmul_f32_panels.h"
#include "ops/targets.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_f32_panels.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/broadcast_fma-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Columns of k per slice: a two-panel tile's slice is 2 x 16 KiB, beside 8 tokens' 4 KiB of x.
inline constexpr size_t kPanelKSlice = 128;
// Steps (panel columns of 64 bytes) the first pass of tokens prefetches ahead: ~500 cycles at
// 16 FMAs a step, about a memory latency.
inline constexpr size_t kPanelPrefetchSteps = 64;
// Input bytes of one token block, kept in L2 while every tile passes over it (as ops/matmul-inl.h).
inline constexpr size_t kPanelL2ActivationBytes = size_t{192} << 10;

// Where row r's lanes lie in the panels: column 0 of its panel, plus its lane.
HWY_INLINE const float* RowStart(const float* w, size_t k, size_t r) {
  return w + F32PanelRowOffset(k, r);
}

// One tile: output rows [r, r + vecs * N), of which [lo, hi) are stored, for `tokens` tokens
// over columns [c, c + len) of k.
template <size_t kVecs>
HWY_INLINE void F32PanelTileMxN_Hwy(const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                                    float* HWY_RESTRICT y, size_t tokens, size_t k, size_t n_out,
                                    size_t r, size_t lo, size_t hi, size_t c, size_t len) {
  const size_t N = hn::Lanes(BroadcastFmaTag());
  const float* HWY_RESTRICT first = RowStart(w, k, r) + c * kF32PanelRows;
  const size_t second =
      kVecs > 1 ? static_cast<size_t>(RowStart(w, k, r + N) - RowStart(w, k, r)) : 0;
  BroadcastFma p{first,
                 kF32PanelRows,
                 second,
                 len,
                 x + c,
                 1,
                 k,
                 /*accumulate=*/c > 0,
                 nullptr,
                 y + r,
                 n_out,
                 tokens};
  if (lo == r && hi == r + kVecs * N) {
    // The first pass of tokens meets the slice's columns in memory (a model's weights do not
    // fit the caches): it prefetches kPanelPrefetchSteps ahead along the panels, which runs on
    // into the next slice, and the other passes find them in L1.
    BroadcastFma first_pass = p;
    first_pass.items = std::min(tokens, kBroadcastFmaMaxItems);
    first_pass.prefetch_ahead = kPanelPrefetchSteps * kF32PanelRows;
    BroadcastFmaAll<kVecs>(first_pass);
    if (tokens > first_pass.items) BroadcastFmaAll<kVecs>(p.From(first_pass.items));
    return;
  }
  // A tile the row range cuts: its rows in a zero-padded stack copy, kBroadcastFmaMaxItems
  // tokens at a time, and only [lo, hi) stored back.
  HWY_ALIGN float rows[kBroadcastFmaMaxItems * 2 * kBroadcastFmaMaxLanes] = {};
  const size_t width = kVecs * N;
  const size_t bytes = (hi - lo) * sizeof(float);
  for (size_t t0 = 0; t0 < tokens; t0 += kBroadcastFmaMaxItems) {
    const size_t count = std::min(kBroadcastFmaMaxItems, tokens - t0);
    for (size_t t = 0; t < count && c > 0; ++t) {
      memcpy(rows + t * width + (lo - r), y + (t0 + t) * n_out + lo, bytes);
    }
    BroadcastFma part = p;
    part.scalars = x + t0 * k + c;
    part.rows = rows;
    part.row_stride = width;
    part.items = count;
    BroadcastFmaAll<kVecs>(part);
    for (size_t t = 0; t < count; ++t) {
      memcpy(y + (t0 + t) * n_out + lo, rows + t * width + (lo - r), bytes);
    }
  }
}

void MatMulF32PanelsPerTarget(const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                              float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                              size_t row_begin, size_t row_end) {
  if (row_begin >= row_end) return;
  const size_t N = hn::Lanes(BroadcastFmaTag());
  const size_t padded = hwy::RoundUpTo(n_out, kF32PanelRows);
  const size_t block =
      std::max(kBroadcastFmaMaxItems, kPanelL2ActivationBytes / (k * sizeof(float)) /
                                          kBroadcastFmaMaxItems * kBroadcastFmaMaxItems);
  for (size_t t0 = 0; t0 < n_tokens; t0 += block) {
    const size_t tokens = std::min(block, n_tokens - t0);
    const float* HWY_RESTRICT xb = x + t0 * k;
    float* HWY_RESTRICT yb = y + t0 * n_out;
    // Tiles start on vector boundaries (N divides the panel's 16 rows); two vectors where the
    // padded panels have them.
    for (size_t r = row_begin / N * N; r < row_end;) {
      const bool two = r + 2 * N <= padded;
      const size_t width = two ? 2 * N : N;
      const size_t lo = std::max(r, row_begin), hi = std::min(r + width, row_end);
      for (size_t c = 0; c < k; c += kPanelKSlice) {
        const size_t len = std::min(kPanelKSlice, k - c);
        if (two) {
          F32PanelTileMxN_Hwy<2>(w, xb, yb, tokens, k, n_out, r, lo, hi, c, len);
        } else {
          F32PanelTileMxN_Hwy<1>(w, xb, yb, tokens, k, n_out, r, lo, hi, c, len);
        }
      }
      r += width;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

size_t F32PanelFloats(size_t n_out, size_t k) { return hwy::RoundUpTo(n_out, kF32PanelRows) * k; }

void PackF32Panels(const float* w, size_t n_out, size_t k, float* panels) {
  const size_t n_panels = (n_out + kF32PanelRows - 1) / kF32PanelRows;
  for (size_t p = 0; p < n_panels; ++p) {
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < kF32PanelRows; ++j) {
        const size_t r = p * kF32PanelRows + j;
        panels[(p * k + i) * kF32PanelRows + j] = r < n_out ? w[r * k + i] : 0.0f;
      }
    }
  }
}

HWY_EXPORT(MatMulF32PanelsPerTarget);

void MatMulF32Panels(const float* w, const float* x, float* y, size_t n_tokens, size_t k,
                     size_t n_out, size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulF32PanelsPerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

KESTREL_DEFINE_RESOLVE(MatMulF32Panels)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
