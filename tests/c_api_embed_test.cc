// The C API's encoder (kes_encoder, kes_embed) on the tiny random-weight BERT of
// tests/py/make_tiny_bert.py: embeddings bit for bit equal to `kestrel embed --json` for a
// batch that takes several encoder steps and a text cut to the model's limit, from texts and
// from kes_encoder_tokenize's ids; caller arenas; the model kinds it refuses, and the one a
// session refuses; argument errors; kes_encoder_abort before a call and from another thread;
// and two encoders of one model on two threads (TSan-able). kes_rerank on the tiny BERT
// cross-encoder (make_tiny_bert.py --reranker): logits bit for bit equal to `kestrel rerank
// --json`'s, and each kind of encoder refusing the other's call.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kestrel/kestrel.h"
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

const std::string kTinyBertKes = test::ScratchPath("c-api-embed-tiny-bert.kes");
const std::string kTinyRerankerKes = test::ScratchPath("c-api-embed-tiny-reranker.kes");

// Removes the conversions when the tests are done.
class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::remove(kTinyBertKes.c_str());
    std::remove(kTinyRerankerKes.c_str());
  }
};
const auto* const kRemoveScratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

// The tiny BERT's .kes (mean pooling, normalized), converted once per process.
const std::string& TinyBertPath() {
  static const std::string path = [] {
    std::string folder;
    EXPECT_EQ(test::MakeTinyBert("tiny-bert", "", &folder), "");
    const std::string& kes = kTinyBertKes;
    const ProcessResult r = test::Convert({folder, kes});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    return kes;
  }();
  return path;
}

test::EncoderPtr Create(const kes_model* model, size_t threads, void* arena = nullptr,
                        size_t bytes = 0) {
  kes_encoder_params params = kes_encoder_default_params();
  params.n_threads = threads;
  kes_encoder* encoder = nullptr;
  EXPECT_EQ(kes_encoder_create(model, &params, arena, bytes, &encoder), KES_OK) << kes_last_error();
  return test::EncoderPtr(encoder);
}

size_t Dim(const kes_encoder* encoder) {
  kes_encoder_info info;
  info.struct_size = sizeof(info);
  EXPECT_EQ(kes_encoder_get_info(encoder, &info), KES_OK);
  return info.embedding_dim;
}

// 40 texts: more than a step's 32, of 2 to 48+ tokens (the longest cut to the model's 48), an
// empty one and one with a word the vocabulary lacks.
std::vector<std::string> Texts() {
  const char* words[] = {"the", "cat",     "sits", "and",    "the",  "dog",    "plays", "with",
                         "a",   "kestrel", "that", "hovers", "over", "fields", "of",    "grass."};
  std::vector<std::string> texts;
  for (size_t i = 0; i < 38; ++i) {
    std::string t;
    for (size_t w = 0; w < (i * 7) % 23 + 1; ++w) {
      t += std::string(w ? " " : "") + words[(i + w) % 16];
    }
    texts.push_back(t);
  }
  texts.push_back("");
  std::string longest;
  for (int i = 0; i < 60; ++i) longest += "Kestrels hover, zqxj ";
  texts.push_back(longest);
  return texts;
}

// `kestrel embed --json`'s embeddings (printed with %.9g, which gives each float back exactly)
// and token counts.
std::string CliEmbed(const std::vector<std::string>& texts, size_t threads,
                     std::vector<float>* values, std::vector<size_t>* counts) {
  std::vector<std::string> args = {"embed", TinyBertPath(), "--json", "--threads",
                                   std::to_string(threads)};
  for (const std::string& t : texts) args.insert(args.end(), {"-p", t});
  const ProcessResult r = test::Cli(args);
  if (!r.exited || r.exit_code != 0) return Describe(r);
  const size_t begin = r.out.find("\"embeddings\": [");
  const size_t split = r.out.find("\"token_counts\": [");
  if (begin == std::string::npos || split == std::string::npos) return "no JSON: " + r.out;
  auto numbers = [&](size_t from, size_t to, auto add) {
    for (const char* p = r.out.c_str() + from; p < r.out.c_str() + to;) {
      if (std::strchr("[], \n", *p) != nullptr) {
        ++p;
        continue;
      }
      char* end = nullptr;
      add(p, &end);
      if (end == p) return;
      p = end;
    }
  };
  numbers(begin + 15, split,
          [&](const char* p, char** end) { values->push_back(std::strtof(p, end)); });
  numbers(split + 17, r.out.size(),
          [&](const char* p, char** end) { counts->push_back(std::strtoul(p, end, 10)); });
  return "";
}

