// The kept GGUF types (ops/block_layout.h): packing round trips, the matmul kernels of
// ops/matmul_blocks.h against an exact reference on every Highway target, and the embedding
// lookup against ggml's dequantization.
//
// Weights are random ggml blocks (random quant bits and scales), packed as the converter packs
// them. The matmul reference multiplies ggml's dequantized weights (ops/ggml_blocks.h, tested
// against gguf-py by dequantize_test) by the exactly known quantized activations in double;
// the kernel's f32 rounding is bounded by Gamma over the magnitudes of its terms.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/base.h>  // HWY_ARCH_X86

#include "ops/block_layout.h"
#include "ops/embed.h"
#include "ops/ggml_blocks.h"
#include "ops/matmul_blocks.h"
#include "ops/quantize_rows.h"
#include "ops/targets.h"
#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kSentinel;

using MatMulFn = void (*)(const uint8_t*, const uint8_t*, float*, size_t, size_t, size_t, size_t,
                          size_t);
using EmbedFn = void (*)(const uint8_t*, size_t, size_t, const int32_t*, size_t, float, float*);

struct TypeCase {
  const char* name;
  GgmlBlockType type;
  MatMulFn matmul;
  EmbedFn embed;
};

std::vector<TypeCase> Types() {
  return {
#define KESTREL_TYPE_CASE(T) {#T, GgmlBlockType::k##T, MatMul##T, Embed##T},
      KESTREL_BLOCK_TYPES(KESTREL_TYPE_CASE)
#undef KESTREL_TYPE_CASE
  };
}

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = test::F16BitsFromF32(v);
  std::memcpy(p, &h, 2);
}

// Random ggml blocks of type t for [rows, k]: random quant and scale bits, f16 fields finite
// and of either sign.
std::vector<uint8_t> RandomBlocks(GgmlBlockType t, size_t rows, size_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> half(-0.05f, 0.05f);
  const size_t n_blocks = rows * k / GgmlBlockElems(t), bytes = GgmlBlockBytes(t);
  std::vector<uint8_t> blocks(n_blocks * bytes);
  for (uint8_t& b : blocks) b = static_cast<uint8_t>(byte(rng));
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = blocks.data() + i * bytes;
    switch (t) {
      case GgmlBlockType::kQ4_1:
      case GgmlBlockType::kQ5_1:
      case GgmlBlockType::kQ4_K:
      case GgmlBlockType::kQ5_K:
        PutHalf(b, half(rng));
        PutHalf(b + 2, half(rng));
        break;
      case GgmlBlockType::kQ5_0: PutHalf(b, half(rng)); break;
      case GgmlBlockType::kQ6_K: PutHalf(b + 208, half(rng) * 0.01f); break;
      case GgmlBlockType::kQ3_K: PutHalf(b + 108, half(rng)); break;
      case GgmlBlockType::kQ2_K:
        PutHalf(b + 80, half(rng));
        PutHalf(b + 82, half(rng));
        break;
      default: break;
    }
  }
  return blocks;
}

std::vector<uint8_t> Pack(GgmlBlockType t, const std::vector<uint8_t>& blocks, size_t rows,
                          size_t k) {
  const BlockLayout layout(t, rows, k);
  std::vector<uint8_t> packed(layout.TotalBytes(), 0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      PackGgmlBlock(t, layout, blocks.data() + (r * layout.blocks_per_row + b) * GgmlBlockBytes(t),
                    r, b, packed.data());
    }
  }
  return packed;
}

std::vector<float> Dequantize(GgmlBlockType t, const std::vector<uint8_t>& blocks) {
  const size_t n_blocks = blocks.size() / GgmlBlockBytes(t);
  std::vector<float> w(n_blocks * GgmlBlockElems(t));
  for (size_t i = 0; i < n_blocks; ++i) {
    DequantizeGgmlBlock(t, blocks.data() + i * GgmlBlockBytes(t), w.data() + i * GgmlBlockElems(t));
  }
  return w;
}

