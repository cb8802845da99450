// Hugging Face decoder folders (converters/hf/decoder_gguf.h) against the GGUF route. A tiny
// random GGUF of each Llama-family architecture (tests/py/make_tiny_llama.py) is written back as
// the folder llama.cpp's convert_hf_to_gguf.py would have made it from
// (tests/py/gguf_to_hf_decoder.py); the folder and the GGUF must then convert into models with
// the same tokenizer ids and the same logits. Against llama.cpp itself: the Qwen3 and SmolLM3
// suites (tests/convert_qwen3_test.cc, tests/convert_smollm3_test.cc). Also: a sharded BF16
// folder keeps BF16 matrices, --weights q4_k_m chooses what it chooses for the GGUF, and a folder
// Kestrel cannot read is refused by name, with no model written.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

constexpr char kText[] =
    "The quick brown fox jumps over the lazy dog. <|im_start|>user\nWhat is 12345 + 678?"
    "<|im_end|>\n<|im_start|>assistant\nThe answer is 13023, and the dog is still asleep.";

struct Converted {
  std::unique_ptr<Model> model;
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

// `input` converted with `weights` and scored over kText's tokens; failures reported.
void ConvertAndScore(const std::string& input, const std::string& stem, const std::string& weights,
                     Converted* out) {
  const std::string kes = test::ScratchPath(stem + ".kes");
  const test::ProcessResult r = test::Convert({input, kes, "--weights", weights});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  const Status opened = Model::Open(kes, &out->model);
  std::remove(kes.c_str());
  ASSERT_TRUE(opened.ok()) << opened.message();
  ASSERT_TRUE(out->model->tokenizer().Encode(kText, false, true, &out->ids).ok());
  ASSERT_GT(out->ids.size(), 40u);
  ASSERT_EQ(test::ScoreAll(*out->model, out->ids, 2, 256, &out->logits), "");
}

// A tiny GGUF made with `make_args` (the maker script first when it is not make_tiny_llama.py;
// "--edit ARGS" last for an edit of the GGUF) and its folder written with `folder_args`; "" or
// what failed.
std::string MakeGgufAndFolder(const std::string& stem, std::string make_args,
                              const std::string& folder_args, std::string* gguf,
                              std::string* folder) {
  *gguf = test::ScratchPath(stem + ".gguf");
  *folder = test::ScratchPath(stem + "-hf");
  const std::string py = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/";
  std::string maker = "make_tiny_llama.py";
  if (make_args.compare(0, 10, "make_tiny_") == 0) {
    maker = make_args.substr(0, make_args.find(' '));
    make_args = make_args.size() > maker.size() ? make_args.substr(maker.size() + 1) : "";
  }
  // "--edit ARGS" at the end of the arguments: the GGUF edited by tests/py/edit_gguf.py ARGS.
  std::string edit;
  make_args = " " + make_args;
  if (const size_t at = make_args.find(" --edit "); at != std::string::npos) {
    edit = " && " + py + "edit_gguf.py " + *gguf + " " + *gguf + ".edited " +
           make_args.substr(at + 8) + " && mv " + *gguf + ".edited " + *gguf;
    make_args.resize(at);
  }
  return test::RunHostCommand(py + maker + " " + *gguf + make_args + edit + " && rm -rf '" +
                              *folder + "' && " + py + "gguf_to_hf_decoder.py " + *gguf + " '" +
                              *folder + "' " + folder_args + " > /dev/null");
}

void RemoveScratch(const std::string& gguf, const std::string& folder) {
  std::remove(gguf.c_str());
  test::RunHostCommand("rm -rf '" + folder + "'");
}

// One of the two conversions ConvertTwice makes: of the folder or of its GGUF, with `weights`.
struct Conversion {
  bool folder;
  const char* weights;
};

// A scratch GGUF and its folder (MakeGgufAndFolder's arguments), converted and scored as `first`
// and `second` say, then removed.
void ConvertTwice(const std::string& stem, const std::string& make_args,
                  const std::string& folder_args, Conversion first, Conversion second, Converted* a,
                  Converted* b) {
  std::string gguf, folder;
  ASSERT_EQ(MakeGgufAndFolder(stem, make_args, folder_args, &gguf, &folder), "");
  ConvertAndScore(first.folder ? folder : gguf, stem + "-a", first.weights, a);
  ConvertAndScore(second.folder ? folder : gguf, stem + "-b", second.weights, b);
  RemoveScratch(gguf, folder);
  ASSERT_NE(a->model, nullptr);
  ASSERT_NE(b->model, nullptr);
}

// The dtype of tensor `name`, or false when the model has none.
bool TensorDType(const Model& model, const std::string& name, fb::DType* dtype) {
  const auto* tensors = model.meta().tensors();
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    if (tensors->Get(id)->name()->str() == name) {
      *dtype = tensors->Get(id)->dtype();
      return true;
    }
  }
  return false;
}

