// The converter's quantizers (converters/quantize.h, quantize_k.h) against ggml's own, bit for
// bit: ggml_quantize_chunk from llama.cpp's ggml-base, built by scripts/fetch-ggml-oracle.sh and
// called by tests/py/ggml_oracle.py (the tests fail, not skip, when it cannot be built). The
// 32-value types are also checked against gguf-py's gguf.quants.quantize.
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converters/quantize.h"
#include "ops/ggml_blocks.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using ops::GgmlBlockType;
using test::RunHostCommand;
using test::ScratchPath;

struct TypeCase {
  const char* name;  // ggml's
  GgmlBlockType type;
  bool gguf_py;  // gguf.quants.quantize implements it
};
// How ctest and gtest name a case (instead of its raw bytes).
void PrintTo(const TypeCase& c, std::ostream* os) { *os << c.name; }

// Blocks ggml quantizes with `script` ("ggml_oracle.py quantize TYPE N_PER_ROW" or
// "dequant_ref.py quantize TYPE") for `values`; *error says what failed.
std::vector<uint8_t> Oracle(const std::string& script, const std::vector<float>& values,
                            std::string* error) {
  const std::string in = ScratchPath("quantize-k-in.f32"), out = ScratchPath("quantize-k-out.bin");
  if (!test::WriteRaw(in, values)) {
    *error = "cannot write " + in;
    return {};
  }
  *error = RunHostCommand(std::string("'") + KESTREL_PYTHON + "' '" + KESTREL_SOURCE_DIR +
                          "/tests/py/" + script + " '" + in + "' '" + out + "'");
  std::vector<uint8_t> blocks = test::ReadBytes(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  return blocks;
}

// Whole blocks of `elems` values that reach every branch of the quantizers: random values at
// scales over many decades (also mixed within one block, so sub-block scales differ by orders of
// magnitude), zeros, constant blocks of either sign, one sub-block alone non-zero, exact ties of
// the rounding, grids the quantizers represent exactly, subnormals, values near f16's limit and
// beyond it, one outlier among small values, and sub-blocks of alternating sign.
std::vector<float> TrickyValues(size_t elems) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v;
  const auto block = [&](auto fill) {
    for (size_t i = 0; i < elems; ++i) v.push_back(fill(i));
  };
  for (int decade = -30; decade <= 30; decade += 4) {
    block([&](size_t) { return normal(rng) * std::pow(10.0f, static_cast<float>(decade)); });
  }
  for (int b = 0; b < 8; ++b) block([&](size_t) { return normal(rng); });
  for (int b = 0; b < 4; ++b) block([&](size_t) { return uniform(rng) + 0.5f; });  // mostly > 0
  block(
      [&](size_t i) { return normal(rng) * std::pow(10.0f, static_cast<float>(i / 16 % 9) - 4); });
  block([](size_t) { return 0.0f; });
  block([](size_t) { return 0.75f; });
  block([](size_t) { return -0.75f; });
  block([](size_t i) { return i / 32 == 3 ? 1.0f + static_cast<float>(i % 5) : 0.0f; });
  block([](size_t i) { return static_cast<float>(i % 7) - 3.0f; });
  block([](size_t i) { return static_cast<float>(i % 32) - 15.5f; });
  block([](size_t i) { return static_cast<float>(i % 16) * 0.5f - 4.0f; });
  block([](size_t i) { return static_cast<float>(i % 64) * 0.25f; });
  block([](size_t i) { return (i % 2 ? 1.0f : -1.0f) * 1e-41f * static_cast<float>(i % 32 + 1); });
  block([](size_t i) { return (i % 3 ? 1.0f : -1.0f) * 1e-39f * static_cast<float>(i % 13 + 1); });
  block([](size_t i) { return 60000.0f * std::sin(static_cast<float>(i)); });
  block([](size_t i) { return 1e6f * std::cos(static_cast<float>(i)); });
  block([](size_t i) { return i % 50 == 7 ? 40.0f : 0.01f * std::sin(static_cast<float>(i)); });
  block([](size_t i) { return (i / 16 % 2 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(i % 3)); });
  block([](size_t i) { return i % 3 == 0 ? 2.0f : (i % 3 == 1 ? -2.0f : 0.1f * i); });
  return v;
}

void ExpectSameBlocks(const std::string& what, const std::vector<uint8_t>& ours,
                      const std::vector<uint8_t>& reference, size_t block_bytes) {
  ASSERT_EQ(ours.size(), reference.size()) << what;
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i] != reference[i] && differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " bytes differ, the first in block "
                           << first / block_bytes << " at byte " << first % block_bytes << ": ours "
                           << int{ours[first]} << ", reference " << int{reference[first]};
}

class QuantizeKTest : public ::testing::TestWithParam<TypeCase> {};

// Rows of 640 values (Gemma 3's width: 2.5 super-blocks, so the K-quants get rows of 768) and
// of several super-blocks: ggml quantizes a whole tensor in one call, as the converter does.
TEST_P(QuantizeKTest, MatchesGgmlBitForBit) {
  const TypeCase& c = GetParam();
  const size_t elems = ops::GgmlBlockElems(c.type), bytes = ops::GgmlBlockBytes(c.type);
  const size_t row = elems == 256 ? 768 : 640;
  std::vector<float> values = TrickyValues(elems);
  values.resize((values.size() + row - 1) / row * row, 0.25f);
  std::vector<uint8_t> ours;
  QuantizeGgml(c.type, values.data(), values.size(), &ours);
  ASSERT_EQ(ours.size(), values.size() / elems * bytes);
  std::string error;
  const std::vector<uint8_t> ggml =
      Oracle(std::string("ggml_oracle.py' quantize ") + c.name + " " + std::to_string(row), values,
             &error);
  ASSERT_EQ(error, "");
  ExpectSameBlocks(std::string(c.name) + " vs ggml", ours, ggml, bytes);
  if (c.gguf_py) {
    const std::vector<uint8_t> py =
        Oracle(std::string("dequant_ref.py' quantize ") + c.name, values, &error);
    ASSERT_EQ(error, "");
    ExpectSameBlocks(std::string(c.name) + " vs gguf-py", ours, py, bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeKTest,
                         ::testing::Values(TypeCase{"Q8_0", GgmlBlockType::kQ8_0, true},
                                           TypeCase{"Q4_0", GgmlBlockType::kQ4_0, true},
                                           TypeCase{"Q4_1", GgmlBlockType::kQ4_1, true},
                                           TypeCase{"Q5_0", GgmlBlockType::kQ5_0, true},
                                           TypeCase{"Q5_1", GgmlBlockType::kQ5_1, true},
                                           TypeCase{"Q4_K", GgmlBlockType::kQ4_K, false},
                                           TypeCase{"Q5_K", GgmlBlockType::kQ5_K, false},
                                           TypeCase{"Q6_K", GgmlBlockType::kQ6_K, false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kestrel
