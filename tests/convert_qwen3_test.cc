// Qwen3 (GGUF architecture qwen3) against llama.cpp itself: a tiny random Qwen3
// (tests/py/make_tiny_llama.py --arch qwen3: QK-norm, no biases, tied head, 4 heads of 32 on a
// d_model of 64, so n_heads * head_dim != d_model), converted with --weights f32, scores 300
// tokens of a fixed text; llama.cpp's logits for the same file and tokens are the fixture
// tests/data/qwen3_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py (CI cannot build llama.cpp). Mean KL(llama.cpp || Kestrel)
// must stay below 1e-5 nats and the top token must agree at every position. Also: Kestrel's
// tokenizer gives llama.cpp's ids for the text, and a qwen3 file without its QK-norm weights is
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

const char kFixture[] = KESTREL_SOURCE_DIR "/tests/data/qwen3_tiny_llama_cpp_logits.bin";
constexpr char kRecord[] = "tests/py/record_llama_cpp_logits.py";

// The fixture's layout: see tests/py/record_llama_cpp_logits.py.
struct Fixture {
  std::string make_args, text, provenance;
  uint64_t gguf_hash = 0;
  uint32_t text_tokens = 0, n_tokens = 0, vocab = 0;
  std::vector<int32_t> tokens, top;
  std::vector<double> logits;  // [n_tokens][vocab]
};

