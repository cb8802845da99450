// QuantizeRowsQ8, MatMulQ8/Q4 and EmbedQ8/Q4 against scalar references on every Highway target.
//
// Weights are random ggml blocks (random quants and f16 scales), packed by the converter's
// PackGgmlBlocks; the references read the unpacked ggml blocks, so a packing or addressing bug
// shows as a mismatch. Activations are quantized by a scalar reference that must agree with the
// kernel bit for bit; the matmul reference then sums the exact integer dot products in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/base.h>  // HWY_ARCH_X86

#include "converters/quantize.h"
#include "ops/embed.h"
#include "ops/matmul_quant.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"
#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kSentinel;

struct QuantizedRow {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> sum;
};

// The documented format of ops/quantize_rows.h, written out in scalar code.
QuantizedRow ReferenceQuantize(const float* x, size_t k) {
  QuantizedRow r;
  for (size_t b = 0; b < k / 32; ++b) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float scale = amax / 127.0f;
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    int sum = 0;
    for (size_t i = 0; i < 32; ++i) {
      const int q = static_cast<int>(std::nearbyint(x[b * 32 + i] * inverse));
      r.q.push_back(static_cast<int8_t>(q));
      sum += q;
    }
    r.scale.push_back(scale);
    r.sum.push_back(sum);
  }
  return r;
}

std::vector<float> Activations(size_t n, std::mt19937& rng) {
  std::vector<float> x = test::RandomFloats(n, -3.0f, 3.0f, rng);
  // Blocks that stress the quantizer: all zero, one huge value, tiny values.
  if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  if (n >= 96) x[70] = 1e4f;
  if (n >= 128) {
    for (size_t i = 96; i < 128; ++i) x[i] *= 1e-30f;
  }
  return x;
}

// out (rows of Q8ActRowBytes(k), then bytes of 0xAB) holds x's rows as ReferenceQuantize makes
// them, bit for bit, and nothing past them.
void ExpectReferenceRows(const std::vector<uint8_t>& out, const std::vector<float>& x, size_t rows,
                         size_t k) {
  for (size_t r = 0; r < rows; ++r) {
    const QuantizedRow ref = ReferenceQuantize(x.data() + r * k, k);
    const uint8_t* row = out.data() + r * Q8ActRowBytes(k);
    ASSERT_EQ(0, std::memcmp(row, ref.q.data(), k)) << "k=" << k << " row " << r;
    ASSERT_EQ(0, std::memcmp(row + k, ref.scale.data(), k / 32 * 4)) << "k=" << k;
    ASSERT_EQ(0, std::memcmp(row + k + k / 32 * 4, ref.sum.data(), k / 32 * 4)) << "k=" << k;
  }
  for (size_t i = rows * Q8ActRowBytes(k); i < out.size(); ++i) ASSERT_EQ(out[i], 0xAB);
}

TEST(QuantizeRowsQ8, MatchesTheReferenceBitForBit) {
  std::mt19937 rng(7);
  ForEachTarget([&](const char*) {
    // 12 and 20 blocks: a partial batch of blocks on 16 lanes, then a whole one and a rest.
    for (size_t k : {32, 64, 128, 384, 640, 2080}) {
      for (size_t rows : {1, 3}) {
        const std::vector<float> x = Activations(rows * k, rng);
        std::vector<uint8_t> out(rows * Q8ActRowBytes(k) + 64, 0xAB);
        QuantizeRowsQ8(x.data(), rows, k, out.data());
        ExpectReferenceRows(out, x, rows, k);
      }
    }
  });
}
// With per-channel factors the kernel quantizes x[r][j] * factor[j]: bit for bit the rows
// multiplied in scalar code and quantized by the reference (factors of mixed sizes, zero and
// negative ones included, so each block's maximum moves between channels).
TEST(QuantizeRowsQ8Scaled, QuantizesTheRowsTimesTheFactors) {
  std::mt19937 rng(11);
  ForEachTarget([&](const char*) {
    for (size_t k : {32, 384, 2080}) {
      const size_t rows = 3;
      const std::vector<float> x = Activations(rows * k, rng);
      std::vector<float> factor = test::RandomFloats(k, 0.05f, 20.0f, rng);
      factor[1] = 0.0f;
      factor[k - 1] = -2.5f;
      std::vector<float> scaled(x.size());
      for (size_t i = 0; i < x.size(); ++i) scaled[i] = x[i] * factor[i % k];
      std::vector<uint8_t> out(rows * Q8ActRowBytes(k) + 64, 0xAB);
      QuantizeRowsQ8Scaled(x.data(), rows, k, factor.data(), out.data());
      ExpectReferenceRows(out, scaled, rows, k);
    }
  });
}

