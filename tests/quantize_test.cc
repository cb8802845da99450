// The converter's Q8_0/Q4_0 quantizers against gguf-py's gguf.quants.quantize (ggml's reference
// quantizers), bit for bit; and q8/q4 import of a GGUF: tensors that already are Q8_0/Q4_0 move
// losslessly, the others are quantized by those quantizers.
#include "converters/quantize.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converters/gguf/dequantize.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "ops/embed.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::RunHostCommand;
using test::ScratchPath;

// gguf-py's blocks for `values`, or a failure message in *error.
std::vector<uint8_t> OracleQuantize(const char* type, const std::vector<float>& values,
                                    std::string* error) {
  const std::string in = ScratchPath("quantize-in.f32"), out = ScratchPath("quantize-out.bin");
  if (!test::WriteRaw(in, values)) {
    *error = "cannot write " + in;
    return {};
  }
  *error =
      RunHostCommand(std::string("'") + KESTREL_PYTHON + "' '" + KESTREL_SOURCE_DIR +
                     "/tests/py/dequant_ref.py' quantize " + type + " '" + in + "' '" + out + "'");
  std::vector<uint8_t> blocks = test::ReadBytes(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  return blocks;
}

// Blocks of 32 that exercise every branch of the quantizers: random scales over many decades,
// zeros, constant blocks, a negative extreme, exact .5 ties of x / scale, subnormals, repeated
// maxima of both signs.
std::vector<float> TrickyValues() {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v;
  const auto block = [&](auto fill) {
    for (int i = 0; i < 32; ++i) v.push_back(fill(i));
  };
  for (int decade = -30; decade <= 30; decade += 3) {
    for (int b = 0; b < 4; ++b) block([&](int) { return normal(rng) * std::pow(10.0f, decade); });
  }
  block([](int) { return 0.0f; });
  block([](int) { return 0.75f; });
  block([](int) { return -0.75f; });
  block([](int i) { return i == 5 ? -8.0f : static_cast<float>(i % 7) - 3.0f; });
  block([](int i) { return i == 0 ? 127.0f : static_cast<float>(i) - 15.5f; });  // Q8 ties
  block([](int i) { return i == 0 ? -8.0f : static_cast<float>(i % 16) * 0.5f - 4.0f; });  // Q4
  block([](int i) { return (i % 2 ? 1.0f : -1.0f) * 1e-41f * static_cast<float>(i + 1); });
  block([](int i) { return i % 3 == 0 ? 2.0f : (i % 3 == 1 ? -2.0f : 0.1f * i); });
  block([](int i) { return 60000.0f * std::sin(static_cast<float>(i)); });
  return v;
}

void ExpectSameBlocks(const char* type, const std::vector<uint8_t>& ours,
                      const std::vector<uint8_t>& reference, size_t block_bytes) {
  ASSERT_EQ(ours.size(), reference.size()) << type;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i] != reference[i]) {
      FAIL() << type << ": first difference in block " << i / block_bytes << " at byte "
             << i % block_bytes << ": ours " << int{ours[i]} << ", gguf-py " << int{reference[i]};
    }
  }
}

void CheckQuantizer(const char* type, void (*quantize)(const float*, size_t, std::vector<uint8_t>*),
                    size_t block_bytes) {
  const std::vector<float> values = TrickyValues();
  std::string error;
  const std::vector<uint8_t> reference = OracleQuantize(type, values, &error);
  ASSERT_EQ(error, "");
  std::vector<uint8_t> ours;
  quantize(values.data(), values.size(), &ours);
  ExpectSameBlocks(type, ours, reference, block_bytes);
}

TEST(QuantizeTest, Q8_0MatchesGgufPyBitForBit) {
  CheckQuantizer("Q8_0", QuantizeQ8_0, kGgmlQ8BlockBytes);
}
TEST(QuantizeTest, Q4_0MatchesGgufPyBitForBit) {
  CheckQuantizer("Q4_0", QuantizeQ4_0, kGgmlQ4BlockBytes);
}

TEST(QuantizeTest, PackRejectsRowsOfPartialBlocks) {
  std::vector<uint8_t> packed;
  const std::vector<uint8_t> blocks(kGgmlQ8BlockBytes * 4);
  const Status s = PackGgmlBlocks(fb::DType::Q8_0, blocks.data(), 2, 48, &packed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("48 elements"), std::string::npos) << s.message();
  EXPECT_FALSE(PackGgmlBlocks(fb::DType::F16, blocks.data(), 1, 32, &packed).ok());
}

// Every row of an imported q8/q4 tensor, dequantized by the runtime's embedding lookup.
std::vector<float> DequantizeImported(const KesModel& m, uint32_t id) {
  const fb::TensorT& t = *m.meta.tensors[id];
  const size_t rows = t.shape[0], k = t.shape[1];
  std::vector<int32_t> all(rows);
  for (size_t r = 0; r < rows; ++r) all[r] = static_cast<int32_t>(r);
  std::vector<float> out(rows * k);
  (t.dtype == fb::DType::Q4_0 ? ops::EmbedQ4 : ops::EmbedQ8)(m.tensor_bytes[id].data(), rows, k,
                                                             all.data(), rows, 1.0f, out.data());
  return out;
}

std::vector<float> Dequantize(const std::vector<uint8_t>& blocks, gguf::GgmlType type, size_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(gguf::DequantizeRow(type, blocks.data(), n, out.data()).ok());
  return out;
}

// The tiny model mixes F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_1 and Q5_1 matrices: importing each
// as q8 and q4 covers both the lossless move and quantization from every source type.
TEST(QuantizeTest, ImportMovesMatchingBlocksAndQuantizesTheRest) {
  const std::string path = ScratchPath("quantize-tiny.gguf");
  ASSERT_EQ(test::MakeTinyGguf(path, 1), "");
  std::unique_ptr<gguf::File> file;
  ASSERT_TRUE(gguf::File::Open(path, &file).ok());
  int moved = 0, quantized = 0;
  for (const gguf::TensorInfo& info : file->tensors()) {
    if (info.ne.size() != 2) continue;
    for (fb::DType dtype : {fb::DType::Q8_0, fb::DType::Q4_0}) {
      const bool q4 = dtype == fb::DType::Q4_0;
      SCOPED_TRACE(info.name + (q4 ? " as q4" : " as q8"));
      KesModel m;
      uint32_t id = 0;
      const std::vector<uint64_t> shape = {info.ne[1], info.ne[0]};
      ASSERT_TRUE(ImportTensor(*file, info.name, dtype, shape, &m, &id).ok());
      const std::vector<float> got = DequantizeImported(m, id);
      const gguf::GgmlType target = q4 ? gguf::GgmlType::Q4_0 : gguf::GgmlType::Q8_0;
      std::vector<float> expected;
      if (info.type == target) {
        ++moved;  // the file's own values, untouched
        ASSERT_TRUE(gguf::DequantizeTensor(info, &expected).ok());
      } else {
        ++quantized;
        std::vector<float> source;
        ASSERT_TRUE(gguf::DequantizeTensor(info, &source).ok());
        std::vector<uint8_t> blocks;
        (q4 ? QuantizeQ4_0 : QuantizeQ8_0)(source.data(), source.size(), &blocks);
        expected = Dequantize(blocks, target, source.size());
      }
      ASSERT_EQ(got.size(), expected.size());
      ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)));
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_GT(quantized, 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kestrel
