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

constexpr char kArch[] = "qwen3";
using Qwen3Test = test::LlamaCppArchTest<kArch>;

// The heads do not split d_model. The tokenizer: the qwen2 pre-tokenizer, ChatML control tokens
// parsed.
TEST_F(Qwen3Test, LogitsMatchLlamaCpp) { ExpectFixtureMatchesLlamaCpp({64, 4, 32}); }

// The same model as the Hugging Face folder llama.cpp's converter would have made the GGUF from
// (the qwen2 pre-tokenizer's Split expression, NFC normalizer, QK-norm weights and head_dim):
// converted from the folder, it matches llama.cpp as well.
TEST_F(Qwen3Test, HfFolderLogitsMatchLlamaCpp) { ExpectHfFolderMatchesLlamaCpp(); }

// Without its QK-norm weights a qwen3 file is refused, naming the tensor (not converted as a
// Qwen2 without biases).
TEST_F(Qwen3Test, RefusesMissingQkNorm) {
  ExpectEditRefused("qwen3-no-k-norm", "--drop-tensor blk.2.attn_k_norm.weight",
                    {"blk.2.attn_k_norm.weight"});
}

// An unknown architecture is still refused by name, and the list of supported ones has qwen3.
TEST_F(Qwen3Test, UnknownArchitectureListsQwen3) {
  ExpectEditRefused("qwen3-as-mamba", "--set general.architecture=str:mamba",
                    {"unsupported architecture 'mamba'", "gemma3, llama, phi3, qwen2, qwen3"});
}

}  // namespace
}  // namespace kestrel
