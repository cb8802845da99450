// Gemma 3 270M with q8 and q4 weights against the same model with f32 weights (both converted
// from the real GGUF by the ctest fixture): how far quantization moves the next-token
// distribution, and that the quantized kernels give identical logits for any thread count.
//
// The bounds were set from measurements (printed by the test) with headroom: q8 measured mean
// KL 0.0038 nats and 96% top-1 agreement over 55 positions; q4 0.52 and 55%, because 4-bit
// blocks of this small model's weights (the tied 262144 x 640 embedding included) lose that
// much: llama.cpp's own Q4_0 of it is as far off (bench/compare_llama_cpp.py compares their
// perplexities). The kernels themselves are checked exactly in ops_matmul_quant_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

std::string TmpPath(const std::string& name) { return std::string(KESTREL_TEST_TMP) + "/" + name; }

struct Scored {
  std::vector<float> logits;  // [n, vocab]
  size_t vocab = 0;
};

void Score(const std::string& file, const std::vector<int32_t>* tokens, size_t threads,
           std::vector<int32_t>* tokens_out, Scored* out) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(TmpPath(file), &model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
  if (tokens == nullptr) {
    const std::string text =
        "The kestrel is a small falcon that hovers over fields, scanning the grass for voles. "
        "It was once common across Europe; farmers welcomed it because it kept mice away. "
        "def mean(xs):\n    return sum(xs) / len(xs)\n";
    ASSERT_TRUE(model->tokenizer().Encode(text, true, false, tokens_out).ok());
    tokens = tokens_out;
  }
  SessionOptions options;
  options.context_length = 512;
  options.n_threads = threads;
  options.kv.type = ops::KvType::kF32;  // the weights' error alone, as the bounds were measured
  std::unique_ptr<Session> session;
  s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  out->vocab = model->meta().hparams()->vocab_size();
  out->logits.resize(tokens->size() * out->vocab);
  s = session->Score(tokens->data(), tokens->size(), out->logits.data());
  ASSERT_TRUE(s.ok()) << s.message();
}

// KL(p || q) of the softmaxes of two logit rows, in nats.
double KlDivergence(const float* p_logits, const float* q_logits, size_t n) {
  const auto log_softmax = [n](const float* l, std::vector<double>* out) {
    const double max = *std::max_element(l, l + n);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += std::exp(l[i] - max);
    const double log_sum = std::log(sum) + max;
    out->resize(n);
    for (size_t i = 0; i < n; ++i) (*out)[i] = l[i] - log_sum;
  };
  std::vector<double> lp, lq;
  log_softmax(p_logits, &lp);
  log_softmax(q_logits, &lq);
  double kl = 0.0;
  for (size_t i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

struct QuantCase {
  const char* file;
  double max_mean_kl, min_top1_agreement;
};

class QuantizedModelTest : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantizedModelTest, StaysCloseToF32AndIsThreadCountInvariant) {
  const QuantCase& c = GetParam();
  std::vector<int32_t> tokens;
  Scored reference, one, two;
  ASSERT_NO_FATAL_FAILURE(Score("gemma3-270m-f32.kes", nullptr, 1, &tokens, &reference));
  ASSERT_NO_FATAL_FAILURE(Score(c.file, &tokens, 1, nullptr, &one));
  ASSERT_NO_FATAL_FAILURE(Score(c.file, &tokens, 2, nullptr, &two));
  const size_t n = tokens.size(), vocab = reference.vocab;
  ASSERT_GE(n, 40u);

  EXPECT_EQ(0, std::memcmp(one.logits.data(), two.logits.data(), one.logits.size() * 4))
      << c.file << ": logits differ between 1 and 2 threads";

  double kl_sum = 0.0, kl_max = 0.0;
  size_t agree = 0;
  for (size_t t = 0; t < n; ++t) {
    const float* r = reference.logits.data() + t * vocab;
    const float* q = one.logits.data() + t * vocab;
    const double kl = KlDivergence(r, q, vocab);
    kl_sum += kl;
    kl_max = std::max(kl_max, kl);
    agree += std::max_element(r, r + vocab) - r == std::max_element(q, q + vocab) - q;
  }
  const double mean_kl = kl_sum / n, agreement = static_cast<double>(agree) / n;
  std::printf(
      "[ quantized] %s vs f32 over %zu positions: mean KL %.5f (max %.5f) nats, top-1 "
      "agreement %.3f\n",
      c.file, n, mean_kl, kl_max, agreement);
  EXPECT_LE(mean_kl, c.max_mean_kl) << c.file;
  EXPECT_GE(agreement, c.min_top1_agreement) << c.file;
}

INSTANTIATE_TEST_SUITE_P(Weights, QuantizedModelTest,
                         // keep: the file's own Q4_K_M weights, which the f32 conversion holds
                         // dequantized; only the activations' int8 rounding differs.
                         ::testing::Values(QuantCase{"gemma3-270m-keep.kes", 0.01, 0.9},
                                           QuantCase{"gemma3-270m-q8.kes", 0.01, 0.9},
                                           QuantCase{"gemma3-270m-q4.kes", 0.8, 0.4}),
                         [](const auto& info) {
                           const std::string file = info.param.file;  // gemma3-270m-<name>.kes
                           const size_t dash = file.rfind('-');
                           return file.substr(dash + 1, file.size() - dash - 5);
                         });

}  // namespace
}  // namespace kestrel
