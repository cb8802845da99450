// Encoders end to end on tiny random-weight BERT checkpoints (tests/py/make_tiny_bert.py: 2
// layers, 4 heads of 8, Hugging Face names, a WordPiece tokenizer, sentence-transformers
// modules), RoBERTa and XLM-RoBERTa ones (byte-level BPE and SentencePiece Unigram tokenizers)
// and cross-encoders of each,
// converted by kestrel-convert from the checkpoint folder.
//
// Native builds compare `kestrel embed` with the float64 NumPy oracle (tests/py/
// bert_oracle.py through tests/py/compare_embeddings.py), for each pooling mode and weight type,
// from texts and from the oracle's token ids, and leave the checkpoint and the f32 embeddings of
// a fixed batch in test-tmp/reference/. Cross builds (aarch64, armv7 under qemu-user) convert the
// same checkpoint to the very same bytes and embed the batch within 1e-5 of the host. Both check
// the Encoder API: batches split into steps, thread counts, truncation and errors.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

// A tiny checkpoint: its make_tiny_bert.py flags and the stem of its files.
struct TinyBert {
  const char* stem;
  const char* flags;
};
const TinyBert kMeanNormalized = {"tiny-bert", ""};
const TinyBert kVariants[] = {
    kMeanNormalized,
    {"tiny-bert-cls", "--pooling cls --no-normalize --seed 11"},
    {"tiny-bert-max", "--pooling max --keep-accents --no-pooler --seed 12"},
    // XLM-RoBERTa (bge-m3's layout: CLS, normalized): positions from 2, one token type, the
    // SentencePiece Unigram tokenizer of tests/py/make_unigram_tokenizer.py.
    {"tiny-xlmr", "--arch xlm-roberta --pooling cls --seed 13"},
    // multilingual-e5's: mean pooling.
    {"tiny-xlmr-mean", "--arch xlm-roberta --seed 15"},
    // English RoBERTa (all-distilroberta-v1's layout): a byte-level BPE tokenizer.
    {"tiny-roberta", "--arch roberta --seed 17"}};

std::string MakeTinyBert(const TinyBert& bert, std::string* folder) {
  return test::MakeTinyBert(bert.stem, bert.flags, folder);
}

// Converts `folder` to a scratch .kes with the given extra flags; returns "" or what failed.
std::string ConvertTiny(const std::string& folder, const std::string& kes,
                        std::vector<std::string> flags) {
  flags.insert(flags.begin(), {folder, kes});
  const ProcessResult r = Convert(flags);
  return r.exited && r.exit_code == 0 ? "" : "kestrel-convert failed: " + Describe(r);
}

// A fixed batch of token-id sequences of lengths 1 to the model's limit, between [CLS] and [SEP].
std::vector<std::vector<int32_t>> Batch(const Model& model, size_t n) {
  const TokenizerConfig& tok = model.tokenizer().config();
  const size_t longest = model.hparams().context_length();
  std::vector<std::vector<int32_t>> batch;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = 1 + (i * 7 + 3) % longest;
    std::vector<int32_t> ids;
    for (size_t t = 0; t < len; ++t) {
      ids.push_back(static_cast<int32_t>((i * 131 + t * 17 + 5) % model.vocab_size()));
    }
    ids.front() = tok.bos_id;
    if (len > 1) ids.back() = tok.eos_id;
    batch.push_back(ids);
  }
  return batch;
}

// Embeds `batch` with `threads` threads; "" or what failed.
std::string Embed(const Model& model, const std::vector<std::vector<int32_t>>& batch,
                  size_t threads, std::vector<float>* out) {
  EncoderOptions options;
  options.n_threads = threads;
  std::unique_ptr<Encoder> encoder;
  Status s = Encoder::Create(model, options, &encoder);
  if (!s.ok()) return s.message();
  std::vector<const int32_t*> ids;
  std::vector<size_t> lengths;
  for (const auto& seq : batch) ids.push_back(seq.data()), lengths.push_back(seq.size());
  out->assign(batch.size() * encoder->embedding_dim(), 0.0f);
  s = encoder->Encode(ids.data(), lengths.data(), batch.size(), out->data());
  return s.ok() ? "" : s.message();
}