TEST(CApiEmbed, EqualsKestrelEmbedBitForBit) {
  test::ModelPtr model = test::Open(TinyBertPath());
  ASSERT_NE(model, nullptr);
  const std::vector<std::string> texts = Texts();
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  for (const std::string& t : texts) pointers.push_back(t.data()), lengths.push_back(t.size());

  for (size_t threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    std::vector<float> cli;
    std::vector<size_t> counts;
    ASSERT_EQ(CliEmbed(texts, threads, &cli, &counts), "");
    test::EncoderPtr encoder = Create(model.get(), threads);
    ASSERT_NE(encoder, nullptr);
    kes_encoder_info info;
    info.struct_size = sizeof(info);
    ASSERT_EQ(kes_encoder_get_info(encoder.get(), &info), KES_OK);
    EXPECT_EQ(info.max_tokens, 48u);
    EXPECT_LT(info.max_batch, texts.size()) << "the batch takes several steps";
    const size_t dim = info.embedding_dim;
    ASSERT_EQ(cli.size(), texts.size() * dim);

    std::vector<float> out(texts.size() * dim, -1.0f);
    ASSERT_EQ(
        kes_embed(encoder.get(), pointers.data(), lengths.data(), texts.size(), out.data(), dim),
        KES_OK)
        << kes_encoder_last_error(encoder.get());
    EXPECT_EQ(std::memcmp(out.data(), cli.data(), cli.size() * sizeof(float)), 0)
        << "kes_embed differs from kestrel embed";

    // The same from the ids kes_encoder_tokenize gives, which are the CLI's counts long.
    std::vector<std::vector<int32_t>> ids(texts.size());
    std::vector<const int32_t*> id_pointers;
    std::vector<size_t> id_lengths;
    for (size_t i = 0; i < texts.size(); ++i) {
      size_t n = 0;
      ASSERT_EQ(
          kes_encoder_tokenize(encoder.get(), texts[i].data(), texts[i].size(), nullptr, 0, &n),
          KES_BUFFER_TOO_SMALL);
      ids[i].resize(n);
      ASSERT_EQ(kes_encoder_tokenize(encoder.get(), texts[i].data(), texts[i].size(), ids[i].data(),
                                     n, &n),
                KES_OK);
      EXPECT_EQ(n, counts[i]) << "text " << i;
      id_pointers.push_back(ids[i].data());
      id_lengths.push_back(n);
    }
    EXPECT_EQ(id_lengths.back(), info.max_tokens) << "the long text is cut";
    std::vector<float> from_ids(out.size(), -1.0f);
    ASSERT_EQ(kes_embed_tokens(encoder.get(), id_pointers.data(), id_lengths.data(), ids.size(),
                               from_ids.data(), dim),
              KES_OK)
        << kes_encoder_last_error(encoder.get());
    EXPECT_EQ(std::memcmp(from_ids.data(), cli.data(), cli.size() * sizeof(float)), 0)
        << "kes_embed_tokens differs from kestrel embed";
  }
}

