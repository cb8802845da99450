// The fixture the architecture tests (tests/convert_<arch>_test.cc) share: llama.cpp's recorded
// logits for a tiny random model (tests/data/<arch>_tiny_llama_cpp_logits.bin), the model's GGUF
// made again once per suite by tests/py/<maker>, its conversion with f32 weights, and the check
// every architecture must pass against llama.cpp: the GGUF is the one the logits were recorded
// from, Kestrel's tokenizer gives llama.cpp's ids, and the score plan's logits have a mean
// KL(llama.cpp || Kestrel) below 1e-5 nats with the same top token at every position.
// Header-only: the support library does not link GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/llama_cpp_logits.h"
#include "tests/support/test_support.h"

namespace kestrel::test {

// The tests/py script that writes most architectures' tiny models (--arch picks the family).
inline constexpr char kTinyLlamaMaker[] = "make_tiny_llama.py";

// kArch names the fixture file and the scratch files; kMaker is the tests/py script that writes
// the tiny model (with the fixture's own arguments).
template <const char* kArch, const char* kMaker = kTinyLlamaMaker>
class LlamaCppArchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf_ = ScratchPath(std::string(kArch) + ".gguf");
    error_ = ReadLlamaCppLogitsAndModel(
        std::string(KESTREL_SOURCE_DIR "/tests/data/") + kArch + "_tiny_llama_cpp_logits.bin",
        kMaker, gguf_, &fixture_);
  }
  static void TearDownTestSuite() { std::remove(gguf_.c_str()); }

  // gguf converted with --weights f32 and opened; *model stays null on a failure (reported).
  static void OpenF32(const std::string& gguf, std::unique_ptr<Model>* model) {
    const std::string kes = ScratchPath(std::string(kArch) + ".kes");
    const ProcessResult r = Convert({gguf, kes, "--weights", "f32"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    const Status opened = Model::Open(kes, model);
    std::remove(kes.c_str());
    ASSERT_TRUE(opened.ok()) << opened.message();
    ASSERT_EQ((*model)->vocab_size(), fixture_.vocab);
  }

  // The fixture's GGUF converted with f32 weights and opened; null, with the failure reported,
  // when the suite's set-up or the conversion failed.
  static std::unique_ptr<Model> OpenFixtureF32() {
    std::unique_ptr<Model> model;
    if (!error_.empty()) {
      ADD_FAILURE() << error_;
    } else {
      OpenF32(gguf_, &model);
    }
    return model;
  }

  // The two checks every architecture passes, on the fixture's own model (OpenFixtureF32).
  static void ExpectFixtureMatchesLlamaCpp() {
    const std::unique_ptr<Model> model = OpenFixtureF32();
    ASSERT_NE(model, nullptr);
    ExpectMatchesLlamaCpp(*model);
  }
  // The heads of a model whose heads do not split d_model (Q is [d_model -> n_heads * head_dim],
  // attn_output back): checked before the logits, which would hide a wrong split.
  struct Heads {
    uint32_t d_model, n_heads, head_dim;
  };
  static void ExpectFixtureMatchesLlamaCpp(const Heads& heads) {
    const std::unique_ptr<Model> model = OpenFixtureF32();
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->hparams().d_model(), heads.d_model);
    EXPECT_EQ(model->hparams().n_heads(), heads.n_heads);
    EXPECT_EQ(model->hparams().head_dim(), heads.head_dim);
    ExpectMatchesLlamaCpp(*model);
  }
  static void ExpectFixturePrefillAndDecodeMatchLlamaCpp() {
    const std::unique_ptr<Model> model = OpenFixtureF32();
    ASSERT_NE(model, nullptr);
    ExpectPrefillAndDecodeMatchLlamaCpp(*model);
  }

  // The fixture's GGUF, the tokenizer's ids and the score plan's logits against llama.cpp's.
  static void ExpectMatchesLlamaCpp(const Model& model) {
    const LlamaCppLogits& f = fixture_;
    const std::string maker = kMaker;
    ASSERT_EQ(Fnv1a64(ReadBytes(gguf_)), f.gguf_hash)
        << maker << " " << f.make_args << " no longer writes the GGUF the fixture was recorded "
        << "from; record it again with tests/py/record_llama_cpp_logits.py"
        << (maker == kTinyLlamaMaker ? "" : " --maker " + maker);
    std::vector<int32_t> ids;
    ASSERT_TRUE(model.tokenizer().Encode(f.text, false, true, &ids).ok());
    ASSERT_EQ(ids.size(), f.text_tokens);
    ids.resize(f.n_tokens);
    ASSERT_EQ(ids, f.tokens);

    std::vector<float> ours;
    ASSERT_EQ(ScoreAll(model, f.tokens, 2, 512, &ours), "");
    const LogitAgreement a = CompareWithLlamaCpp(f, ours, 0, f.n_tokens);
    std::printf(
        "%s vs llama.cpp (%s), score plan: %u positions, mean KL %.3g, max KL %.3g, "
        "max |logit diff| %.3g, top token differs at %d\n",
        kArch, f.provenance.c_str(), f.n_tokens, a.kl_mean, a.kl_max, a.logit_diff_max,
        a.top_differ);
    EXPECT_LT(a.kl_mean, 1e-5);
    EXPECT_EQ(a.top_differ, 0) << a.first_differences;
  }

  // The fixture's GGUF written as the Hugging Face folder llama.cpp's converter would have made
  // it from (tests/py/gguf_to_hf_decoder.py), and converted from that folder: the same checks
  // against llama.cpp as the GGUF's own conversion passes.
  // `folder_args`: more arguments for gguf_to_hf_decoder.py (--multimodal, ...).
  static void ExpectHfFolderMatchesLlamaCpp(const std::string& folder_args = "") {
    ASSERT_EQ(error_, "");
    // Not named after kArch: the folder's name becomes general.name, and one with "phi3" in it
    // would give Phi-3's special tokens llama.cpp's rstrip (converters/gguf_tokenizer.cc).
    const std::string folder = ScratchPath("fixture-folder");
    ASSERT_EQ(RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                             "/tests/py/gguf_to_hf_decoder.py " + gguf_ + " '" + folder + "' " +
                             folder_args),
              "");
    std::unique_ptr<Model> model;
    OpenF32(folder, &model);
    RunHostCommand("rm -rf '" + folder + "'");
    ASSERT_NE(model, nullptr);
    ExpectMatchesLlamaCpp(*model);
  }

  // Prefill of the first half of the fixture's tokens, then one decode step per token (2
  // threads, f32 KV): the prefill and decode plans, whose logits are a one-row buffer, and the
  // keys the attention step rotates itself.
  static void ExpectPrefillAndDecodeMatchLlamaCpp(const Model& model) {
    const LlamaCppLogits& f = fixture_;
    SessionOptions options;
    options.context_length = 512;
    options.n_threads = 2;
    options.kv.type = ops::KvType::kF32;
    std::unique_ptr<Session> session;
    Status s = Session::Create(model, options, &session);
    ASSERT_TRUE(s.ok()) << s.message();
    const uint32_t half = f.n_tokens / 2;
    std::vector<float> ours(size_t{f.n_tokens} * f.vocab, 0.0f);
    s = session->Prefill(f.tokens.data(), half);
    ASSERT_TRUE(s.ok()) << s.message();
    std::copy(session->logits(), session->logits() + f.vocab, &ours[size_t{half - 1} * f.vocab]);
    for (uint32_t t = half; t < f.n_tokens; ++t) {
      s = session->Decode(f.tokens[t]);
      ASSERT_TRUE(s.ok()) << s.message();
      std::copy(session->logits(), session->logits() + f.vocab, &ours[size_t{t} * f.vocab]);
    }
    const LogitAgreement a = CompareWithLlamaCpp(f, ours, half - 1, f.n_tokens);
    std::printf(
        "%s vs llama.cpp, prefill %u + decode %u: mean KL %.3g, max KL %.3g, "
        "top token differs at %d\n",
        kArch, half, f.n_tokens - half, a.kl_mean, a.kl_max, a.top_differ);
    EXPECT_LT(a.kl_mean, 1e-5);
    EXPECT_EQ(a.top_differ, 0);
  }

  // The fixture's GGUF edited by tests/py/edit_gguf.py with `edit` ("--set KEY=TYPE:VALUE",
  // "--drop-key KEY"), converted with f32 weights and scored over every position against
  // llama.cpp's logits for the unedited file: what a test asserts when a key must matter.
  static void ScoreEdited(const std::string& edit, LogitAgreement* out) {
    const std::string edited = ScratchPath(std::string(kArch) + "-edited.gguf");
    ASSERT_EQ(EditFixtureGguf(edit, edited), "");
    std::unique_ptr<Model> model;
    OpenF32(edited, &model);
    std::remove(edited.c_str());
    if (model == nullptr) return;
    std::vector<float> ours;
    ASSERT_EQ(ScoreAll(*model, fixture_.tokens, 2, 512, &ours), "");
    *out = CompareWithLlamaCpp(fixture_, ours, 0, fixture_.n_tokens);
  }

  // The fixture's GGUF edited with `edit` (as ScoreEdited takes it) into scratch files named
  // after `stem`: the converter must refuse it (exit code 1), name each of `messages` in its
  // errors, and write no model.
  static void ExpectEditRefused(const std::string& stem, const std::string& edit,
                                std::initializer_list<std::string> messages) {
    ASSERT_EQ(error_, "");
    const std::string edited = ScratchPath(stem + ".gguf");
    const std::string out = ScratchPath(stem + ".kes");
    ASSERT_EQ(EditFixtureGguf(edit, edited), "");
    const ProcessResult r = Convert({edited, out});
    std::remove(edited.c_str());
    ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    for (const std::string& message : messages) {
      EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    }
    EXPECT_FALSE(Exists(out));
  }

  // The fixture's GGUF edited by tests/py/edit_gguf.py with `edit`, written to `edited`; "" or
  // what failed.
  static std::string EditFixtureGguf(const std::string& edit, const std::string& edited) {
    return RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                          "/tests/py/edit_gguf.py " + gguf_ + " " + edited + " " + edit);
  }

  // Each edit (as ScoreEdited takes it) must move the logits well away from llama.cpp's for the
  // unedited file: the fixture really exercises what the edited key sets.
  static void ExpectEditsMatter(std::initializer_list<std::string> edits) {
    ASSERT_EQ(error_, "");
    for (const std::string& edit : edits) {
      LogitAgreement a;
      ScoreEdited(edit, &a);
      std::printf("%s: mean KL %.3g\n", edit.c_str(), a.kl_mean);
      EXPECT_GT(a.kl_mean, 1e-3) << edit;
    }
  }

  static inline std::string error_, gguf_;
  static inline LlamaCppLogits fixture_;
};

}  // namespace kestrel::test
