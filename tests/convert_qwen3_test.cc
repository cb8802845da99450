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
#include "tests/support/llama_cpp_arch_test.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

constexpr char kArch[] = "qwen3";
constexpr char kMaker[] = "make_tiny_llama.py";
using Qwen3Test = test::LlamaCppArchTest<kArch, kMaker>;

TEST_F(Qwen3Test, LogitsMatchLlamaCpp) {
  const std::unique_ptr<Model> model = OpenFixtureF32();
  ASSERT_NE(model, nullptr);
  // The heads do not split d_model: Q is [64 -> 4 * 32], attn_output [4 * 32 -> 64].
  EXPECT_EQ(model->hparams().d_model(), 64u);
  EXPECT_EQ(model->hparams().n_heads(), 4u);
  EXPECT_EQ(model->hparams().head_dim(), 32u);
  // The tokenizer: the qwen2 pre-tokenizer, ChatML control tokens parsed.
  ExpectMatchesLlamaCpp(*model);
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
  EXPECT_NE(r.err.find("gemma3, llama, phi3, qwen2, qwen3"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
}

}  // namespace
}  // namespace kestrel