struct Family {
  const char* stem;
  const char* make_args;    // make_tiny_llama.py's, or another maker script and its arguments
  const char* folder_args;  // gguf_to_hf_decoder.py
};

class HfDecoderFolder : public ::testing::TestWithParam<Family> {};

// The folder converts into the GGUF's model: the same token ids, and the same logits to the bit
// (the same weights reach the same plan). llama: SmolLM's pre-tokenizer, control tokens first and
// in the vocabulary, Llama 3 RoPE factors recomputed from config.json's rope_scaling, Q/K rows
// un-permuted. qwen2: Q/K/V biases, a tied head, merges as strings. gemma2 (byte-level BPE) and a
// multimodal gemma3 (SentencePiece): Gemma's norms and names, the decoder under text_config and
// language_model., a vision tower skipped. phi3: fused matrices, partial rotary, LongRoPE factors
// from config.json.
TEST_P(HfDecoderFolder, ConvertsAsItsGguf) {
  const Family& f = GetParam();
  Converted from_gguf, from_folder;
  ConvertTwice(f.stem, f.make_args, f.folder_args, {false, "f32"}, {true, "f32"}, &from_gguf,
               &from_folder);
  if (HasFatalFailure()) return;
  EXPECT_EQ(from_folder.ids, from_gguf.ids);
  ASSERT_EQ(from_folder.logits.size(), from_gguf.logits.size());
  size_t differ = 0;
  for (size_t i = 0; i < from_gguf.logits.size(); ++i) {
    differ += from_folder.logits[i] != from_gguf.logits[i];
  }
  EXPECT_EQ(differ, 0u) << "of " << from_gguf.logits.size() << " logits";
  const TokenizerConfig& a = from_folder.model->tokenizer().config();
  const TokenizerConfig& b = from_gguf.model->tokenizer().config();
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
  EXPECT_EQ(a.eot_id, b.eot_id);
  EXPECT_EQ(a.pad_id, b.pad_id);
  EXPECT_EQ(a.unk_id, b.unk_id);
}

INSTANTIATE_TEST_SUITE_P(
    Families, HfDecoderFolder,
    ::testing::Values(Family{"hf-llama", "--arch llama --f32 --rope-scaling llama3", ""},
                      Family{"hf-qwen2", "--arch qwen2 --f32", "--string-merges"},
                      Family{"hf-qwen3", "--arch qwen3 --f32 --head-dim 32 --untied", "--shards 3"},
                      Family{"hf-smollm3", "--arch smollm3 --f32 --layers 8", ""},
                      Family{"hf-gemma2", "make_tiny_gemma2.py", ""},
                      Family{"hf-gemma3", "make_tiny_gemma3.py --f32 --linear-rope 8", ""},
                      Family{"hf-gemma3-mm", "make_tiny_gemma3.py --f32", "--multimodal"},
                      // The attention factor Phi3MiniModel computes for 512 / 128 tokens.
                      // (Not "phi3" in the stem: the folder's name is general.name, and
                      // Phi-3's name turns on llama.cpp's rstrip of its special tokens.)
                      Family{"hf-phi-long",
                             "make_tiny_phi3.py --original-context 128 --rotary-dims 12 "
                             "--attn-factor 1.1338934190276817",
                             ""},
                      // Phi-4-mini's tokenizer: GPT-4o's pre-tokenizer expression.
                      Family{"hf-phi-gpt4o",
                             "make_tiny_phi3.py --edit --set tokenizer.ggml.pre=str:gpt-4o", ""}),
    [](const ::testing::TestParamInfo<Family>& info) { return test::ParamName(info.param.stem); });

// A BF16 checkpoint in three shards: --weights keep stores its matrices as BF16, read straight
// from the shards, and they score as the same values widened to f32 do.
TEST(HfDecoderFolderTypes, Bf16ShardsAreKept) {
  Converted kept, widened;
  ConvertTwice("hf-bf16", "--arch qwen3 --f32", "--dtype bf16 --shards 3", {true, "keep"},
               {true, "f32"}, &kept, &widened);
  if (HasFatalFailure()) return;
  fb::DType q = fb::DType::F32;
  ASSERT_TRUE(TensorDType(*kept.model, "blk.0.attn_q.weight", &q));
  EXPECT_EQ(q, fb::DType::BF16);
  const double error = test::LargestLogitError(kept.logits.data(), widened.logits.data(),
                                               kept.ids.size(), kept.model->vocab_size(), nullptr);
  EXPECT_LT(error, 1e-3);
}

