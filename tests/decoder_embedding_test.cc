// Decoder embedding models from GGUF (<arch>.pooling_type: Qwen3-Embedding's last-token pooling,
// and mean and cls): tiny random models of tests/py/make_tiny_llama.py --pooling, converted to
// an "encode" plan, embed batches of texts through the Encoder API as the float64 NumPy oracle
// of Hugging Face's definition does (tests/py/decoder_embedding_oracle.py: each text alone,
// causal unless the file says otherwise, pooled and L2-normalized). Texts of 1 to 200 tokens share
// one step, so each text's positions restart at 0 and its attention stays within it; the longest
// span several blocks of keys and query chunks. Also: the tokenizer appends Qwen3-Embedding's
// <|endoftext|>, `kestrel embed` takes the file, and a reranker's pooling is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

struct Variant {
  const char* stem;
  const char* make_args;  // tests/py/make_tiny_llama.py's
  double min_cosine;      // against the oracle, every text
};
// f32 weights within the bar of sentence encoders (cosine >= 0.99999); the file's own mix of
// quantized types (--weights keep: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16) quantizes the
// activations to int8 too (measured 0.99988).
const Variant kVariants[] = {
    {"qwen3-embedding", "--arch qwen3 --pooling last --head-dim 32 --f32", 0.99999},
    {"qwen2-mean-bidirectional", "--arch qwen2 --pooling mean --non-causal --f32", 0.99999},
    {"llama-cls", "--arch llama --pooling cls --f32", 0.99999},
    {"qwen3-embedding-mixed", "--arch qwen3 --pooling last --head-dim 32 --seed 5", 0.999},
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.stem; }

// Makes the variant's GGUF and its --weights keep conversion; "" or what failed.
std::string MakeModel(const Variant& v, std::string* gguf, std::string* kes) {
  *gguf = test::ScratchPath(std::string(v.stem) + ".gguf");
  *kes = test::ScratchPath(std::string(v.stem) + ".kes");
  const std::string made =
      test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                           "/tests/py/make_tiny_llama.py " + *gguf + " " + v.make_args);
  if (!made.empty()) return made;
  const ProcessResult r = test::Convert({*gguf, *kes, "--weights", "keep"});
  return r.exited && r.exit_code == 0 ? "" : "kestrel-convert failed: " + Describe(r);
}

// Texts of token ids (below the tiny vocabulary's 579) of lengths 1 to 200 in one step.
std::vector<std::vector<int32_t>> Texts() {
  std::vector<std::vector<int32_t>> texts;
  for (size_t len : {200, 1, 130, 17, 64, 65, 33}) {
    std::vector<int32_t> ids;
    for (size_t t = 0; t < len; ++t) ids.push_back(static_cast<int32_t>((len * 37 + t * 11) % 500));
    texts.push_back(ids);
  }
  return texts;
}

// The oracle's embeddings of `texts`: [texts, d_model]; "" or what failed.
std::string OracleEmbeddings(const std::string& gguf,
                             const std::vector<std::vector<int32_t>>& texts,
                             std::vector<float>* out) {
  std::vector<int32_t> flat;
  for (const auto& ids : texts) {
    flat.push_back(static_cast<int32_t>(ids.size()));
    flat.insert(flat.end(), ids.begin(), ids.end());
  }
  const std::string in = test::ScratchPath("decoder-embedding-texts.i32");
  const std::string result = test::ScratchPath("decoder-embedding-oracle.f32");
  if (!test::WriteRaw(in, flat)) return "cannot write " + in;
  const std::string ran =
      test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                           "/tests/py/decoder_embedding_oracle.py --gguf " + gguf +
                           " --sequences " + in + " --out " + result);
  if (!ran.empty()) return ran;
  *out = test::ReadRaw<float>(result);
  std::remove(in.c_str());
  std::remove(result.c_str());
  return "";
}

class DecoderEmbedding : public ::testing::TestWithParam<Variant> {};

TEST_P(DecoderEmbedding, MatchesTheNumPyOracle) {
  std::string gguf, kes;
  ASSERT_EQ(MakeModel(GetParam(), &gguf, &kes), "");
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes, &model).ok());
  ASSERT_TRUE(model->is_encoder());
  const std::vector<std::vector<int32_t>> texts = Texts();
  std::vector<float> want;
  ASSERT_EQ(OracleEmbeddings(gguf, texts, &want), "");
  const size_t dim = model->hparams().d_model();
  ASSERT_EQ(want.size(), texts.size() * dim);

  std::vector<const int32_t*> ids;
  std::vector<size_t> lengths;
  for (const auto& t : texts) ids.push_back(t.data()), lengths.push_back(t.size());
  for (size_t threads : {1, 2}) {
    EncoderOptions options;
    options.n_threads = threads;
    std::unique_ptr<Encoder> encoder;
    ASSERT_TRUE(Encoder::Create(*model, options, &encoder).ok());
    ASSERT_EQ(encoder->embedding_dim(), dim);
    std::vector<float> got(texts.size() * dim);
    ASSERT_TRUE(encoder->Encode(ids.data(), lengths.data(), texts.size(), got.data()).ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      double dot = 0, norm_got = 0, norm_want = 0;
      for (size_t j = 0; j < dim; ++j) {
        dot += double{got[i * dim + j]} * want[i * dim + j];
        norm_got += double{got[i * dim + j]} * got[i * dim + j];
        norm_want += double{want[i * dim + j]} * want[i * dim + j];
      }
      EXPECT_NEAR(std::sqrt(norm_got), 1.0, 1e-5) << "text " << i;
      EXPECT_GE(dot / std::sqrt(norm_got * norm_want), GetParam().min_cosine)
          << "text " << i << " (" << lengths[i] << " tokens), " << threads << " threads";
    }
  }
  std::remove(gguf.c_str());
  std::remove(kes.c_str());
}