// Not vectorized: GCC 12 for aarch64 crashes (internal compiler error in vect_transform_reduction)
// vectorizing this max reduction once it is inlined.
__attribute__((optimize("no-tree-vectorize"))) double LargestDifference(
    const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double{a[i]} - b[i]);
    if (!(d <= worst)) worst = d;  // NaN counts as the largest
  }
  return worst;
}

std::string ReferencePath(const std::string& test_tmp, const std::string& name) {
  return test_tmp + "/reference/" + name;
}

constexpr size_t kBatch = 40;

#if !KESTREL_CROSS_BUILD

struct OracleCase {
  TinyBert bert;
  const char* weights;
  const char* min_cosine;
};

class TinyBertOracle : public ::testing::TestWithParam<OracleCase> {};

// f32 and f16 within the f32 bar; q8 and q4 quantize the activations too: measured
// minimums 0.99984 (q8) and 0.9498 (q4: 4-bit weights on 32-wide rows) over the 48 texts.
TEST_P(TinyBertOracle, EmbeddingsMatchTheNumPyOracle) {
  const OracleCase& c = GetParam();
  std::string folder;
  ASSERT_EQ(MakeTinyBert(c.bert, &folder), "");
  const std::string kes = ScratchPath(std::string(c.bert.stem) + "-" + c.weights + ".kes");
  ASSERT_EQ(ConvertTiny(folder, kes, {"--weights", c.weights}), "");
  for (const char* mode : {"", " --ids"}) {
    SCOPED_TRACE(*mode ? "from the oracle's token ids" : "from texts");
    EXPECT_EQ(RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                             "/tests/py/compare_embeddings.py --kestrel " + KESTREL_CLI_BIN +
                             " --model " + kes + " --checkpoint " + folder +
                             " --texts tiny --min-cosine " + c.min_cosine + mode),
              "");
  }
  std::remove(kes.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    PoolingAndWeights, TinyBertOracle,
    ::testing::Values(
        OracleCase{kMeanNormalized, "f32", "0.99999"},
        OracleCase{kMeanNormalized, "f16", "0.99999"}, OracleCase{kMeanNormalized, "q8", "0.999"},
        OracleCase{kMeanNormalized, "q4", "0.94"}, OracleCase{kVariants[1], "f32", "0.99999"},
        OracleCase{kVariants[2], "f32", "0.99999"}, OracleCase{kVariants[2], "q8", "0.999"},
        OracleCase{kVariants[3], "f32", "0.99999"}, OracleCase{kVariants[3], "q8", "0.999"},
        OracleCase{kVariants[4], "f32", "0.99999"}, OracleCase{kVariants[5], "f32", "0.99999"}),
    [](const auto& info) {
      return ParamName(std::string(info.param.bert.stem) + "_" + info.param.weights);
    });

// Cross-encoders (*ForSequenceClassification, one label): `kestrel rerank`'s logits against the
// oracle's, for queries short and long enough to cut the pair (tests/py/compare_embeddings.py
// --rerank); f32 within 1e-4 of a logit.
class TinyRerankerOracle : public ::testing::TestWithParam<TinyBert> {};