TEST(CApiEmbed, CallerArenaGivesTheSameEmbeddings) {
  test::ModelPtr model = test::Open(TinyBertPath());
  ASSERT_NE(model, nullptr);
  size_t bytes = 0;
  ASSERT_EQ(kes_encoder_arena_size(model.get(), nullptr, &bytes), KES_OK) << kes_last_error();
  ASSERT_GT(bytes, 0u);
  std::unique_ptr<void, decltype(&std::free)> arena(
      std::aligned_alloc(KES_ALIGNMENT, (bytes + 63) / 64 * 64), &std::free);
  kes_encoder* refused = nullptr;
  EXPECT_EQ(kes_encoder_create(model.get(), nullptr, arena.get(), bytes - 1, &refused),
            KES_INVALID_ARGUMENT);
  EXPECT_EQ(refused, nullptr);
  EXPECT_NE(std::string(kes_last_error()).find("kes_encoder_arena_size"), std::string::npos)
      << kes_last_error();
  EXPECT_EQ(kes_encoder_create(model.get(), nullptr, static_cast<char*>(arena.get()) + 8, bytes,
                               &refused),
            KES_INVALID_ARGUMENT);

  test::EncoderPtr own = Create(model.get(), 1);
  test::EncoderPtr caller = Create(model.get(), 1, arena.get(), bytes);
  ASSERT_NE(own, nullptr);
  ASSERT_NE(caller, nullptr);
  const char* texts[] = {"the cat sits", "a kestrel hovers over the fields"};
  const size_t lengths[] = {std::strlen(texts[0]), std::strlen(texts[1])};
  const size_t dim = Dim(own.get());
  std::vector<float> a(2 * dim), b(2 * dim);
  ASSERT_EQ(kes_embed(own.get(), texts, lengths, 2, a.data(), dim), KES_OK);
  ASSERT_EQ(kes_embed(caller.get(), texts, lengths, 2, b.data(), dim), KES_OK);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  double norm = 0;
  for (size_t j = 0; j < dim; ++j) norm += double{a[j]} * a[j];
  EXPECT_NEAR(norm, 1.0, 1e-5) << "the tiny BERT's pipeline normalizes";
}

