// Gemma 2 (GGUF architecture gemma2) against llama.cpp itself: a tiny random Gemma 2
// (tests/py/make_tiny_gemma2.py: post-norms, no QK-norm, tied head, every other layer a sliding
// window of 32 positions, attention scores soft-capped at 4 and logits at 2, weights wide enough
// that both caps bite), converted with --weights f32, scores 300 tokens of a fixed text (so the
// window is far smaller than the text); llama.cpp's logits for the same file and tokens are the
// fixture tests/data/gemma2_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py --maker make_tiny_gemma2.py (CI cannot build llama.cpp).
// Mean KL(llama.cpp || Kestrel) must stay below 1e-5 nats and the top token must agree at every
// position, through the score plan and through prefill + decode (whose logits are a one-row
// buffer). The same file with either cap lifted, or no window, must be far off.
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
#include "runtime/session.h"
#include "tests/support/llama_cpp_arch_test.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

constexpr char kArch[] = "gemma2";
constexpr char kMaker[] = "make_tiny_gemma2.py";

using Gemma2Test = test::LlamaCppArchTest<kArch, kMaker>;

TEST_F(Gemma2Test, LogitsMatchLlamaCpp) { ExpectFixtureMatchesLlamaCpp(); }

// The same model as a Hugging Face folder (tests/py/gguf_to_hf_decoder.py: Gemma's norm names and
// norms without the +1, soft-caps, window and layer_types in config.json): converted from the
// folder, it matches llama.cpp as well.
TEST_F(Gemma2Test, HfFolderLogitsMatchLlamaCpp) { ExpectHfFolderMatchesLlamaCpp(); }

// Prefill of the first half, then one decode step per token: the prefill and decode plans, whose
// logits are a one-row buffer that the final soft-cap rewrites in place.
TEST_F(Gemma2Test, PrefillAndDecodeMatchLlamaCpp) { ExpectFixturePrefillAndDecodeMatchLlamaCpp(); }

// With either cap lifted far above anything the model reaches, or the window wider than the
// text, the logits must move well away from llama.cpp's: the fixture really exercises the caps and
// the sliding layers.
TEST_F(Gemma2Test, SoftCapsAndWindowMatter) {
  ExpectEditsMatter({"--set gemma2.attn_logit_softcapping=f32:1000000",
                     "--set gemma2.final_logit_softcapping=f32:1000000",
                     "--set gemma2.attention.sliding_window=u32:4096"});
}

}  // namespace
}  // namespace kestrel
