// --weights keep on the real models as shipped (Gemma 3 270M Q4_K_M: Q8_0, Q5_0, Q4_K, Q6_K;
// SmolLM2-135M Q4_1: Q4_1, Q8_0): every tensor keeps its GGUF type, the runtime's embedding
// lookup of each matrix reads back exactly the values the converter's dequantizer gives for the
// GGUF tensor (which dequantize_test checks against gguf-py for every tensor of the Gemma
// file), and the .kes weights are no bigger than the GGUF's tensors.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converters/gguf/dequantize.h"
#include "converters/gguf/gguf_file.h"
#include "runtime/format.h"
#include "runtime/model.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

struct KeepCase {
  const char* name;  // <name>-keep.kes from the ctest fixture
  const char* gguf;
};

class KeepTest : public ::testing::TestWithParam<KeepCase> {};

TEST_P(KeepTest, EveryTensorKeepsItsTypeAndValues) {
  const KeepCase& c = GetParam();
  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(c.gguf, &file);
  ASSERT_TRUE(s.ok()) << s.message() << "\nrun scripts/fetch-model.sh";
  std::unique_ptr<Model> model;
  s = Model::Open(std::string(KESTREL_TEST_TMP) + "/" + c.name + "-keep.kes", &model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";

  uint64_t gguf_bytes = 0, kes_bytes = 0;
  for (const gguf::TensorInfo& t : file->tensors()) gguf_bytes += t.n_bytes;
  std::map<std::string, size_t> checked;
  const auto* tensors = model->meta().tensors();
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    const fb::Tensor* t = tensors->Get(id);
    const std::string name = t->name()->str();
    SCOPED_TRACE(name);
    const gguf::TensorInfo* info = file->FindTensor(name);
    ASSERT_NE(info, nullptr);
    kes_bytes += t->size();
    // The type's name in both files: ggml's "Q4_K" is Kestrel's "q4_k", "Q8_0" is "q8".
    std::string ggml_type = gguf::GgmlTypeName(info->type);
    for (char& ch : ggml_type) ch = static_cast<char>(std::tolower(ch));
    if (ggml_type == "q8_0" || ggml_type == "q4_0") ggml_type.resize(2);
    ASSERT_EQ(ggml_type, DTypeName(t->dtype()));

    const uint64_t row_len = info->ne[0], rows = info->n_elements / row_len;
    const test::LookupFn lookup = test::QuantizedLookup(t->dtype());
    if (lookup == nullptr) {  // f32 vectors: the same bytes
      ASSERT_EQ(t->dtype(), fb::DType::F32);
      ASSERT_EQ(0, std::memcmp(model->TensorData(id), info->data, t->size()));
      ++checked[ggml_type];
      continue;
    }
    constexpr uint64_t kRowsPerChunk = 4096;
    std::vector<float> expected(kRowsPerChunk * row_len), got(kRowsPerChunk * row_len);
    std::vector<int32_t> row_ids(kRowsPerChunk);
    for (uint64_t first = 0; first < rows; first += kRowsPerChunk) {
      const uint64_t n = std::min(kRowsPerChunk, rows - first);
      ASSERT_TRUE(gguf::DequantizeRows(*info, first, n, expected.data()).ok());
      for (uint64_t i = 0; i < n; ++i) row_ids[i] = static_cast<int32_t>(first + i);
      lookup(model->TensorData(id), rows, row_len, row_ids.data(), n, 1.0f, got.data());
      ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), n * row_len * sizeof(float)))
          << "rows " << first << ".." << first + n << " differ from the GGUF's values";
    }
    ++checked[ggml_type];
  }
  for (const auto& [type, count] : checked) {
    std::printf("[ keep     ] %s: %zu %s tensors read back exactly\n", c.name, count, type.c_str());
  }
  std::printf("[ keep     ] %s: .kes weights %llu bytes, GGUF tensors %llu bytes (%.3f%%)\n",
              c.name, static_cast<unsigned long long>(kes_bytes),
              static_cast<unsigned long long>(gguf_bytes),
              100.0 * (static_cast<double>(kes_bytes) / static_cast<double>(gguf_bytes) - 1.0));
  EXPECT_LE(kes_bytes, gguf_bytes) << "kept weights must not grow";
}

INSTANTIATE_TEST_SUITE_P(RealModels, KeepTest,
                         ::testing::Values(KeepCase{"gemma3-270m", KESTREL_MODEL_GGUF},
                                           KeepCase{"smollm2-135m", KESTREL_SMOLLM2_GGUF}),
                         [](const auto& info) { return test::ParamName(info.param.name); });

}  // namespace
}  // namespace kestrel