TEST_P(TinyRerankerOracle, LogitsMatchTheNumPyOracle) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert(GetParam(), &folder), "");
  const std::string kes = ScratchPath(std::string(GetParam().stem) + ".kes");
  ASSERT_EQ(ConvertTiny(folder, kes, {"--weights", "f32"}), "");
  EXPECT_EQ(RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                           "/tests/py/compare_embeddings.py --kestrel " + KESTREL_CLI_BIN +
                           " --model " + kes + " --checkpoint " + folder +
                           " --texts tiny --rerank --max-logit-error 1e-4"),
            "");
  // inspect says what it is; embed refuses it, naming the command that scores pairs.
  const ProcessResult inspect = Cli({"inspect", kes});
  EXPECT_NE(inspect.out.find("1 score per (query, document) pair"), std::string::npos)
      << inspect.out;
  const ProcessResult embed = Cli({"embed", kes, "-p", "a text"});
  EXPECT_TRUE(embed.exited && embed.exit_code == 1) << Describe(embed);
  EXPECT_NE(embed.err.find("use 'kestrel rerank'"), std::string::npos) << embed.err;
  std::remove(kes.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Heads, TinyRerankerOracle,
    ::testing::Values(TinyBert{"tiny-bert-reranker", "--reranker"},
                      TinyBert{"tiny-xlmr-reranker", "--arch xlm-roberta --reranker --seed 14"},
                      TinyBert{"tiny-roberta-reranker", "--arch roberta --reranker --seed 16"}),
    [](const auto& info) { return ParamName(info.param.stem); });

// A checkpoint split over three files by model.safetensors.index.json converts to the very same
// .kes as the single-file one (both folders share a base name, which the file records).
TEST(TinyBertSharded, ConvertsToTheSameBytesAsOneFile) {
  std::string single, sharded;
  ASSERT_EQ(MakeTinyBert(kMeanNormalized, &single), "");
  ASSERT_EQ(test::MakeTinyBert("sharded/tiny-bert", "--shards 3", &sharded), "");
  ASSERT_TRUE(Exists(sharded + "/model.safetensors.index.json"));
  ASSERT_FALSE(Exists(sharded + "/model.safetensors"));
  const std::string a = ScratchPath("tiny-bert-single.kes"), b = ScratchPath("tiny-bert-3.kes");
  ASSERT_EQ(ConvertTiny(single, a, {"--weights", "q8"}), "");
  ASSERT_EQ(ConvertTiny(sharded, b, {"--weights", "q8"}), "");
  EXPECT_TRUE(ReadBytes(a) == ReadBytes(b)) << "the sharded checkpoint converted differently";
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// The host's f32 conversion and embeddings of the fixed batch become the cross builds' reference.
TEST(TinyBertReference, WrittenForCrossBuilds) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert(kMeanNormalized, &folder), "");
  ::mkdir((std::string(KESTREL_TEST_TMP) + "/reference").c_str(), 0755);
  const std::string kes = ScratchPath("tiny-bert-ref.kes");
  ASSERT_EQ(ConvertTiny(folder, kes, {"--weights", "f32"}), "");
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes, &model);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<float> out;
  ASSERT_EQ(Embed(*model, Batch(*model, kBatch), 1, &out), "");
  const std::vector<uint8_t> bytes = ReadBytes(kes);
  ASSERT_TRUE(
      WriteBytes(ReferencePath(KESTREL_TEST_TMP, "tiny-bert.kes"), bytes.data(), bytes.size()));
  ASSERT_TRUE(WriteRaw(ReferencePath(KESTREL_TEST_TMP, "tiny-bert-embeddings.f32"), out));
  ASSERT_EQ(
      RunHostCommand("rm -rf '" + ReferencePath(KESTREL_TEST_TMP, "tiny-bert") + "' && cp -r '" +
                     folder + "' '" + ReferencePath(KESTREL_TEST_TMP, "tiny-bert") + "'"),
      "");
  std::remove(kes.c_str());
}

#else  // KESTREL_CROSS_BUILD