// The numbers of `"key": [...]` in `json`, as floats.
std::vector<float> JsonList(const std::string& json, const std::string& key) {
  std::vector<float> values;
  const size_t at = json.find("\"" + key + "\": [");
  if (at == std::string::npos) return values;
  const char* p = json.c_str() + at + key.size() + 5;
  while (*p != ']' && *p != '\0') {
    char* end = nullptr;
    values.push_back(std::strtof(p, &end));
    if (end == p) break;
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return values;
}

TEST(CApiRerank, EqualsKestrelRerankBitForBit) {
  std::string folder;
  ASSERT_EQ(test::MakeTinyBert("tiny-bert-reranker", "--reranker", &folder), "");
  const ProcessResult converted = test::Convert({folder, kTinyRerankerKes});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << Describe(converted);
  test::ModelPtr model = test::Open(kTinyRerankerKes);
  ASSERT_NE(model, nullptr);
  // More documents than a step takes; the longest cut to the model's limit with the query.
  const std::vector<std::string> docs = Texts();
  const std::string query = "a cat that hovers";
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  for (const std::string& d : docs) pointers.push_back(d.data()), lengths.push_back(d.size());
  std::vector<std::string> args = {"rerank", kTinyRerankerKes, "-q", query, "--json", "-t", "2"};
  for (const std::string& d : docs) args.insert(args.end(), {"-d", d});
  const ProcessResult cli = test::Cli(args);
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << Describe(cli);
  const std::vector<float> want = JsonList(cli.out, "logits");
  ASSERT_EQ(want.size(), docs.size()) << cli.out;

  test::EncoderPtr encoder = Create(model.get(), 2);
  ASSERT_NE(encoder, nullptr);
  kes_encoder_info info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(kes_encoder_get_info(encoder.get(), &info), KES_OK);
  EXPECT_EQ(info.is_reranker, 1u);
  EXPECT_EQ(info.embedding_dim, 1u);
  std::vector<float> logits(docs.size(), -1.0f);
  ASSERT_EQ(kes_rerank(encoder.get(), query.data(), query.size(), pointers.data(), lengths.data(),
                       docs.size(), logits.data()),
            KES_OK)
      << kes_encoder_last_error(encoder.get());
  EXPECT_EQ(std::memcmp(logits.data(), want.data(), want.size() * sizeof(float)), 0)
      << "kes_rerank differs from kestrel rerank";

  // A reranker does not embed, and an embedding model does not rerank.
  std::vector<float> row(1);
  EXPECT_EQ(kes_embed(encoder.get(), pointers.data(), lengths.data(), 1, row.data(), 1),
            KES_UNSUPPORTED);
  EXPECT_NE(std::string(kes_encoder_last_error(encoder.get())).find("kes_rerank"),
            std::string::npos);
  test::ModelPtr bert = test::Open(TinyBertPath());
  ASSERT_NE(bert, nullptr);
  test::EncoderPtr embedder = Create(bert.get(), 1);
  ASSERT_NE(embedder, nullptr);
  EXPECT_EQ(kes_rerank(embedder.get(), query.data(), query.size(), pointers.data(), lengths.data(),
                       1, row.data()),
            KES_UNSUPPORTED);
  EXPECT_NE(std::string(kes_encoder_last_error(embedder.get())).find("kes_embed"),
            std::string::npos);
}

TEST(CApiEmbed, RefusesDecodersAndSessionsRefuseEncoders) {
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny), "");
  test::ModelPtr decoder = test::Open(tiny.kes);
  ASSERT_NE(decoder, nullptr);
  kes_encoder* encoder = nullptr;
  EXPECT_EQ(kes_encoder_create(decoder.get(), nullptr, nullptr, 0, &encoder), KES_UNSUPPORTED);
  EXPECT_EQ(encoder, nullptr);
  const std::string message = kes_last_error();
  EXPECT_NE(message.find("text decoder"), std::string::npos) << message;
  EXPECT_NE(message.find("kes_session"), std::string::npos) << message;
  EXPECT_EQ(kes_model_last_error(decoder.get()), message);
  size_t bytes = 0;
  EXPECT_EQ(kes_encoder_arena_size(decoder.get(), nullptr, &bytes), KES_UNSUPPORTED);

  test::ModelPtr bert = test::Open(TinyBertPath());
  ASSERT_NE(bert, nullptr);
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(bert.get(), nullptr, nullptr, 0, &session), KES_UNSUPPORTED);
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(std::string(kes_last_error()).find("encoder model"), std::string::npos)
      << kes_last_error();
  kes_model_info info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(kes_model_get_info(bert.get(), &info), KES_OK);
  EXPECT_EQ(info.can_generate, 0);
}

TEST(CApiEmbed, ArgumentErrorsSayWhatWasExpected) {
  test::ModelPtr model = test::Open(TinyBertPath());
  ASSERT_NE(model, nullptr);
  test::EncoderPtr encoder = Create(model.get(), 1);
  ASSERT_NE(encoder, nullptr);
  const size_t dim = Dim(encoder.get());
  std::vector<float> out(2 * dim);
  const char* texts[] = {"the cat", "the dog"};
  const size_t lengths[] = {7, 7};

  EXPECT_EQ(kes_embed(encoder.get(), texts, lengths, 2, out.data(), dim + 1), KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_encoder_last_error(encoder.get())).find("expected the model's"),
            std::string::npos)
      << kes_encoder_last_error(encoder.get());
  EXPECT_EQ(kes_embed(encoder.get(), texts, nullptr, 2, out.data(), dim), KES_INVALID_ARGUMENT);
  EXPECT_EQ(kes_embed(nullptr, texts, lengths, 2, out.data(), dim), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_last_error(), "encoder is NULL");
  size_t n_ids = 0;
  EXPECT_EQ(kes_encoder_tokenize(encoder.get(), texts[0], lengths[0], nullptr, 0, &n_ids),
            KES_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_ids, 4u) << "[CLS] the cat [SEP]";
  EXPECT_EQ(std::string(kes_encoder_last_error(encoder.get())),
            "ids: expected a capacity of at least 4 tokens, found 0");

  const int32_t good[] = {2, 10, 3};
  const int32_t bad[] = {2, 1 << 30, 3};
  const int32_t* ids[] = {good, bad};
  const size_t id_lengths[] = {3, 3};
  std::vector<float> before(out);
  EXPECT_EQ(kes_embed_tokens(encoder.get(), ids, id_lengths, 2, out.data(), dim),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_encoder_last_error(encoder.get())).find("sequence 1 token 1"),
            std::string::npos)
      << kes_encoder_last_error(encoder.get());
  EXPECT_EQ(out, before) << "nothing is written when an id is bad";
  const std::vector<int32_t> long_ids(49, 10);
  const int32_t* long_seq[] = {good, long_ids.data()};
  const size_t long_lengths[] = {3, long_ids.size()};
  EXPECT_EQ(kes_embed_tokens(encoder.get(), long_seq, long_lengths, 2, out.data(), dim),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_encoder_last_error(encoder.get())).find("expected 1..48"),
            std::string::npos)
      << kes_encoder_last_error(encoder.get());

  kes_encoder_params params = kes_encoder_default_params();
  params.struct_size = sizeof(params) + 8;
  kes_encoder* refused = nullptr;
  EXPECT_EQ(kes_encoder_create(model.get(), &params, nullptr, 0, &refused), KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("newer kestrel.h"), std::string::npos);

  // An older header's info struct (only struct_size and embedding_dim) is filled that far.
  struct OldInfo {
    size_t struct_size, embedding_dim, canary;
  } old = {2 * sizeof(size_t), 0, 12345};
  ASSERT_EQ(kes_encoder_get_info(encoder.get(), reinterpret_cast<kes_encoder_info*>(&old)), KES_OK);
  EXPECT_EQ(old.embedding_dim, dim);
  EXPECT_EQ(old.canary, 12345u);
}

