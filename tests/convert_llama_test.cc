// kestrel-convert on Llama-family GGUFs it must refuse, or accept, that no generator writes: the
// tiny Llama (tests/py/make_tiny_llama.py) edited by tests/py/edit_gguf.py. Refusals are one
// line naming what is unsupported, and leave no output file.
#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

struct Edit {
  const char* name;
  const char* edit_args;              // for tests/py/edit_gguf.py
  std::vector<std::string> keywords;  // the error must contain all; empty: it must convert
};

class ConvertLlamaEdit : public ::testing::TestWithParam<Edit> {};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST_P(ConvertLlamaEdit, RefusesClearlyOrConverts) {
  const Edit& e = GetParam();
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny, test::kTinyLlama), "");
  const std::string edited = test::ScratchPath(std::string("edited-") + e.name + ".gguf");
  const std::string out = test::ScratchPath(std::string("edited-") + e.name + ".kes");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/edit_gguf.py " + tiny.gguf + " " + edited + " " +
                                 e.edit_args),
            "");
  const ProcessResult r = test::Convert({edited, out});
  if (e.keywords.empty()) {
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_TRUE(Exists(out));
  } else {
    ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    EXPECT_EQ(r.err.find("kestrel-convert: error: "), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
    for (const std::string& k : e.keywords) EXPECT_NE(r.err.find(k), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(out)) << "a refused conversion left " << out;
  }
  std::remove(edited.c_str());
  std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Edits, ConvertLlamaEdit,
    ::testing::Values(
        Edit{"yarn",
             "--set llama.rope.scaling.type=str:yarn --set llama.rope.scaling.factor=f32:4",
             {"unsupported RoPE scaling \"yarn\"", "linear"}},
        Edit{"architecture",
             "--set general.architecture=str:mamba",
             {"unsupported architecture 'mamba'", "gemma3, llama, phi3, qwen2"}},
        Edit{"pre_tokenizer",
             "--set tokenizer.ggml.pre=str:deepseek-coder",
             {"tokenizer.ggml.pre", "'deepseek-coder'", "smollm"}},
        Edit{"tokenizer_model",
             "--set tokenizer.ggml.model=str:bert",
             {"tokenizer.ggml.model", "\"bert\""}},
        Edit{"experts", "--set llama.expert_count=u32:8", {"mixture-of-experts"}},
        Edit{"odd_rotary",
             "--set llama.rope.dimension_count=u32:7",
             {"rope.dimension_count", "even count of at most the head size 16", "found 7"}},
        Edit{"rotary_past_head",
             "--set llama.rope.dimension_count=u32:18",
             {"rope.dimension_count", "found 18"}},
        // Partial rotary converts, with factors for the pairs that turn (this file's are for
        // all 16 dimensions).
        Edit{"partial_rotary",
             "--set llama.rope.dimension_count=u32:8",
             {"rope_freqs.weight", "expected shape [4], found [8]"}},
        Edit{"missing_tensor",
             "--drop-tensor blk.2.ffn_up.weight",
             {"no tensor 'blk.2.ffn_up.weight'"}},
        Edit{"bad_merge", "--set tokenizer.ggml.merges=str:x", {"tokenizer.ggml.merges"}},
        Edit{"tied_head", "--drop-tensor output.weight", {}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kestrel