INSTANTIATE_TEST_SUITE_P(Pooling, DecoderEmbedding, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return test::ParamName(info.param.stem); });

// The first variant's model, made for each test and removed after it (also after a failure).
class DecoderEmbeddingCli : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(MakeModel(kVariants[0], &gguf_, &kes_), ""); }
  void TearDown() override {
    std::remove(gguf_.c_str());
    std::remove(kes_.c_str());
  }
  std::string gguf_, kes_;
};

// Qwen3-Embedding's tokenizer appends <|endoftext|> (add_eos_token), the token whose state is
// the embedding; `kestrel embed` runs the file and generation commands send the user there.
TEST_F(DecoderEmbeddingCli, EmbedsTextsWithTheEndOfTextToken) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes_, &model).ok());
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model, EncoderOptions(), &encoder).ok());
  std::vector<int32_t> ids;
  ASSERT_TRUE(encoder->Tokenize("the cat sat", &ids).ok());
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.back(), model->tokenizer().config().eos_id);
  EXPECT_EQ(model->tokenizer().Piece(ids.back()), "<|endoftext|>");

  const ProcessResult embed = test::Cli({"embed", kes_, "-p", "the cat sat", "-p", "a", "--json"});
  ASSERT_TRUE(embed.exited && embed.exit_code == 0) << Describe(embed);
  EXPECT_NE(embed.out.find("\"token_counts\": [" + std::to_string(ids.size()) + ", "),
            std::string::npos)
      << embed.out;
  const ProcessResult run = test::Cli({"run", kes_, "-p", "hi"});
  ASSERT_TRUE(run.exited && run.exit_code == 1) << Describe(run);
  EXPECT_NE(run.err.find("kestrel embed"), std::string::npos) << run.err;
  // `kestrel inspect` says what the encoder does: causal layers, the last token's state.
  const ProcessResult inspect = test::Cli({"inspect", kes_});
  ASSERT_TRUE(inspect.exited && inspect.exit_code == 0) << Describe(inspect);
  EXPECT_NE(inspect.out.find("(causal attention)"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("last token, L2-normalized"), std::string::npos) << inspect.out;
}

// --max-batch sets an embedder's texts per step as it does a BERT folder's; more texts than
// that take more steps and embed as in one.
TEST_F(DecoderEmbeddingCli, MaxBatchSetsTheTextsPerStep) {
  const std::string small = test::ScratchPath("qwen3-embedding-batch3.kes");
  const ProcessResult r = test::Convert({gguf_, small, "--weights", "keep", "--max-batch", "3"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> wide_model, small_model;
  ASSERT_TRUE(Model::Open(kes_, &wide_model).ok());
  ASSERT_TRUE(Model::Open(small, &small_model).ok());
  std::unique_ptr<Encoder> wide, narrow;
  ASSERT_TRUE(Encoder::Create(*wide_model, EncoderOptions(), &wide).ok());
  ASSERT_TRUE(Encoder::Create(*small_model, EncoderOptions(), &narrow).ok());
  EXPECT_EQ(wide->max_batch(), 32u);
  EXPECT_EQ(narrow->max_batch(), 3u);
  const std::vector<std::vector<int32_t>> texts = Texts();
  std::vector<const int32_t*> ids;
  std::vector<size_t> lengths;
  for (const auto& t : texts) {
    ids.push_back(t.data());
    lengths.push_back(t.size());
  }
  const size_t dim = wide->embedding_dim();
  std::vector<float> in_one(texts.size() * dim), in_steps(texts.size() * dim);
  ASSERT_TRUE(wide->Encode(ids.data(), lengths.data(), texts.size(), in_one.data()).ok());
  ASSERT_TRUE(narrow->Encode(ids.data(), lengths.data(), texts.size(), in_steps.data()).ok());
  for (size_t i = 0; i < in_one.size(); ++i) {
    ASSERT_NEAR(in_steps[i], in_one[i], 1e-5f) << "text " << i / dim;
  }
  std::remove(small.c_str());
}

// A reranker's pooling (rank: a classifier head) is refused by name, and so is a bidirectional
// model that has no pooling to embed with.
TEST_F(DecoderEmbeddingCli, RefusesRerankersAndBidirectionalGenerators) {
  const std::string edited = test::ScratchPath("qwen3-edited.gguf");
  const std::string out = test::ScratchPath("qwen3-edited.kes");
  const std::string edit = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                           "/tests/py/edit_gguf.py " + gguf_ + " " + edited;
  ASSERT_EQ(test::RunHostCommand(edit + " --set qwen3.pooling_type=u32:4"), "");
  ProcessResult r = test::Convert({edited, out});
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("qwen3.pooling_type is 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rerankers"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));

  ASSERT_EQ(test::RunHostCommand(edit + " --drop-key qwen3.pooling_type" +
                                 " --set qwen3.attention.causal=bool:false"),
            "");
  r = test::Convert({edited, out});
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("qwen3.attention.causal is false"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
  std::remove(edited.c_str());
}

}  // namespace
}  // namespace kestrel