TEST(OpsBlockLayout, PackingIsExactlyGgmlSizeAndRoundTrips) {
  std::mt19937 rng(3);
  for (const TypeCase& tc : Types()) {
    SCOPED_TRACE(tc.name);
    for (size_t rows : {1, 4, 6, 9}) {
      const size_t k = 2 * GgmlBlockElems(tc.type);
      const std::vector<uint8_t> blocks = RandomBlocks(tc.type, rows, k, rng);
      const std::vector<uint8_t> packed = Pack(tc.type, blocks, rows, k);
      ASSERT_EQ(packed.size(), blocks.size());
      const BlockLayout layout(tc.type, rows, k);
      std::vector<uint8_t> back(GgmlBlockBytes(tc.type));
      for (size_t r = 0; r < rows; ++r) {
        for (size_t b = 0; b < layout.blocks_per_row; ++b) {
          UnpackGgmlBlock(tc.type, layout, packed.data(), r, b, back.data());
          ASSERT_EQ(0, std::memcmp(back.data(),
                                   blocks.data() + (r * layout.blocks_per_row + b) * back.size(),
                                   back.size()))
              << "row " << r << " block " << b;
        }
      }
    }
  }
}

std::vector<test::QuantMatMulCase> Cases(GgmlBlockType t) {
  const size_t e = GgmlBlockElems(t);
  std::vector<test::QuantMatMulCase> cases =
      test::QuantMatMulCases({e, 3 * e, e == 32 ? size_t{640} : size_t{1024}});
  // The AVX-512 VNNI token panels (ops/matmul_panel_vnni-inl.h): panels of 16 tokens and a last
  // one of 8 or more or a remainder for the tiles, passes of up to 4 panels (93 tokens: two
  // passes, the second of 2 panels and a last one of 13), row tiles of 16 with groups left over,
  // edge rows, and k past a panel's slice of 2048. x86 only: elsewhere they would add emulation
  // time in CI and no kernel.
#if HWY_ARCH_X86
  for (size_t n_tokens : {16, 27, 93}) {
    for (size_t n_out : {20, 44}) {
      cases.push_back({n_tokens, 2304, n_out, 0, n_out});
      cases.push_back({n_tokens, 2 * e, n_out, 3, n_out - 1});
    }
  }
  // k so long that the L2 token block is 16 while the panels take blocks of 64 (kPanelTokenBlock).
  cases.push_back({72, 8192, 8, 0, 8});
  // Q2_K's and Q3_K's paired decode tiles (ops/matmul_blocks_decode_lowbit_paired_vnni-inl.h):
  // one token at the longest k with four copies of its activations and past it with one, and
  // four tokens whose paired activations would pass their stack buffer (the tile that reads
  // Q8_ACT rows takes them).
  cases.push_back({1, 2048, 8, 0, 8});
  cases.push_back({1, 2304, 8, 0, 8});
  cases.push_back({4, 8448, 8, 0, 8});
#endif
  return cases;
}

// One case's weights and activations, and for every (token, row) the exact product and the
// bound on the kernel's f32 rounding: made once, checked on every target.
struct PreparedCase {
  test::QuantMatMulCase c;
  std::vector<uint8_t> packed, xq;
  std::vector<double> exact, bound;  // [n_tokens * n_out]
};