class Reader {
 public:
  explicit Reader(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  bool Take(void* out, size_t n) {
    if (bytes_.size() - at_ < n) return false;
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool String(std::string* out) {
    uint32_t n = 0;
    if (!Take(&n, sizeof(n)) || bytes_.size() - at_ < n) return false;
    out->assign(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return true;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

// "" or what is wrong with the file.
std::string ReadFixture(const std::string& path, Fixture* f) {
  Reader r(test::ReadBytes(path));
  char magic[8];
  std::string gguf_name;
  if (!r.Take(magic, sizeof(magic)) || std::memcmp(magic, "KESLGT1", 8) != 0) {
    return path + ": not a logits fixture (magic KESLGT1)";
  }
  if (!r.String(&f->make_args) || !r.String(&f->text) || !r.String(&f->provenance) ||
      !r.String(&gguf_name) || !r.Take(&f->gguf_hash, 8) || !r.Take(&f->text_tokens, 4) ||
      !r.Take(&f->n_tokens, 4) || !r.Take(&f->vocab, 4)) {
    return path + ": truncated header";
  }
  f->tokens.resize(f->n_tokens);
  f->top.resize(f->n_tokens);
  if (!r.Take(f->tokens.data(), 4 * f->n_tokens) || !r.Take(f->top.data(), 4 * f->n_tokens)) {
    return path + ": truncated tokens";
  }
  f->logits.resize(size_t{f->n_tokens} * f->vocab);
  std::vector<uint16_t> q(f->vocab);
  for (uint32_t t = 0; t < f->n_tokens; ++t) {
    float lo = 0, step = 0;
    if (!r.Take(&lo, 4) || !r.Take(&step, 4) || !r.Take(q.data(), 2 * q.size())) {
      return path + ": truncated at row " + std::to_string(t);
    }
    for (uint32_t v = 0; v < f->vocab; ++v) f->logits[size_t{t} * f->vocab + v] = lo + step * q[v];
  }
  return r.AtEnd() ? "" : path + ": bytes after the last row";
}

uint64_t Fnv1a64(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

void LogSoftmax(const double* logits, size_t n, std::vector<double>* out) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(logits[i] - max);
  const double log_z = max + std::log(sum);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) (*out)[i] = logits[i] - log_z;
}

class Qwen3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    error_ = ReadFixture(kFixture, &fixture_);
    if (!error_.empty()) return;
    gguf_ = test::ScratchPath("qwen3.gguf");
    error_ = test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                  "/tests/py/make_tiny_llama.py " + gguf_ + " " +
                                  fixture_.make_args);
  }
  static void TearDownTestSuite() { std::remove(gguf_.c_str()); }

  static std::string error_, gguf_;
  static Fixture fixture_;
};
std::string Qwen3Test::error_, Qwen3Test::gguf_;
Fixture Qwen3Test::fixture_;

TEST_F(Qwen3Test, LogitsMatchLlamaCpp) {
  ASSERT_EQ(error_, "");
  const Fixture& f = fixture_;
  ASSERT_EQ(Fnv1a64(test::ReadBytes(gguf_)), f.gguf_hash)
      << "make_tiny_llama.py " << f.make_args << " no longer writes the GGUF the fixture was "
      << "recorded from; record it again with " << kRecord;
  const std::string kes = test::ScratchPath("qwen3.kes");
  const ProcessResult r = test::Convert({gguf_, kes, "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> model;
  const Status opened = Model::Open(kes, &model);
  std::remove(kes.c_str());
  ASSERT_TRUE(opened.ok()) << opened.message();
  ASSERT_EQ(model->vocab_size(), f.vocab);
  // The heads do not split d_model: Q is [64 -> 4 * 32], attn_output [4 * 32 -> 64].
  EXPECT_EQ(model->hparams().d_model(), 64u);
  EXPECT_EQ(model->hparams().n_heads(), 4u);
  EXPECT_EQ(model->hparams().head_dim(), 32u);

  // Same ids as llama.cpp's tokenizer (qwen2 pre-tokenizer, ChatML control tokens parsed).
  std::vector<int32_t> ids;
  ASSERT_TRUE(model->tokenizer().Encode(f.text, false, true, &ids).ok());
  ASSERT_EQ(ids.size(), f.text_tokens);
  ids.resize(f.n_tokens);
  ASSERT_EQ(ids, f.tokens);

  std::vector<float> ours;
  ASSERT_EQ(test::ScoreAll(*model, f.tokens, 2, 512, &ours), "");
  double kl_sum = 0, kl_max = 0, logit_diff_max = 0;
  int top_differ = 0;
  std::vector<double> row(f.vocab), log_p, log_q;
  for (uint32_t t = 0; t < f.n_tokens; ++t) {
    const double* base = &f.logits[size_t{t} * f.vocab];
    const float* mine = &ours[size_t{t} * f.vocab];
    for (uint32_t v = 0; v < f.vocab; ++v) {
      row[v] = mine[v];
      logit_diff_max = std::max(logit_diff_max, std::fabs(row[v] - base[v]));
    }
    LogSoftmax(base, f.vocab, &log_p);
    LogSoftmax(row.data(), f.vocab, &log_q);
    double kl = 0;
    for (uint32_t v = 0; v < f.vocab; ++v) kl += std::exp(log_p[v]) * (log_p[v] - log_q[v]);
    kl_sum += kl;
    kl_max = std::max(kl_max, kl);
    const int32_t top = static_cast<int32_t>(std::max_element(mine, mine + f.vocab) - mine);
    if (top != f.top[t] && ++top_differ <= 5) {  // the first few; the count is below
      ADD_FAILURE() << "position " << t << ": top token " << top << ", llama.cpp's " << f.top[t];
    }
  }
  const double kl_mean = kl_sum / f.n_tokens;
  std::printf("qwen3 vs llama.cpp (%s): %u positions, mean KL %.3g, max KL %.3g, "
              "max |logit diff| %.3g, top token differs at %d\n",
              f.provenance.c_str(), f.n_tokens, kl_mean, kl_max, logit_diff_max, top_differ);
  EXPECT_LT(kl_mean, 1e-5);
  EXPECT_EQ(top_differ, 0);
}

// Without its QK-norm weights a qwen3 file is refused, naming the tensor (not converted as a
// Qwen2 without biases).
TEST_F(Qwen3Test, RefusesMissingQkNorm) {
  ASSERT_EQ(error_, "");
  const std::string edited = test::ScratchPath("qwen3-no-k-norm.gguf");
  const std::string out = test::ScratchPath("qwen3-no-k-norm.kes");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/edit_gguf.py " + gguf_ + " " + edited +
                                 " --drop-tensor blk.2.attn_k_norm.weight"),
            "");
  const ProcessResult r = test::Convert({edited, out});
  std::remove(edited.c_str());
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("blk.2.attn_k_norm.weight"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
}

// An unknown architecture is still refused by name, and the list of supported ones has qwen3.
TEST_F(Qwen3Test, UnknownArchitectureListsQwen3) {
  ASSERT_EQ(error_, "");
  const std::string edited = test::ScratchPath("qwen3-as-mamba.gguf");
  const std::string out = test::ScratchPath("qwen3-as-mamba.kes");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/edit_gguf.py " + gguf_ + " " + edited +
                                 " --set general.architecture=str:mamba"),
            "");
  const ProcessResult r = test::Convert({edited, out});
  std::remove(edited.c_str());
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("unsupported architecture 'mamba'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemma3, llama, qwen2, qwen3"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
}

}  // namespace
}  // namespace kestrel