TEST(TinyBertCross, ConvertsToTheHostsBytesAndEmbedsAsTheHostDoes) {
  const std::string ref_kes = ReferencePath(KESTREL_HOST_TEST_TMP, "tiny-bert.kes");
  ASSERT_TRUE(Exists(ref_kes)) << ref_kes << " is missing: run the native tests first";
  const std::string kes = ScratchPath("tiny-bert-cross.kes");
  ASSERT_EQ(
      ConvertTiny(ReferencePath(KESTREL_HOST_TEST_TMP, "tiny-bert"), kes, {"--weights", "f32"}),
      "");
  EXPECT_TRUE(ReadBytes(kes) == ReadBytes(ref_kes)) << "this converter wrote other bytes";
  std::remove(kes.c_str());
  std::unique_ptr<Model> model;
  Status s = Model::Open(ref_kes, &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<float> host =
      ReadRaw<float>(ReferencePath(KESTREL_HOST_TEST_TMP, "tiny-bert-embeddings.f32"));
  for (size_t threads : {1, 2}) {
    std::vector<float> out;
    ASSERT_EQ(Embed(*model, Batch(*model, kBatch), threads, &out), "");
    const double worst = LargestDifference(out, host);
    std::printf("%zu thread(s): largest difference from the host's embeddings %.3g\n", threads,
                worst);
    EXPECT_LE(worst, 1e-5);
  }
}

#endif  // KESTREL_CROSS_BUILD

// The API on the f32 tiny model, converted here with at most 3 texts per step.
class TinyBertEncoder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string folder;
    error_ = MakeTinyBert(kMeanNormalized, &folder);
    if (!error_.empty()) return;
    kes_ = ScratchPath("tiny-bert-api.kes");
    error_ = ConvertTiny(folder, kes_, {"--weights", "f32", "--max-batch", "3"});
    if (!error_.empty()) return;
    Status s = Model::Open(kes_, &model_);
    if (!s.ok()) error_ = s.message();
  }
  static void TearDownTestSuite() {
    model_.reset();
    std::remove(kes_.c_str());
  }
  void SetUp() override { ASSERT_EQ(error_, ""); }

  static std::string error_, kes_;
  static std::unique_ptr<Model> model_;
};
std::string TinyBertEncoder::error_, TinyBertEncoder::kes_;
std::unique_ptr<Model> TinyBertEncoder::model_;

TEST_F(TinyBertEncoder, BatchesSplitIntoStepsGiveEachTextsOwnEmbedding) {
  const auto batch = Batch(*model_, 11);  // 4 steps of at most 3 texts
  std::vector<float> together;
  ASSERT_EQ(Embed(*model_, batch, 1, &together), "");
  const size_t dim = model_->hparams().d_model();
  for (size_t i = 0; i < batch.size(); ++i) {
    std::vector<float> alone;
    ASSERT_EQ(Embed(*model_, {batch[i]}, 1, &alone), "");
    const std::vector<float> row(together.begin() + i * dim, together.begin() + (i + 1) * dim);
    EXPECT_LE(LargestDifference(row, alone), 1e-6)
        << "text " << i << " of " << batch[i].size() << " tokens";
  }
}

// --step-tokens sizes a step (and the arena): raised to one longest text, capped at --max-batch
// of them; the default 512 is the cap here (32 texts of 48 tokens are 1536). Steps of one text
// give each text the embedding it gets in a full step.
TEST(TinyBertStepTokens, BoundTheStepBetweenOneTextAndTheBatch) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert(kMeanNormalized, &folder), "");
  struct Case {
    std::vector<std::string> flags;
    size_t step_tokens;  // in units of the longest text when below 512
  };
  std::unique_ptr<Model> models[3];
  const Case cases[3] = {{{}, 512}, {{"--step-tokens", "1"}, 1}, {{"--step-tokens", "65536"}, 32}};
  for (size_t i = 0; i < 3; ++i) {
    const std::string kes = ScratchPath("tiny-bert-step-" + std::to_string(i) + ".kes");
    std::vector<std::string> flags = {"--weights", "f32"};
    flags.insert(flags.end(), cases[i].flags.begin(), cases[i].flags.end());
    ASSERT_EQ(ConvertTiny(folder, kes, flags), "");
    ASSERT_TRUE(Model::Open(kes, &models[i]).ok());
    std::remove(kes.c_str());
    std::unique_ptr<Encoder> encoder;
    ASSERT_TRUE(Encoder::Create(*models[i], EncoderOptions{}, &encoder).ok());
    const size_t longest = encoder->max_sequence_tokens();
    ASSERT_LT(longest, 512u);
    EXPECT_EQ(encoder->max_step_tokens(),
              cases[i].step_tokens == 512 ? 512 : cases[i].step_tokens * longest)
        << "case " << i;
  }
  const auto batch = Batch(*models[0], 40);
  std::vector<float> expected;
  ASSERT_EQ(Embed(*models[2], batch, 1, &expected), "");
  for (size_t i = 0; i < 2; ++i) {
    std::vector<float> got;
    ASSERT_EQ(Embed(*models[i], batch, 1, &got), "");
    EXPECT_LE(LargestDifference(got, expected), 1e-6) << "case " << i;
  }
}

