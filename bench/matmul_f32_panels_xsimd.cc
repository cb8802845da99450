// MatMulF32PanelsXsimd (bench/matmul_f32_panels_xsimd.h): ops/matmul_f32_panels.cc's tiles,
// k slices, token blocks and prefetch, and ops/broadcast_fma-inl.h's broadcast-FMA passes,
// written with xsimd batches. Compiled once per architecture: the compiler flags this file gets
// (bench/CMakeLists.txt) pick the one it instantiates.
//
// The helpers have internal linkage: an inline function with external linkage compiled under
// these flags could be the copy the linker keeps for the whole program, and run AVX-512 code on
// a CPU without it. (xsimd's own functions are templates of the architecture, so each has its
// own name; ops::F32PanelRowOffset, borrowed for the layout, is shifts and masks under any flags.)
#include "bench/matmul_f32_panels_xsimd.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "ops/matmul_f32_panels.h"

#if defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512CD__) && defined(__FMA__)
#define KESTREL_XSIMD_ARCH xsimd::avx512bw
#elif defined(__AVX2__) && defined(__FMA__)
#define KESTREL_XSIMD_ARCH xsimd::fma3<xsimd::avx2>
#else
#error "compile with -mavx512f -mavx512cd -mavx512dq -mavx512bw -mfma, or -mavx2 -mfma"
#endif

namespace kestrel::bench {
namespace {

using ops::kF32PanelRows;

// The constants of ops/matmul_f32_panels.cc, for the same tiles.
constexpr size_t kPanelKSlice = 128;
constexpr size_t kPanelPrefetchSteps = 64;
constexpr size_t kPanelL2ActivationBytes = size_t{192} << 10;

// As HWY_INLINE: the whole tile inlines into Run, where each call's constants (the prefetch
// distance, zero on all passes but the first) take their tests out of the inner loops. Without
// it GCC 12 keeps All<> out of line and the xsimd kernel ran 3-5% slower than Highway's.
#define KESTREL_XSIMD_INLINE inline __attribute__((always_inline))

size_t Min(size_t a, size_t b) { return a < b ? a : b; }
size_t Max(size_t a, size_t b) { return a > b ? a : b; }

// ops/broadcast_fma-inl.h's BroadcastFma, restricted to what the panels use (no item factors;
// the item stride is k, the step stride 1).
struct Product {
  const float* vectors;
  size_t second_vector;
  size_t steps;
  const float* scalars;
  size_t k;
  bool accumulate;
  float* rows;
  size_t row_stride;
  size_t items;
  size_t prefetch_ahead;

  Product From(size_t i) const {
    Product p = *this;
    p.scalars += i * k;
    p.rows += i * row_stride;
    p.items -= i;
    return p;
  }
};

template <class Arch>
struct Kernel {
  using B = xsimd::batch<float, Arch>;
  static constexpr size_t kLanes = B::size;
  // Tokens per pass: 8 x 2 accumulators where there are 32 vector registers (AVX-512), 5 x 2
  // where there are 16 (AVX2), as Highway's kBroadcastFmaMaxItems.
  static constexpr size_t kMaxItems = std::is_base_of<xsimd::avx512f, Arch>::value ? 8 : 5;

  // Rows [0, kItems) of the product, each vector one FMA chain over the steps.
  template <size_t kItems, size_t kVecs>
  KESTREL_XSIMD_INLINE static void Items(const Product& p) {
    B acc[kItems][kVecs];
    for (size_t i = 0; i < kItems; ++i) {
      for (size_t j = 0; j < kVecs; ++j) {
        acc[i][j] =
            p.accumulate ? B::load_unaligned(p.rows + i * p.row_stride + j * kLanes) : B(0.0f);
      }
    }
    const float* v = p.vectors;
    const float* sc = p.scalars;
    for (size_t s = 0; s < p.steps; ++s, v += kF32PanelRows, ++sc) {
      if (p.prefetch_ahead != 0) {
        __builtin_prefetch(v + p.prefetch_ahead);
        if (kVecs > 1) __builtin_prefetch(v + p.second_vector + p.prefetch_ahead);
      }
      B column[kVecs];
      for (size_t j = 0; j < kVecs; ++j) column[j] = B::load_unaligned(v + j * p.second_vector);
      for (size_t i = 0; i < kItems; ++i) {
        const B scalar(sc[i * p.k]);
        for (size_t j = 0; j < kVecs; ++j) acc[i][j] = xsimd::fma(scalar, column[j], acc[i][j]);
      }
    }
    for (size_t i = 0; i < kItems; ++i) {
      for (size_t j = 0; j < kVecs; ++j) {
        acc[i][j].store_unaligned(p.rows + i * p.row_stride + j * kLanes);
      }
    }
  }