PreparedCase Prepare(const TypeCase& tc, bool super, const test::QuantMatMulCase& c,
                     std::mt19937& rng) {
  PreparedCase p{c, {}, {}, {}, {}};
  const std::vector<uint8_t> blocks = RandomBlocks(tc.type, c.n_out, c.k, rng);
  p.packed = Pack(tc.type, blocks, c.n_out, c.k);
  const std::vector<float> w = Dequantize(tc.type, blocks);
  const std::vector<float> x = test::RandomFloats(c.n_tokens * c.k, -3.0f, 3.0f, rng);
  p.xq.resize(c.n_tokens * Q8ActRowBytes(c.k));
  (super ? QuantizeRowsQ8Super : QuantizeRowsQ8)(x.data(), c.n_tokens, c.k, p.xq.data());
  p.exact.assign(c.n_tokens * c.n_out, 0.0);
  p.bound.assign(c.n_tokens * c.n_out, 0.0);
  // In double, made once per token and per row: under qemu, double arithmetic is software, and
  // this reference is most of the test's time there.
  std::vector<double> xv(c.n_tokens * c.k);  // activations: exactly xs * q
  for (size_t t = 0; t < c.n_tokens; ++t) {
    const uint8_t* row = p.xq.data() + t * Q8ActRowBytes(c.k);
    const auto* xs = reinterpret_cast<const float*>(row + c.k);
    for (size_t e = 0; e < c.k; ++e) {
      xv[t * c.k + e] = double{xs[e / 32]} * static_cast<int8_t>(row[e]);
    }
  }
  const BlockLayout layout(tc.type, c.n_out, c.k);
  const BlockFormat& f = layout.format;
  std::vector<double> wv(c.k), weight_terms(c.k);
  for (size_t r = 0; r < c.n_out; ++r) {
    // Weights are exactly ggml's values. The kernel's terms are scale * q * x and min * x per
    // element, |scale * q| <= |w| + |min|: |w| + 2 |min| per element of the row. The record as
    // packed (PackingIsExactlyGgmlSizeAndRoundTrips checks it is ggml's): Q2_K's is two pieces
    // of the block.
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      float scale[16], min[16] = {};
      DecodeScales(tc.type, p.packed.data() + layout.RecordOffset(r, b), scale, min);
      for (size_t i = 0; i < f.block_elems; ++i) {
        const size_t e = b * f.block_elems + i;
        const double m = f.centered() ? 0.0 : std::fabs(min[i * f.scales / f.block_elems]);
        wv[e] = w[r * c.k + e];
        weight_terms[e] = std::fabs(wv[e]) + 2 * m;
      }
    }
    for (size_t t = 0; t < c.n_tokens; ++t) {
      const double* x_t = xv.data() + t * c.k;
      double exact = 0.0, magnitude = 0.0;
      for (size_t e = 0; e < c.k; ++e) {
        exact += wv[e] * x_t[e];
        magnitude += weight_terms[e] * std::fabs(x_t[e]);
      }
      p.exact[t * c.n_out + r] = exact;
      p.bound[t * c.n_out + r] = 4 * test::Gamma(c.k / 32 + 8) * magnitude + 1e-30;
    }
  }
  return p;
}

// Activations with a scale per 32 (QuantizeRowsQ8) and per super-block of 256
// (QuantizeRowsQ8Super, which the K-quants' token panels sum in integers): the same reference.
TEST(OpsMatMulBlocks, MatchesExactReferenceForEveryKeptType) {
  std::mt19937 rng(21);
  for (const TypeCase& tc : Types()) {
    for (const bool super : {false, true}) {
      SCOPED_TRACE(std::string(tc.name) + (super ? " (a scale per 256)" : " (a scale per 32)"));
      std::vector<PreparedCase> prepared;
      for (const test::QuantMatMulCase& c : Cases(tc.type)) {
        if (!super || c.k % 256 == 0) prepared.push_back(Prepare(tc, super, c, rng));
      }
      ForEachTarget([&](const char* target) {
        // Both sets of AVX3_DL decode tiles, whichever this CPU would take (CpuSplits512BitOps).
        const bool both = strcmp(target, "AVX3_DL") == 0;
        for (const bool split : {false, true}) {
          if (split && !both) continue;
          SCOPED_TRACE(split ? "512-bit operations split" : "512-bit operations whole");
          OverrideCpuSplits512BitOps(split);
          for (const PreparedCase& p : prepared) {
            const test::QuantMatMulCase& c = p.c;
            std::vector<float> y(c.n_tokens * c.n_out, kSentinel);
            tc.matmul(p.packed.data(), p.xq.data(), y.data(), c.n_tokens, c.k, c.n_out, c.row_begin,
                      c.row_end);
            test::ExpectQuantMatMulMatches(c, y, p.exact, p.bound);
          }
        }
        OverrideCpuSplits512BitOps(std::nullopt);
      });
    }
  }
}

TEST(OpsEmbedBlocks, RowsAreGgmlValuesScaled) {
  std::mt19937 rng(8);
  for (const TypeCase& tc : Types()) {
    SCOPED_TRACE(tc.name);
    const size_t vocab = 11, dim = 2 * GgmlBlockElems(tc.type);
    const std::vector<uint8_t> blocks = RandomBlocks(tc.type, vocab, dim, rng);
    const std::vector<uint8_t> packed = Pack(tc.type, blocks, vocab, dim);
    const std::vector<float> w = Dequantize(tc.type, blocks);
    const std::vector<int32_t> tokens = {0, 10, 5, 5, 3};
    std::vector<float> out(tokens.size() * dim, kSentinel);
    tc.embed(packed.data(), vocab, dim, tokens.data(), tokens.size(), 2.5f, out.data());
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (size_t i = 0; i < dim; ++i) {
        ASSERT_EQ(out[t * dim + i], w[tokens[t] * dim + i] * 2.5f) << "token " << t << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::ops