// Each layer's FFN GELU and two residual adds run in their matmuls' steps, and with quantized
// weights each LayerNorm's quantization of its output in the LayerNorm's step (BoundPlan::Bind;
// 2 per layer, the last layer's output going to the pooling instead of a matmul), and give the
// values the separate ops give, bit for bit, with float and quantized weights and 1 or 2
// threads.
TEST(TinyBertFusedEpilogues, SameEmbeddingsAsOneStepPerOp) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert(kMeanNormalized, &folder), "");
  for (const char* weights : {"f32", "q8"}) {
    SCOPED_TRACE(weights);
    const std::string kes = ScratchPath(std::string("tiny-bert-fused-") + weights + ".kes");
    ASSERT_EQ(ConvertTiny(folder, kes, {"--weights", weights}), "");
    std::unique_ptr<Model> model;
    ASSERT_TRUE(Model::Open(kes, &model).ok());
    std::remove(kes.c_str());
    const auto batch = Batch(*model, 9);
    std::vector<const int32_t*> ids;
    std::vector<size_t> lengths;
    for (const auto& seq : batch) ids.push_back(seq.data()), lengths.push_back(seq.size());
    const size_t plan_ops = model->FindPlan("encode")->ops()->size();
    for (size_t threads : {1, 2}) {
      std::vector<float> out[2];
      for (bool fuse : {false, true}) {
        EncoderOptions options;
        options.n_threads = threads;
        options.fuse_epilogues = fuse;
        std::unique_ptr<Encoder> encoder;
        ASSERT_TRUE(Encoder::Create(*model, options, &encoder).ok());
        const size_t layers = model->hparams().n_layers();
        const size_t fused = 3 * layers + (std::string(weights) == "q8" ? 2 * layers : 0);
        EXPECT_EQ(encoder->n_steps(), fuse ? plan_ops - fused : plan_ops);
        out[fuse].assign(batch.size() * encoder->embedding_dim(), 0.0f);
        ASSERT_TRUE(
            encoder->Encode(ids.data(), lengths.data(), batch.size(), out[fuse].data()).ok());
      }
      EXPECT_EQ(LargestDifference(out[0], out[1]), 0.0) << threads << " thread(s)";
    }
  }
}

TEST_F(TinyBertEncoder, ThreadCountsAgree) {
  const auto batch = Batch(*model_, 7);
  std::vector<float> one, two, three;
  ASSERT_EQ(Embed(*model_, batch, 1, &one), "");
  ASSERT_EQ(Embed(*model_, batch, 2, &two), "");
  ASSERT_EQ(Embed(*model_, batch, 3, &three), "");
  EXPECT_LE(LargestDifference(one, two), 1e-6);
  EXPECT_LE(LargestDifference(one, three), 1e-6);
}