// Random ggml blocks for a [rows, k] weight: scales of either sign and varied magnitude.
std::vector<uint8_t> RandomGgmlBlocks(bool q4, size_t rows, size_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<uint8_t> blocks;
  for (size_t b = 0; b < rows * k / 32; ++b) {
    const uint16_t s = test::F16BitsFromF32(scale(rng));
    blocks.push_back(static_cast<uint8_t>(s & 0xFF));
    blocks.push_back(static_cast<uint8_t>(s >> 8));
    for (size_t i = 0; i < (q4 ? 16 : 32); ++i) {
      int v = byte(rng);
      if (!q4 && v == 128) v = 129;  // ggml's quantizer never writes -128
      blocks.push_back(static_cast<uint8_t>(v));
    }
  }
  return blocks;
}

// Weight (row, element) as ggml defines it: the integer quant and its block's scale.
struct GgmlWeights {
  bool q4;
  size_t k;
  const std::vector<uint8_t>& blocks;
  const uint8_t* Block(size_t row, size_t b) const {
    return blocks.data() + (row * (k / 32) + b) * (q4 ? kGgmlQ4BlockBytes : kGgmlQ8BlockBytes);
  }
  float Scale(size_t row, size_t b) const {
    uint16_t bits;
    std::memcpy(&bits, Block(row, b), 2);
    return test::F32FromF16Bits(bits);
  }
  int Quant(size_t row, size_t i) const {
    const uint8_t* q = Block(row, i / 32) + 2;
    const size_t j = i % 32;
    if (q4) return (j < 16 ? (q[j] & 0x0F) : (q[j - 16] >> 4)) - 8;
    return static_cast<int8_t>(q[j]);
  }
};

std::vector<test::QuantMatMulCase> Cases() {
  std::vector<test::QuantMatMulCase> cases = test::QuantMatMulCases({32, 96, 640, 2080});
  // The AVX-512 VNNI token-panel kernel: panels of 16 tokens (and a last one of 8 or more, or
  // a remainder for the tiles), passes of up to 4 panels per row tile (72 and 93 tokens take
  // two), row tiles of 16 with 1-3 groups left over, edge rows, and k longer than a panel's
  // slice (2048). x86 only: elsewhere they would add emulation time in CI and no kernel.
#if HWY_ARCH_X86
  for (size_t k : {96, 2080}) {
    for (size_t n_tokens : {8, 16, 21, 27, 40, 72, 93}) {
      for (size_t n_out : {16, 44, 70}) {
        cases.push_back({n_tokens, k, n_out, 0, n_out});
        cases.push_back({n_tokens, k, n_out, 4, n_out - 4});
        cases.push_back({n_tokens, k, n_out, 3, n_out - 1});
      }
    }
  }
  // k so long that the L2 token block is 16 while the panels take blocks of 64 (kPanelTokenBlock):
  // one block of 72 tokens, two passes: 4 panels, then a last one of 8.
  cases.push_back({72, 8192, 8, 0, 8});
#endif
  return cases;
}

// One case's weights and activations, and for every (token, row) the exact product and the
// bound on the kernel's f32 rounding: made once, checked on every target.
struct PreparedCase {
  test::QuantMatMulCase c;
  std::vector<uint8_t> packed;
  std::vector<float> x;
  std::vector<double> exact, bound;  // [n_tokens * n_out]
};