// The folder's GGUF rewrite is spilled to a scratch file in the output's folder, unlinked from
// the start: after the conversion the folder holds the .kes and nothing else.
TEST(HfDecoderFolderTypes, ScratchCopyLeavesNothingBehind) {
  std::string gguf, folder;
  ASSERT_EQ(MakeGgufAndFolder("hf-scratch", "--arch qwen3 --f32", "", &gguf, &folder), "");
  const std::string out_dir = test::ScratchPath("hf-scratch-out");
  ASSERT_EQ(test::RunHostCommand("rm -rf '" + out_dir + "' && mkdir '" + out_dir + "'"), "");
  const test::ProcessResult r = test::Convert({folder, out_dir + "/model.kes", "--weights", "f16"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"model.kes"});
  test::RunHostCommand("rm -rf '" + out_dir + "'");
  RemoveScratch(gguf, folder);
}

// --weights q4_k_m on a folder chooses the K-quant types it chooses for the GGUF the folder was
// made from (rows of 256 let them in), and the two models score alike to the bit.
TEST(HfDecoderFolderTypes, Q4KMAsForTheGguf) {
  Converted from_gguf, from_folder;
  ConvertTwice("hf-q4km", "--arch qwen3 --f32 --d-model 256 --ffn 320", "", {false, "q4_k_m"},
               {true, "q4_k_m"}, &from_gguf, &from_folder);
  if (HasFatalFailure()) return;
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.ffn_down.weight", "token_embd.weight"}) {
    fb::DType a = fb::DType::F32, b = fb::DType::F32;
    ASSERT_TRUE(TensorDType(*from_gguf.model, name, &a) &&
                TensorDType(*from_folder.model, name, &b))
        << name;
    EXPECT_EQ(a, b) << name;
    if (std::string(name) == "blk.0.attn_q.weight") {
      EXPECT_EQ(a, fb::DType::Q4_K);
    }
  }
  EXPECT_EQ(from_folder.logits, from_gguf.logits);
}

// Where a generation ends. From the GGUF: eos, and every token llama.cpp's end-of-generation
// list names by text (the tiny Qwen2's <|endoftext|> and <|im_end|>), not <|im_start|>. From a
// folder, generation_config.json's eos_token_id too (here a list naming two normal tokens).
TEST(HfDecoderFolderTypes, StopTokens) {
  Converted from_gguf, from_folder;
  ConvertTwice("hf-stops", "--arch qwen2 --f32", "--stop-ids 100,101", {false, "f32"},
               {true, "f32"}, &from_gguf, &from_folder);
  if (HasFatalFailure()) return;
  const Tokenizer& gguf = from_gguf.model->tokenizer();
  const Tokenizer& folder = from_folder.model->tokenizer();
  for (const char* text : {"<|endoftext|>", "<|im_end|>", "<|im_start|>"}) {
    std::vector<int32_t> ids;
    ASSERT_TRUE(gguf.Encode(text, false, true, &ids).ok());
    ASSERT_EQ(ids.size(), 1u) << text;
    const bool stops = std::string(text) != "<|im_start|>";
    EXPECT_EQ(gguf.IsEndOfGeneration(ids[0]), stops) << text;
    EXPECT_EQ(folder.IsEndOfGeneration(ids[0]), stops) << text;
  }
  EXPECT_TRUE(folder.IsEndOfGeneration(100));
  EXPECT_TRUE(folder.IsEndOfGeneration(101));
  EXPECT_FALSE(gguf.IsEndOfGeneration(100));
  EXPECT_FALSE(folder.IsEndOfGeneration(102));
}

// The texts' token ids and embeddings from `kes` (an embedding model), failures reported.
void Embed(const std::string& kes, const std::vector<std::string>& texts,
           std::vector<std::vector<int32_t>>* ids, std::vector<float>* out) {
  std::unique_ptr<Model> model;
  const Status opened = Model::Open(kes, &model);
  ASSERT_TRUE(opened.ok()) << opened.message();
  ASSERT_TRUE(model->is_encoder());
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model, EncoderOptions(), &encoder).ok());
  std::vector<const int32_t*> starts;
  std::vector<size_t> lengths;
  ids->resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(encoder->Tokenize(texts[i], &(*ids)[i]).ok());
    starts.push_back((*ids)[i].data());
    lengths.push_back((*ids)[i].size());
  }
  out->assign(texts.size() * encoder->embedding_dim(), 0.0f);
  ASSERT_TRUE(encoder->Encode(starts.data(), lengths.data(), texts.size(), out->data()).ok());
}

