// The CTranslate2 reader on the real Whisper-tiny model.bin (scripts/fetch-model.sh whisper):
// the layout of Whisper-tiny (4 + 4 layers, width 384, 6 heads, fused projections), the
// scalars, the tied output projection, every value finite, and the encoder's stored positions
// equal to Whisper's sinusoid formula (an independent check that values are read correctly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "converters/ct2/ct2_file.h"

namespace kestrel::ct2 {
namespace {

const std::string kModelBin = std::string(KESTREL_WHISPER_CT2_DIR) + "/model.bin";

class WhisperCt2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Status s = File::Open(kModelBin, &file_);
    ASSERT_TRUE(s.ok()) << s.message() << " (fetch it with scripts/fetch-model.sh whisper)";
  }
  static void TearDownTestSuite() { file_.reset(); }

  void ExpectShape(const std::string& name, const std::vector<uint32_t>& shape) {
    SCOPED_TRACE(name);
    const Variable* v = file_->Find(name);
    ASSERT_NE(v, nullptr) << "missing";
    EXPECT_EQ(v->shape, shape);
    EXPECT_EQ(v->dtype, DType::F16);
  }
  int64_t Scalar(const std::string& name) {
    const Variable* v = file_->Find(name);
    int64_t value = -1;
    EXPECT_NE(v, nullptr) << name;
    if (v != nullptr) {
      const Status s = file_->ReadScalarInt(*v, &value);
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return value;
  }

  static std::unique_ptr<File> file_;
};
std::unique_ptr<File> WhisperCt2::file_;

TEST_F(WhisperCt2, HasWhisperTinysLayout) {
  ASSERT_NE(file_, nullptr);
  EXPECT_EQ(file_->binary_version(), 6u);
  EXPECT_EQ(file_->spec(), "WhisperSpec");
  EXPECT_EQ(file_->variables().size(), 148u);
  EXPECT_EQ(Scalar("encoder/num_heads"), 6);
  EXPECT_EQ(Scalar("decoder/num_heads"), 6);
  EXPECT_EQ(Scalar("decoder/pre_norm"), 1);
  const uint32_t d = 384, ff = 1536;
  ExpectShape("encoder/conv1/weight", {d, 80, 3});
  ExpectShape("encoder/conv2/weight", {d, d, 3});
  ExpectShape("encoder/position_encodings/encodings", {1500, d});
  ExpectShape("decoder/position_encodings/encodings", {448, d});
  ExpectShape("decoder/embeddings/weight", {51864, d});
  EXPECT_EQ(file_->Find("decoder/projection/weight"), file_->Find("decoder/embeddings/weight"));
  for (int i = 0; i < 4; ++i) {
    const std::string enc = "encoder/layer_" + std::to_string(i) + "/";
    ExpectShape(enc + "self_attention/linear_0/weight", {3 * d, d});  // q, k, v stacked
    ExpectShape(enc + "self_attention/linear_1/weight", {d, d});
    ExpectShape(enc + "ffn/linear_0/weight", {ff, d});
    ExpectShape(enc + "ffn/linear_1/weight", {d, ff});
    const std::string dec = "decoder/layer_" + std::to_string(i) + "/";
    ExpectShape(dec + "self_attention/linear_0/weight", {3 * d, d});
    ExpectShape(dec + "attention/linear_0/weight", {d, d});      // cross-attention query
    ExpectShape(dec + "attention/linear_1/weight", {2 * d, d});  // its keys and values
    ExpectShape(dec + "attention/linear_2/weight", {d, d});
    ExpectShape(dec + "ffn/linear_1/weight", {d, ff});
  }
}

TEST_F(WhisperCt2, EveryFloatIsFinite) {
  ASSERT_NE(file_, nullptr);
  std::vector<float> values;
  size_t checked = 0;
  for (const Variable& v : file_->variables()) {
    if (v.dtype != DType::F16) continue;
    const Status s = file_->ReadF32(v, &values);
    ASSERT_TRUE(s.ok()) << s.message();
    for (float x : values) ASSERT_TRUE(std::isfinite(x)) << v.name;
    checked += values.size();
  }
  EXPECT_GT(checked, size_t{37'000'000});  // Whisper-tiny: about 37.8 M parameters
}

// Whisper's encoder positions: sin(p * t_i) in channels [0, 192), cos in [192, 384), with
// t_i = exp(-i * ln(10000) / 191).
TEST_F(WhisperCt2, EncoderPositionsAreWhispersSinusoids) {
  ASSERT_NE(file_, nullptr);
  const Variable* v = file_->Find("encoder/position_encodings/encodings");
  ASSERT_NE(v, nullptr);
  std::vector<float> values;
  ASSERT_TRUE(file_->ReadF32(*v, &values).ok());
  const size_t half = 192;
  double worst = 0;
  for (size_t p = 0; p < 1500; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double t = std::exp(-static_cast<double>(i) * std::log(10000.0) / (half - 1));
      const double angle = static_cast<double>(p) * t;
      worst = std::max(worst, std::fabs(values[p * 384 + i] - std::sin(angle)));
      worst = std::max(worst, std::fabs(values[p * 384 + half + i] - std::cos(angle)));
    }
  }
  EXPECT_LT(worst, 1e-3) << "float16 rounding allows about 5e-4";
}

}  // namespace
}  // namespace kestrel::ct2
