// Gemma 3 at the sizes past 270M and 1B (GGUF architecture gemma3) against llama.cpp itself. The
// larger files differ from the 270M one, which the NumPy oracle checks, only in hyper-parameters:
// 4B, 12B and 27B scale the global layers' RoPE linearly (rope.scaling.type "linear", factor 8)
// while the sliding layers keep their own base unscaled, their windows are 1024 (512 in 1B), and
// 27B scales queries by 1/sqrt(d_model / heads) (converters/arch/gemma3.cc). A tiny random Gemma 3
// with those keys (tests/py/make_tiny_gemma3.py --linear-rope 8 --freq-base-swa 10000, a window
// of 32 so that it bites in 300 tokens, f32 weights) scores 300 tokens of a fixed text; llama.cpp's
// logits for the same file and tokens are the fixture
// tests/data/gemma3_4b_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py --maker make_tiny_gemma3.py (CI cannot build llama.cpp).
// Mean KL(llama.cpp || Kestrel) below 1e-5 nats, the same top token at every position; without the
// linear scaling, or with it on the sliding layers too, the logits must be far off.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tests/support/llama_cpp_arch_test.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

constexpr char kArch[] = "gemma3_4b";
constexpr char kMaker[] = "make_tiny_gemma3.py";

using Gemma3SizesTest = test::LlamaCppArchTest<kArch, kMaker>;

TEST_F(Gemma3SizesTest, LinearRopeScalingMatchesLlamaCpp) { ExpectFixtureMatchesLlamaCpp(); }

// The same model as the Hugging Face folder of a multimodal Gemma 3 (4B and up: model_type gemma3,
// the decoder's keys under text_config, its tensors under language_model., a vision tower beside
// them; linear RoPE scaling and rope_local_base_freq in config.json, a SentencePiece
// tokenizer.model): converted from the folder, it matches llama.cpp as well.
TEST_F(Gemma3SizesTest, HfFolderLogitsMatchLlamaCpp) {
  ExpectHfFolderMatchesLlamaCpp("--multimodal");
}

// The global layers' scaling matters, and the sliding layers' base does: the same file without
// the scaling, or with the sliding layers on the global base, is far from llama.cpp's logits.
TEST_F(Gemma3SizesTest, ScalingAndTheSlidingBaseMatter) {
  ExpectEditsMatter(
      {"--drop-key gemma3.rope.scaling.type", "--set gemma3.rope.freq_base_swa=f32:1000000"});
}

}  // namespace
}  // namespace kestrel