PreparedCase Prepare(bool q4, const test::QuantMatMulCase& c, std::mt19937& rng) {
  PreparedCase p{c, {}, {}, {}, {}};
  const std::vector<uint8_t> blocks = RandomGgmlBlocks(q4, c.n_out, c.k, rng);
  EXPECT_TRUE(
      PackGgmlBlocks(q4 ? fb::DType::Q4_0 : fb::DType::Q8_0, blocks.data(), c.n_out, c.k, &p.packed)
          .ok());
  const GgmlWeights w{q4, c.k, blocks};
  p.x = Activations(c.n_tokens * c.k, rng);
  p.exact.assign(c.n_tokens * c.n_out, 0.0);
  p.bound.assign(c.n_tokens * c.n_out, 0.0);
  for (size_t t = 0; t < c.n_tokens; ++t) {
    const QuantizedRow xr = ReferenceQuantize(p.x.data() + t * c.k, c.k);
    for (size_t r = c.row_begin; r < c.row_end; ++r) {
      // Exact integer block sums, scaled and summed in double; the kernel's f32 rounding is
      // bounded by Gamma over the terms' magnitudes (including Q4's offset term).
      double exact = 0.0, magnitude = 0.0;
      for (size_t b = 0; b < c.k / 32; ++b) {
        int64_t dot = 0, offset_dot = 0, x_sum = 0;
        for (size_t i = b * 32; i < b * 32 + 32; ++i) {
          dot += int64_t{w.Quant(r, i)} * xr.q[i];
          x_sum += xr.q[i];
          offset_dot += int64_t{std::abs(w.Quant(r, i) + (q4 ? 8 : 0))} * std::abs(xr.q[i]);
        }
        const double s = double{w.Scale(r, b)} * xr.scale[b];
        exact += s * static_cast<double>(dot);
        magnitude += std::fabs(s) * (static_cast<double>(offset_dot) +
                                     (q4 ? 8.0 * std::fabs(static_cast<double>(x_sum)) : 0.0));
      }
      p.exact[t * c.n_out + r] = exact;
      p.bound[t * c.n_out + r] = 4 * test::Gamma(c.k / 32 + 4) * magnitude + 1e-30;
    }
  }
  return p;
}

void CheckMatMul(bool q4) {
  std::mt19937 rng(q4 ? 11 : 12);
  std::vector<PreparedCase> prepared;
  for (const test::QuantMatMulCase& c : Cases()) prepared.push_back(Prepare(q4, c, rng));
  ForEachTarget([&](const char*) {
    for (const PreparedCase& p : prepared) {
      const test::QuantMatMulCase& c = p.c;
      // The activations quantized on this target too (QuantizeRowsQ8 tests that it is
      // ReferenceQuantize's bit for bit).
      std::vector<uint8_t> xq(c.n_tokens * Q8ActRowBytes(c.k));
      QuantizeRowsQ8(p.x.data(), c.n_tokens, c.k, xq.data());
      std::vector<float> y(c.n_tokens * c.n_out, kSentinel);
      (q4 ? MatMulQ4 : MatMulQ8)(p.packed.data(), xq.data(), y.data(), c.n_tokens, c.k, c.n_out,
                                 c.row_begin, c.row_end);
      test::ExpectQuantMatMulMatches(c, y, p.exact, p.bound);
    }
  });
}

TEST(MatMulQ8, MatchesExactIntegerReference) { CheckMatMul(false); }
TEST(MatMulQ4, MatchesExactIntegerReference) { CheckMatMul(true); }

TEST(EmbedQuant, DequantizesOneRowPerToken) {
  std::mt19937 rng(5);
  for (bool q4 : {false, true}) {
    const size_t vocab = 11, dim = 96;
    const std::vector<uint8_t> blocks = RandomGgmlBlocks(q4, vocab, dim, rng);
    std::vector<uint8_t> packed;
    ASSERT_TRUE(
        PackGgmlBlocks(q4 ? fb::DType::Q4_0 : fb::DType::Q8_0, blocks.data(), vocab, dim, &packed)
            .ok());
    const GgmlWeights w{q4, dim, blocks};
    const std::vector<int32_t> tokens = {10, 0, 3, 3, 9};
    std::vector<float> out(tokens.size() * dim);
    (q4 ? EmbedQ4 : EmbedQ8)(packed.data(), vocab, dim, tokens.data(), tokens.size(), 2.5f,
                             out.data());
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (size_t i = 0; i < dim; ++i) {
        const float expected =
            static_cast<float>(w.Quant(tokens[t], i)) * (w.Scale(tokens[t], i / 32) * 2.5f);
        ASSERT_EQ(out[t * dim + i], expected) << "q4=" << q4 << " token " << t << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::ops