// An encoder of the tiny BERT on `threads` threads with the texts of Texts(): as pointers and
// lengths for kes_embed, as ids (kes_encoder_tokenize) for kes_embed_tokens, and their
// embeddings; ok() when all of that was made.
struct EncoderBatch {
  test::ModelPtr model = test::Open(TinyBertPath());
  test::EncoderPtr encoder;
  size_t dim = 0;
  std::vector<std::string> texts = Texts();
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  std::vector<std::vector<int32_t>> ids;
  std::vector<const int32_t*> id_pointers;
  std::vector<size_t> id_lengths;
  std::vector<float> expected;

  explicit EncoderBatch(size_t threads) {
    if (model == nullptr || (encoder = Create(model.get(), threads)) == nullptr) return;
    dim = Dim(encoder.get());
    for (const std::string& t : texts) {
      pointers.push_back(t.data());
      lengths.push_back(t.size());
      std::vector<int32_t> one(64);
      size_t n = 0;
      EXPECT_EQ(kes_encoder_tokenize(encoder.get(), t.data(), t.size(), one.data(), one.size(), &n),
                KES_OK);
      one.resize(n);
      ids.push_back(one);
    }
    for (const std::vector<int32_t>& one : ids) {
      id_pointers.push_back(one.data());
      id_lengths.push_back(one.size());
    }
    expected.resize(texts.size() * dim);
    EXPECT_EQ(Embed(&expected), KES_OK) << kes_encoder_last_error(encoder.get());
  }
  bool ok() const { return encoder != nullptr && !::testing::Test::HasFailure(); }
  std::string error() const { return kes_encoder_last_error(encoder.get()); }

  kes_status Embed(std::vector<float>* out) const {
    return kes_embed(encoder.get(), pointers.data(), lengths.data(), texts.size(), out->data(),
                     dim);
  }
  kes_status EmbedTokens(std::vector<float>* out) const {
    return kes_embed_tokens(encoder.get(), id_pointers.data(), id_lengths.data(), ids.size(),
                            out->data(), dim);
  }
};