TEST_F(TinyBertEncoder, TokenizeTruncatesTheWaySentenceTransformersDoes) {
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model_, EncoderOptions(), &encoder).ok());
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat. ";
  std::vector<int32_t> ids;
  ASSERT_TRUE(encoder->Tokenize(text, &ids).ok());
  const TokenizerConfig& tok = model_->tokenizer().config();
  ASSERT_EQ(ids.size(), encoder->max_sequence_tokens());
  EXPECT_EQ(ids.front(), tok.bos_id);
  EXPECT_EQ(ids.back(), tok.eos_id);
  std::vector<int32_t> pieces;
  ASSERT_TRUE(model_->tokenizer().Encode(text, false, true, &pieces).ok());
  EXPECT_TRUE(std::equal(ids.begin() + 1, ids.end() - 1, pieces.begin()))
      << "the first word pieces are kept";
  ASSERT_TRUE(encoder->Tokenize("", &ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{tok.bos_id, tok.eos_id}));
}

TEST_F(TinyBertEncoder, BadInputsAreErrorsAndWriteNothing) {
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model_, EncoderOptions(), &encoder).ok());
  const size_t dim = encoder->embedding_dim();
  const std::vector<int32_t> good = {2, 5, 3};
  const std::vector<int32_t> too_long(encoder->max_sequence_tokens() + 1, 5);
  const std::vector<int32_t> bad_id = {2, static_cast<int32_t>(model_->vocab_size()), 3};
  const std::vector<int32_t> negative = {2, -1, 3};
  struct Case {
    const std::vector<int32_t>* second;
    size_t second_length;
    const char* expected;
  };
  const Case cases[] = {{&too_long, too_long.size(), "tokens, expected 1.."},
                        {&good, 0, "has 0 tokens"},
                        {&bad_id, bad_id.size(), "token 1 is id"},
                        {&negative, negative.size(), "token 1 is id -1"}};
  for (const Case& c : cases) {
    const int32_t* ids[] = {good.data(), c.second->data()};
    const size_t lengths[] = {good.size(), c.second_length};
    std::vector<float> out(2 * dim, 1234.5f);
    Status s = encoder->Encode(ids, lengths, 2, out.data());
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("sequence 1"), std::string::npos) << s.message();
    for (float v : out) ASSERT_EQ(v, 1234.5f) << "an output was written before the error";
  }
  EXPECT_FALSE(encoder->Encode(nullptr, nullptr, 1, nullptr).ok());
}

TEST_F(TinyBertEncoder, EncoderAndDecoderModelsRefuseTheWrongApi) {
  std::unique_ptr<Session> session;
  Status s = Session::Create(*model_, SessionOptions(), &session);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("encoder model"), std::string::npos) << s.message();
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  std::unique_ptr<Model> decoder;
  ASSERT_TRUE(Model::Open(tiny.kes, &decoder).ok());
  std::unique_ptr<Encoder> encoder;
  s = Encoder::Create(*decoder, EncoderOptions(), &encoder);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no 'encode' plan"), std::string::npos) << s.message();
}

TEST_F(TinyBertEncoder, CliEmbedsTextsAndRefusesDecoderModels) {
  const ProcessResult r = Cli({"embed", kes_, "-p", "the cat", "-p", "a dog!", "--json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.out.find("\"embeddings\": ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"token_counts\": [4, 5]"), std::string::npos) << r.out;
  const ProcessResult none = Cli({"embed", kes_});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("give texts with -p"), std::string::npos) << none.err;
  const ProcessResult inspect = Cli({"inspect", kes_});
  ASSERT_TRUE(inspect.exited && inspect.exit_code == 0) << Describe(inspect);
  EXPECT_NE(inspect.out.find("bidirectional attention"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("mean over tokens, L2-normalized"), std::string::npos) << inspect.out;
  EXPECT_EQ(inspect.out.find("KV cache:"), std::string::npos) << inspect.out;
  const ProcessResult run = Cli({"run", kes_, "-p", "hello"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("encoder model"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace kestrel