// Qwen3-Embedding as a sentence-transformers folder (modules.json, a last-token Pooling module)
// whose tokenizer.json template appends <|endoftext|> while tokenizer_config.json names
// <|im_end|> as EOS (gguf-py then makes <|endoftext|> EOS and <|im_end|> end of turn): it embeds
// as the GGUF does, to the bit, with the same ids, the appended token last.
TEST(HfDecoderFolderTypes, EmbeddingFolderEmbedsAsItsGguf) {
  std::string gguf, folder;
  ASSERT_EQ(
      MakeGgufAndFolder("hf-embedding", "--arch qwen3 --f32 --pooling last", "", &gguf, &folder),
      "");
  const std::string kes_gguf = test::ScratchPath("hf-embedding-gguf.kes");
  const std::string kes_folder = test::ScratchPath("hf-embedding-folder.kes");
  const test::ProcessResult a = test::Convert({gguf, kes_gguf});
  const test::ProcessResult b = test::Convert({folder, kes_folder});
  RemoveScratch(gguf, folder);
  ASSERT_TRUE(a.exited && a.exit_code == 0) << test::Describe(a);
  ASSERT_TRUE(b.exited && b.exit_code == 0) << test::Describe(b);
  const std::vector<std::string> texts = {"the cat sat", "Hello world, 12345!", "a"};
  std::vector<std::vector<int32_t>> ids_gguf, ids_folder;
  std::vector<float> from_gguf, from_folder;
  Embed(kes_gguf, texts, &ids_gguf, &from_gguf);
  Embed(kes_folder, texts, &ids_folder, &from_folder);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes_folder, &model).ok());
  std::remove(kes_gguf.c_str());
  std::remove(kes_folder.c_str());
  EXPECT_EQ(ids_folder, ids_gguf);
  ASSERT_FALSE(ids_folder.empty());
  EXPECT_EQ(model->tokenizer().Piece(ids_folder[0].back()), "<|endoftext|>");
  EXPECT_EQ(model->tokenizer().Piece(model->tokenizer().config().eot_id), "<|im_end|>");
  EXPECT_EQ(from_folder, from_gguf);
}

struct Refusal {
  const char* stem;
  const char* folder_args;
  const char* message;
  const char* make_args = "--arch qwen2 --f32";
};

class HfDecoderFolderRefused : public ::testing::TestWithParam<Refusal> {};

// What the converter cannot read it names (file, field, what it expected, what it found), exits
// with status 1 and writes no model.
TEST_P(HfDecoderFolderRefused, NamesWhy) {
  const Refusal& r = GetParam();
  std::string gguf, folder;
  ASSERT_EQ(MakeGgufAndFolder(r.stem, r.make_args, r.folder_args, &gguf, &folder), "");
  const std::string out = test::ScratchPath(std::string(r.stem) + ".kes");
  const test::ProcessResult p = test::Convert({folder, out});
  RemoveScratch(gguf, folder);
  ASSERT_TRUE(p.exited && p.exit_code == 1) << test::Describe(p);
  EXPECT_NE(p.err.find(r.message), std::string::npos) << p.err;
  EXPECT_FALSE(test::Exists(out));
}

INSTANTIATE_TEST_SUITE_P(
    Folders, HfDecoderFolderRefused,
    ::testing::Values(
        Refusal{"hf-no-tokenizer", "--remove tokenizer.json", "tokenizer.json"},
        Refusal{"hf-byte-fallback", "--tokenizer-model byte_fallback=true",
                "model.byte_fallback: true (a SentencePiece-style BPE"},
        Refusal{"hf-stray-tensor", "--extra-tensor model.layers.0.mlp.gate_proj.bias",
                "tensor 'model.layers.0.mlp.gate_proj.bias' is not one a qwen2 decoder has"},
        Refusal{"hf-mlp-bias", "--config mlp_bias=true",
                "mlp_bias: expected false, found true (feed-forward biases are not supported)"},
        Refusal{"hf-yarn", "--config 'rope_scaling={\"rope_type\":\"yarn\",\"factor\":4}'",
                "unsupported RoPE scaling \"yarn\""},
        Refusal{"hf-heads", "--config num_attention_heads=0",
                "num_attention_heads: expected a whole number 1..1024, found 0"},
        Refusal{"hf-unigram", "--spm-model-type 1",
                "trainer_spec.model_type is 1: expected 2 (BPE)", "make_tiny_gemma3.py"},
        Refusal{"hf-stop-outside", "--stop-ids 5,99999",
                "generation_config.json': eos_token_id: expected token ids below the "
                "vocabulary's"},
        Refusal{"hf-gemma3-pattern", "--config sliding_window_pattern=4",
                "sliding_window_pattern: expected 6 (what llama.cpp runs), found 4",
                "make_tiny_gemma3.py"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return test::ParamName(info.param.stem); });

}  // namespace
}  // namespace kestrel