// An abort requested before a call stops it at its first step (nothing is embedded), with
// KES_ABORTED and a message that names the abort; the answer clears the request, so that the
// next call embeds as ever.
TEST(CApiEmbed, AbortStopsTheNextCallAtItsFirstStep) {
  const EncoderBatch b(1);
  ASSERT_TRUE(b.ok());
  using Call = kes_status (EncoderBatch::*)(std::vector<float>*) const;
  for (Call call : {&EncoderBatch::Embed, &EncoderBatch::EmbedTokens}) {
    SCOPED_TRACE(call == &EncoderBatch::Embed ? "kes_embed" : "kes_embed_tokens");
    std::vector<float> out(b.expected.size(), -1.0f);
    ASSERT_EQ(kes_encoder_abort(b.encoder.get()), KES_OK);
    EXPECT_EQ((b.*call)(&out), KES_ABORTED);
    EXPECT_EQ(b.error(), "aborted by kes_encoder_abort");
    EXPECT_EQ(out, std::vector<float>(b.expected.size(), -1.0f)) << "stopped before any step";
    EXPECT_EQ((b.*call)(&out), KES_OK) << b.error();
    EXPECT_EQ(out, b.expected);
  }
  EXPECT_EQ(kes_encoder_abort(nullptr), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_last_error(), "encoder is NULL");
}

// Another thread's abort stops the call under way (or, when it comes as a call ends, the next
// one) with KES_ABORTED; the encoder then embeds as ever. TSan-able.
TEST(CApiEmbedConcurrency, AbortFromAnotherThreadStopsTheCallUnderWay) {
  const EncoderBatch b(2);
  ASSERT_TRUE(b.ok());
  std::vector<float> out(b.expected.size());
  std::atomic<bool> embedding{false}, aborted{false};
  std::thread aborter([&] {
    while (!embedding.load()) std::this_thread::yield();
    EXPECT_EQ(kes_encoder_abort(b.encoder.get()), KES_OK);
    aborted.store(true);
  });
  embedding.store(true);
  // Calls until the abort has been asked, however late a loaded machine runs the aborter; the
  // request stays until a call answers it, so one that ended too soon to see it leaves it to
  // the next call.
  kes_status s = KES_OK;
  while (s == KES_OK && !aborted.load()) s = b.EmbedTokens(&out);
  if (s == KES_OK) s = b.EmbedTokens(&out);
  aborter.join();
  EXPECT_EQ(s, KES_ABORTED) << b.error();
  EXPECT_EQ(b.error(), "aborted by kes_encoder_abort");
  ASSERT_EQ(b.EmbedTokens(&out), KES_OK) << b.error();
  EXPECT_EQ(out, b.expected);
}

// Encoders are used by one thread each; one model serves them all at once. Each thread's
// embeddings must be those it gets alone.
TEST(CApiEmbedConcurrency, TwoEncodersOnOneModelOnTwoThreads) {
  test::ModelPtr model = test::Open(TinyBertPath());
  ASSERT_NE(model, nullptr);
  const std::vector<std::string> all = Texts();
  const std::vector<std::string> texts_a(all.begin(), all.begin() + 20);
  const std::vector<std::string> texts_b(all.begin() + 20, all.end());
  auto embed = [&](const std::vector<std::string>& texts, size_t threads, std::vector<float>* out,
                   kes_status* status) {
    test::EncoderPtr encoder = Create(model.get(), threads);
    std::vector<const char*> p;
    std::vector<size_t> n;
    for (const std::string& t : texts) p.push_back(t.data()), n.push_back(t.size());
    const size_t dim = Dim(encoder.get());
    out->assign(texts.size() * dim, 0.0f);
    *status = kes_embed(encoder.get(), p.data(), n.data(), texts.size(), out->data(), dim);
  };
  std::vector<float> alone_a, alone_b, together_a, together_b;
  kes_status s[4];
  embed(texts_a, 1, &alone_a, &s[0]);
  embed(texts_b, 2, &alone_b, &s[1]);
  std::thread a([&] { embed(texts_a, 1, &together_a, &s[2]); });
  std::thread b([&] { embed(texts_b, 2, &together_b, &s[3]); });
  a.join();
  b.join();
  for (kes_status status : s) EXPECT_EQ(status, KES_OK);
  EXPECT_EQ(together_a, alone_a);
  EXPECT_EQ(together_b, alone_b);
}

}  // namespace
}  // namespace kestrel
