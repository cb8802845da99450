// SmoothQuant for q8/q4 encoders (converters/hf/smooth_quant.h): the smoothing scales, the
// calibrated conversion of a tiny BERT (factors where the plan quantizes activations, the same
// bytes whichever SIMD target calibrated it), the plan check of a factor, and calibration-file
// errors. Its accuracy is measured on all-MiniLM-L6-v2 (tests/minilm_embeddings_test.sh) and on
// the tiny BERTs (encoder_tiny_bert_test.cc), whose q8 and q4 conversions are smoothed by default.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "converters/hf/hf_import.h"
#include "converters/hf/smooth_quant.h"
#include "runtime/model.h"
#include "tests/ops_test_util.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

TEST(SmoothingScales, AreTheRootOfTheRatioOnAnEighthOctaveGrid) {
  // Two weights sharing the input: [2, 4] and [1, 4]; the column maxima are taken over both.
  const std::vector<float> a = {0.5f, -1.0f, 0.0f, 0.25f, -0.5f, 0.5f, 0.0f, 2.0f};
  const std::vector<float> b = {2.0f, 0.5f, 0.0f, 0.0f};
  const std::vector<float> x_max = {8.0f, 4.0f, 3.0f, 0.0f};
  const std::vector<float> s = SmoothingScales(x_max, {&a, &b});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], 2.0f);  // sqrt(8 / 2)
  EXPECT_EQ(s[1], 2.0f);  // sqrt(4 / 1)
  EXPECT_EQ(s[2], 1.0f);  // no weight in the column
  EXPECT_EQ(s[3], 1.0f);  // the input never nonzero
  // Between grid points: sqrt(3) = 2^0.79 rounds to 2^(6/8); 1 / sqrt(3) to 2^(-6/8).
  const std::vector<float> one = {1.0f};
  EXPECT_FLOAT_EQ(SmoothingScales({3.0f}, {&one})[0], std::pow(2.0f, 0.75f));
  EXPECT_FLOAT_EQ(SmoothingScales({1.0f / 3.0f}, {&one})[0], std::pow(2.0f, -0.75f));
  // Kept within 2^-13..2^13.
  EXPECT_EQ(SmoothingScales({1e30f}, {&one})[0], 8192.0f);
  EXPECT_EQ(SmoothingScales({1e-30f}, {&one})[0], 1.0f / 8192.0f);
}

// The tiny BERT's checkpoint folder: made by the host's Python, or, in a cross build, the copy
// the host's tests left in its test-tmp/reference.
std::string TinyBertFolder() {
#if KESTREL_CROSS_BUILD
  return std::string(KESTREL_HOST_TEST_TMP) + "/reference/tiny-bert";
#else
  std::string folder;
  const std::string error = test::MakeTinyBert("tiny-bert", "", &folder);
  return error.empty() ? folder : "";
#endif
}

Status Convert(const std::string& calibration, KesModel* model, std::vector<uint8_t>* bytes) {
  ConvertOptions options;
  options.weight_dtype = fb::DType::Q8_0;
  HfEncoderOptions encoder;
  encoder.calibration = calibration;
  const std::string folder = TinyBertFolder();
  KES_CHECK_OR_RETURN(!folder.empty(), "no tiny BERT checkpoint");
  KES_RETURN_IF_ERROR(ConvertHfCheckpoint(folder, options, encoder, model));
  KES_RETURN_IF_ERROR(PlanArena(&model->meta));
  return KesBytes(model, bytes);
}

// The QuantizeRows ops of the encode plan and how many carry a factor.
void CountQuantizeOps(const fb::ModelT& meta, size_t* ops, size_t* with_factor) {
  *ops = *with_factor = 0;
  for (const auto& op : meta.plans[0]->ops) {
    if (op->params.type != fb::OpParams::QuantizeRows) continue;
    ++*ops;
    if (!op->weights.empty()) ++*with_factor;
  }
}