  // The product's p.items (< kItems) rows, with a row count named at compile time.
  template <size_t kItems, size_t kVecs>
  KESTREL_XSIMD_INLINE static void Rest(const Product& p) {
    if constexpr (kItems >= 1) {
      if (p.items == kItems) return Items<kItems, kVecs>(p);
      Rest<kItems - 1, kVecs>(p);
    }
  }

  template <size_t kVecs>
  KESTREL_XSIMD_INLINE static void All(const Product& p) {
    size_t i = 0;
    for (; i + kMaxItems <= p.items; i += kMaxItems) Items<kMaxItems, kVecs>(p.From(i));
    if (i < p.items) Rest<kMaxItems - 1, kVecs>(p.From(i));
  }

  // Output rows [r, r + kVecs * kLanes), of which [lo, hi) are stored, for `tokens` tokens over
  // columns [c, c + len) of k: ops/matmul_f32_panels.cc's Tile.
  template <size_t kVecs>
  KESTREL_XSIMD_INLINE static void Tile(const float* w, const float* x, float* y, size_t tokens,
                                        size_t k, size_t n_out, size_t r, size_t lo, size_t hi,
                                        size_t c, size_t len) {
    const float* first = w + ops::F32PanelRowOffset(k, r) + c * kF32PanelRows;
    const size_t second =
        kVecs > 1 ? ops::F32PanelRowOffset(k, r + kLanes) - ops::F32PanelRowOffset(k, r) : 0;
    Product p{first, second, len, x + c, k, /*accumulate=*/c > 0, y + r, n_out, tokens, 0};
    if (lo == r && hi == r + kVecs * kLanes) {
      Product first_pass = p;
      first_pass.items = Min(tokens, kMaxItems);
      first_pass.prefetch_ahead = kPanelPrefetchSteps * kF32PanelRows;
      All<kVecs>(first_pass);
      if (tokens > first_pass.items) All<kVecs>(p.From(first_pass.items));
      return;
    }
    alignas(64) float rows[kMaxItems * 2 * kLanes] = {};
    const size_t width = kVecs * kLanes;
    const size_t bytes = (hi - lo) * sizeof(float);
    for (size_t t0 = 0; t0 < tokens; t0 += kMaxItems) {
      const size_t count = Min(kMaxItems, tokens - t0);
      for (size_t t = 0; t < count && c > 0; ++t) {
        memcpy(rows + t * width + (lo - r), y + (t0 + t) * n_out + lo, bytes);
      }
      Product part = p;
      part.scalars = x + t0 * k + c;
      part.rows = rows;
      part.row_stride = width;
      part.items = count;
      All<kVecs>(part);
      for (size_t t = 0; t < count; ++t) {
        memcpy(y + (t0 + t) * n_out + lo, rows + t * width + (lo - r), bytes);
      }
    }
  }

  static void Run(const float* w, const float* x, float* y, size_t n_tokens, size_t k,
                  size_t n_out) {
    const size_t padded = (n_out + kF32PanelRows - 1) / kF32PanelRows * kF32PanelRows;
    const size_t block =
        Max(kMaxItems, kPanelL2ActivationBytes / (k * sizeof(float)) / kMaxItems * kMaxItems);
    for (size_t t0 = 0; t0 < n_tokens; t0 += block) {
      const size_t tokens = Min(block, n_tokens - t0);
      const float* xb = x + t0 * k;
      float* yb = y + t0 * n_out;
      for (size_t r = 0; r < n_out;) {
        const bool two = r + 2 * kLanes <= padded;
        const size_t width = two ? 2 * kLanes : kLanes;
        const size_t hi = Min(r + width, n_out);
        for (size_t c = 0; c < k; c += kPanelKSlice) {
          const size_t len = Min(kPanelKSlice, k - c);
          if (two) {
            Tile<2>(w, xb, yb, tokens, k, n_out, r, r, hi, c, len);
          } else {
            Tile<1>(w, xb, yb, tokens, k, n_out, r, r, hi, c, len);
          }
        }
        r += width;
      }
    }
  }
};

}  // namespace

template <class Arch>
void MatMulF32PanelsXsimd::operator()(Arch, const float* w, const float* x, float* y,
                                      size_t n_tokens, size_t k, size_t n_out) const {
  Kernel<Arch>::Run(w, x, y, n_tokens, k, n_out);
}

template void MatMulF32PanelsXsimd::operator()<KESTREL_XSIMD_ARCH>(KESTREL_XSIMD_ARCH, const float*,
                                                                   const float*, float*, size_t,
                                                                   size_t, size_t) const;

}  // namespace kestrel::bench