TEST(SmoothQuantConversion, EveryQuantizedInputGetsAFactor) {
  KesModel model;
  std::vector<uint8_t> bytes;
  const Status s = Convert("", &model, &bytes);
  ASSERT_TRUE(s.ok()) << s.message();
  size_t ops, with_factor;
  CountQuantizeOps(model.meta, &ops, &with_factor);
  // Per layer: Q/K/V's shared input, the attention output's, FFN up's and down's.
  EXPECT_EQ(ops, 4u * model.meta.hparams->n_layers);
  EXPECT_EQ(with_factor, ops);
  size_t factors = 0;
  for (const auto& t : model.meta.tensors) {
    if (t->name.find("input_factor") == std::string::npos) continue;
    ++factors;
    EXPECT_EQ(t->dtype, fb::DType::F32) << t->name;
  }
  EXPECT_EQ(factors, ops);

  KesModel plain;
  std::vector<uint8_t> plain_bytes;
  ASSERT_TRUE(Convert("none", &plain, &plain_bytes).ok());
  CountQuantizeOps(plain.meta, &ops, &with_factor);
  EXPECT_EQ(ops, 4u * plain.meta.hparams->n_layers);
  EXPECT_EQ(with_factor, 0u) << "--calibration none still smoothed";

  // kestrel inspect says so.
  const std::string kes = test::ScratchPath("tiny-bert-smoothed.kes");
  const std::string n = std::to_string(ops);
  for (const auto& [file, expected] :
       {std::make_pair(&bytes, n + " inputs, " + n + " of them smoothed"),
        std::make_pair(&plain_bytes, n + " inputs, 0 of them smoothed")}) {
    ASSERT_TRUE(test::WriteBytes(kes, file->data(), file->size()));
    const test::ProcessResult inspect = test::Cli({"inspect", kes});
    ASSERT_TRUE(inspect.exited && inspect.exit_code == 0) << test::Describe(inspect);
    EXPECT_NE(inspect.out.find(expected), std::string::npos) << inspect.out;
  }
  std::remove(kes.c_str());
}

// The maxima come from this CPU's kernels; the scales' grid makes every target convert to the
// same bytes.
TEST(SmoothQuantConversion, EveryTargetCalibratesToTheSameBytes) {
  std::vector<std::vector<uint8_t>> outputs;
  ops::test::ForEachTarget([&](const char*) {
    KesModel model;
    outputs.emplace_back();
    const Status s = Convert("", &model, &outputs.back());
    ASSERT_TRUE(s.ok()) << s.message();
  });
  ASSERT_FALSE(outputs.empty());
  for (size_t i = 1; i < outputs.size(); ++i) {
    EXPECT_TRUE(outputs[i] == outputs[0]) << "target " << i << " converted differently";
  }
}

// A factor of the wrong length is refused when the model is opened, naming the tensor.
// Model::FromMemory on a copy of bytes at the alignment a mapped file has.
Status OpenCopy(const std::vector<uint8_t>& bytes) {
  void* aligned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  std::memcpy(aligned, bytes.data(), bytes.size());
  std::unique_ptr<Model> opened;
  const Status s = Model::FromMemory(static_cast<uint8_t*>(aligned), bytes.size(), &opened);
  opened.reset();
  std::free(aligned);
  return s;
}

TEST(SmoothQuantConversion, AFactorOfTheWrongLengthIsRefused) {
  KesModel model;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(Convert("", &model, &bytes).ok());
  uint32_t up_bias = UINT32_MAX;
  for (uint32_t i = 0; i < model.meta.tensors.size(); ++i) {
    if (model.meta.tensors[i]->name == "encoder.layer.0.intermediate.dense.bias") up_bias = i;
  }
  ASSERT_NE(up_bias, UINT32_MAX);
  for (auto& op : model.meta.plans[0]->ops) {
    if (op->params.type == fb::OpParams::QuantizeRows && !op->weights.empty()) {
      op->weights[0] = up_bias;
      break;
    }
  }
  ASSERT_TRUE(KesBytes(&model, &bytes).ok());
  const Status s = OpenCopy(bytes);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("channel factors 'encoder.layer.0.intermediate.dense.bias'"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("expected f32 ["), std::string::npos) << s.message();
}

// A QuantizeRows scale_block other than 32 and 256, or 256 where it cannot be (channel factors,
// rows not a multiple of 256), is a malformed file: refused when the model opens, saying why.
TEST(SmoothQuantConversion, AScaleBlockTheKernelsCannotTakeIsRefused) {
  for (const uint32_t block : {64u, 256u}) {
    KesModel model;
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(Convert("", &model, &bytes).ok());
    for (auto& op : model.meta.plans[0]->ops) {
      if (op->params.type == fb::OpParams::QuantizeRows && !op->weights.empty()) {
        op->params.AsQuantizeRows()->scale_block = block;
        break;
      }
    }
    ASSERT_TRUE(KesBytes(&model, &bytes).ok());
    const Status s = OpenCopy(bytes);
    EXPECT_FALSE(s.ok());
    const std::string expected = block == 64 ? "expected scale_block 32 or 256, found 64"
                                             : "scale_block 256 needs rows of a multiple of 256";
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
}

TEST(SmoothQuantConversion, BadCalibrationFilesAreClearErrors) {
  KesModel model;
  std::vector<uint8_t> bytes;
  Status s = Convert(test::TmpPath("no-such-calibration.txt"), &model, &bytes);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot open the file"), std::string::npos) << s.message();

  const std::string blank = test::ScratchPath("blank-calibration.txt");
  const std::string text = "\n  \n\t\n";
  ASSERT_TRUE(test::WriteBytes(blank, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  KesModel again;
  s = Convert(blank, &again, &bytes);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected one text per line, found no text"), std::string::npos)
      << s.message();
  std::remove(blank.c_str());
}

}  // namespace
}  // namespace kestrel
