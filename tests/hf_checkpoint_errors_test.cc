// Damaged Hugging Face checkpoint folders get a clear error from kestrel-convert, never a crash,
// and leave no output file (design.md principle 3: the input is untrusted).
//
// The tiny BERT checkpoint of tests/py/make_tiny_bert.py is made once; a test converts it as it is,
// then each case copies it to a scratch folder, damages one thing (a JSON file made malformed or
// edited through nlohmann::json, a safetensors file truncated or its header rewritten) and runs the
// converter: exit code 1 (not a signal), one line "kestrel-convert: error: ..." naming the file and
// what is wrong, and no output file. Bad flags on a sound folder are covered the same way. Build
// with -DKESTREL_SANITIZE=ON too: the converter runs sanitized there, so a read out of bounds is a
// crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::Describe;
using test::ProcessResult;

// Damages the checkpoint copy in folder `dir`; returns "" or what failed.
using Edit = std::function<std::string(const std::string& dir)>;

// Removes the folder at `dir` with what it holds, if it is there.
void RemoveFolder(const std::string& dir) {
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

// A new empty folder at `dir`, whatever was there before; false if it cannot be made.
bool MakeEmptyFolder(const std::string& dir) {
  RemoveFolder(dir);
  return fs::create_directory(dir);
}

std::string ReadText(const std::string& path) {
  const std::vector<uint8_t> bytes = test::ReadBytes(path);
  return std::string(bytes.begin(), bytes.end());
}

std::string WriteText(const std::string& path, const std::string& text) {
  return test::WriteBytes(path, reinterpret_cast<const uint8_t*>(text.data()), text.size())
             ? std::string()
             : "cannot write " + path;
}

// `file` (relative to the folder) replaced by `text`.
Edit Text(const std::string& file, const std::string& text) {
  return [=](const std::string& dir) { return WriteText(dir + "/" + file, text); };
}

// `text` inserted after the first '{' of `file`.
Edit InsertAfterBrace(const std::string& file, const std::string& text) {
  return [=](const std::string& dir) {
    std::string s = ReadText(dir + "/" + file);
    const size_t brace = s.find('{');
    if (brace == std::string::npos) return "no '{' in " + file;
    return WriteText(dir + "/" + file, s.insert(brace + 1, text));
  };
}

// `file` cut to its first `keep` bytes (keep < 0: all but its last -keep).
Edit Truncated(const std::string& file, long keep) {
  return [=](const std::string& dir) {
    const std::string path = dir + "/" + file;
    const uint64_t size = fs::file_size(path);
    const uint64_t new_size = keep >= 0 ? uint64_t(keep) : size - uint64_t(-keep);
    if (new_size >= size) return "cannot cut " + file + " to " + std::to_string(new_size);
    fs::resize_file(path, new_size);
    return std::string();
  };
}

Edit Removed(const std::vector<std::string>& files) {
  return [=](const std::string& dir) {
    for (const std::string& file : files) {
      if (!fs::remove(dir + "/" + file)) return "cannot remove " + file;
    }
    return std::string();
  };
}

// `file` parsed, changed by `change` and written back as well-formed JSON.
Edit JsonEdit(const std::string& file, std::function<void(json&)> change) {
  return [=](const std::string& dir) {
    const std::string path = dir + "/" + file;
    json j = json::parse(ReadText(path), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return path + " is not JSON to begin with";
    change(j);
    return WriteText(path, j.dump(2));
  };
}

// model.safetensors with its header changed by `change`, then laid out again: tensors keep their
// bytes (a tensor `change` erases loses them), packed in their old order with offsets to match, so
// the file stays well formed and only the change is wrong.
Edit Tensors(std::function<void(json&)> change) {
  return [=](const std::string& dir) {
    const std::string path = dir + "/model.safetensors";
    const std::vector<uint8_t> file = test::ReadBytes(path);
    uint64_t n = 0;
    for (int i = 0; i < 8 && i < int(file.size()); ++i) n |= uint64_t{file[i]} << (8 * i);
    if (file.size() < 8 || n > file.size() - 8) return path + " is not safetensors";
    json header =
        json::parse(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(n), nullptr, false);
    if (!header.is_object()) return path + " has no JSON object for a header";
    const std::vector<uint8_t> data(file.begin() + 8 + std::ptrdiff_t(n), file.end());
    change(header);
    std::vector<std::pair<uint64_t, std::string>> order;  // (old begin, name)
    for (const auto& [name, entry] : header.items()) {
      if (name != "__metadata__")
        order.emplace_back(entry["data_offsets"][0].get<uint64_t>(), name);
    }
    std::sort(order.begin(), order.end());
    std::vector<uint8_t> packed;
    for (const auto& [begin, name] : order) {
      json& offsets = header[name]["data_offsets"];
      const uint64_t end = offsets[1].get<uint64_t>();
      const uint64_t new_begin = packed.size();
      packed.insert(packed.end(), data.begin() + std::ptrdiff_t(begin),
                    data.begin() + std::ptrdiff_t(end));
      offsets = {new_begin, packed.size()};
    }
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');  // the data stays 8-byte aligned
    std::vector<uint8_t> out(8);
    for (int i = 0; i < 8; ++i) out[i] = uint8_t(uint64_t{text.size()} >> (8 * i));
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), packed.begin(), packed.end());
    return test::WriteBytes(path, out.data(), out.size()) ? std::string() : "cannot write " + path;
  };
}

// model.safetensors with its first 8 bytes (the header length) set to the file's size.
std::string HeaderLengthPastEnd(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  std::vector<uint8_t> file = test::ReadBytes(path);
  if (file.size() < 8) return path + " is too short";
  for (int i = 0; i < 8; ++i) file[i] = uint8_t(uint64_t{file.size()} >> (8 * i));
  return test::WriteBytes(path, file.data(), file.size()) ? std::string() : "cannot write " + path;
}

// model.safetensors with its header's first bytes overwritten, its length kept.
std::string HeaderGarbled(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  std::vector<uint8_t> file = test::ReadBytes(path);
  if (file.size() < 16) return path + " is too short";
  for (int i = 8; i < 16; ++i) file[i] = '#';
  return test::WriteBytes(path, file.data(), file.size()) ? std::string() : "cannot write " + path;
}

struct Case {
  const char* name;
  Edit edit;                            // nullptr: the folder as made
  std::vector<std::string> keywords;    // the error line must contain each
  std::vector<std::string> flags = {};  // after INPUT OUTPUT
};
// gtest prints a case by its name.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Exit code 1 from the converter itself (not a signal), stderr one line "kestrel-convert: error:
// ..." naming every keyword.
::testing::AssertionResult IsCleanError(const ProcessResult& r,
                                        const std::vector<std::string>& keywords) {
  if (!r.exited || r.exit_code != 1) {
    return ::testing::AssertionFailure() << "expected exit code 1, got " << Describe(r);
  }
  const std::string prefix = "kestrel-convert: error: ";
  if (r.err.compare(0, prefix.size(), prefix) != 0 || r.err.find('\n') != r.err.size() - 1) {
    return ::testing::AssertionFailure()
           << "expected one line '" << prefix << "...': " << Describe(r);
  }
  for (const std::string& k : keywords) {
    if (r.err.find(k) == std::string::npos) {
      return ::testing::AssertionFailure() << "error does not mention '" << k << "': " << r.err;
    }
  }
  return ::testing::AssertionSuccess();
}

class TinyBert : public ::testing::Test {
 protected:
  // The tiny checkpoint, shared with the other processes ctest starts (test_support.h).
  static void SetUpTestSuite() { make_error_ = test::MakeTinyBert("tiny-bert", "", &pristine_); }

  // A fresh copy of the tiny checkpoint in a scratch folder named after the case.
  std::string Copy(const std::string& name) {
    const std::string dir = test::ScratchPath("bert-" + name);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::copy(pristine_, dir, fs::copy_options::recursive, ec);
    EXPECT_FALSE(ec) << "cannot copy " << pristine_ << " to " << dir << ": " << ec.message();
    return dir;
  }

  static std::string pristine_;
  static std::string make_error_;
};
std::string TinyBert::pristine_;
std::string TinyBert::make_error_;

class HfCheckpointDamage : public TinyBert, public ::testing::WithParamInterface<Case> {};

// The checkpoint as made converts, so each refusal below is the damage's doing.
TEST_F(TinyBert, PristineConverts) {
  ASSERT_EQ(make_error_, "");
  const std::string out = test::ScratchPath("bert-pristine.kes");
  std::remove(out.c_str());
  const ProcessResult r = test::Convert({pristine_, out});
  EXPECT_TRUE(r.exited && r.exit_code == 0 && r.err.empty()) << Describe(r);
  EXPECT_TRUE(test::Exists(out));
  std::remove(out.c_str());
}

TEST_P(HfCheckpointDamage, RefusesClearlyLeavingNoOutput) {
  ASSERT_EQ(make_error_, "");
  const Case& c = GetParam();
  const std::string dir = Copy(c.name);
  if (c.edit) {
    ASSERT_EQ(c.edit(dir), "");
  }
  const std::string out = test::ScratchPath(std::string("bert-") + c.name + ".kes");
  std::remove(out.c_str());
  std::vector<std::string> args = {dir, out};
  args.insert(args.end(), c.flags.begin(), c.flags.end());
  EXPECT_TRUE(IsCleanError(test::Convert(args), c.keywords));
  EXPECT_FALSE(test::Exists(out)) << "a failed conversion left " << out;
  RemoveFolder(dir);
  std::remove(out.c_str());
}

const char kTensor[] = "encoder.layer.0.intermediate.dense.weight";  // [64, 32] in the file

INSTANTIATE_TEST_SUITE_P(
    Damaged, HfCheckpointDamage,
    ::testing::Values(
        // config.json
        Case{"config_not_json",
             Text("config.json", "hidden_size = 32\n"),
             {"config.json'", "expected well-formed JSON", "line 1, column 1"}},
        Case{"config_truncated",
             Truncated("config.json", 100),
             {"config.json'", "expected well-formed JSON"}},
        Case{"config_array",
             Text("config.json", "[]\n"),
             {"config.json'", "expected an object at the top level, found an array"}},
        Case{"config_missing",
             Removed({"config.json"}),
             {"expected a Hugging Face checkpoint folder", "found no config.json"}},
        Case{"config_duplicate_key",
             InsertAfterBrace("config.json", "\"hidden_size\": 32,"),
             {"config.json'", "duplicate key 'hidden_size'"}},
        Case{"hidden_size_missing",
             JsonEdit("config.json", [](json& j) { j.erase("hidden_size"); }),
             {"config.json: missing \"hidden_size\""}},
        Case{"hidden_size_string",
             JsonEdit("config.json", [](json& j) { j["hidden_size"] = "32"; }),
             {"config.json: \"hidden_size\": expected a whole number 1..65536, found \"32\""}},
        Case{"hidden_size_negative",
             JsonEdit("config.json", [](json& j) { j["hidden_size"] = -32; }),
             {"config.json: \"hidden_size\": expected a whole number", "found -32"}},
        Case{"hidden_size_fraction",
             JsonEdit("config.json", [](json& j) { j["hidden_size"] = 32.5; }),
             {"config.json: \"hidden_size\": expected a whole number", "found 32.5"}},
        Case{"heads_not_dividing",
             JsonEdit("config.json", [](json& j) { j["num_attention_heads"] = 5; }),
             {"config.json: hidden_size 32 is not a multiple of num_attention_heads 5"}},
        Case{"layer_norm_eps_zero",
             JsonEdit("config.json", [](json& j) { j["layer_norm_eps"] = 0; }),
             {"config.json: \"layer_norm_eps\": expected a positive number, found 0"}},
        Case{"model_type_gpt2",
             JsonEdit("config.json", [](json& j) { j["model_type"] = "gpt2"; }),
             {"config.json: model_type \"gpt2\" is not supported (supported: bert, roberta, "
              "xlm-roberta, whisper, and the decoders llama, mistral, qwen2, qwen3, smollm3, "
              "gemma2, gemma3 and phi3)"}},
        Case{"hidden_act_relu",
             JsonEdit("config.json", [](json& j) { j["hidden_act"] = "relu"; }),
             {"config.json: hidden_act \"relu\" is not supported", "gelu"}},
        Case{
            "relative_key_positions",
            JsonEdit("config.json", [](json& j) { j["position_embedding_type"] = "relative_key"; }),
            {"config.json: position_embedding_type \"relative_key\" is not supported", "absolute"}},
        Case{"vocab_size_past_embeddings",
             JsonEdit("config.json", [](json& j) { j["vocab_size"] = 1000; }),
             {"model.safetensors': tensor 'embeddings.word_embeddings.weight'",
              "expected shape [1000, 32] (from config.json)"}},
        // sentence-transformers files
        Case{"module_unknown",
             JsonEdit("modules.json",
                      [](json& j) { j[2]["type"] = "sentence_transformers.models.Dense"; }),
             {"modules.json: module 2: unsupported module 'sentence_transformers.models.Dense'",
              "Transformer, Pooling, Normalize"}},
        Case{"pooling_two_modes",
             JsonEdit("1_Pooling/config.json", [](json& j) { j["pooling_mode_cls_token"] = true; }),
             {"1_Pooling/config.json: expected exactly one of", "found 2"}},
        Case{"pooling_no_mode",
             JsonEdit("1_Pooling/config.json",
                      [](json& j) { j["pooling_mode_mean_tokens"] = false; }),
             {"1_Pooling/config.json: expected exactly one of", "found none"}},
        Case{"pooling_config_missing",
             Removed({"1_Pooling/config.json"}),
             {"cannot open", "1_Pooling/config.json'"}},
        Case{"max_seq_length_zero",
             JsonEdit("sentence_bert_config.json", [](json& j) { j["max_seq_length"] = 0; }),
             {"sentence_bert_config.json: max_seq_length: expected a whole number 3..65536",
              "found 0"}},
        Case{"max_seq_length_past_positions",
             JsonEdit("sentence_bert_config.json", [](json& j) { j["max_seq_length"] = 100; }),
             {"sentence_bert_config.json's max_seq_length 100: expected 3..64",
              "max_position_embeddings"}},
        // model.safetensors
        Case{"safetensors_empty",
             Text("model.safetensors", ""),
             {"model.safetensors': expected at least 8 bytes (the header length), found 0"}},
        Case{"safetensors_truncated",
             Truncated("model.safetensors", -100),
             {"model.safetensors': tensor '", "expected them within the data section",
              "found an end past it"}},
        Case{"safetensors_missing",
             Removed({"model.safetensors"}),
             {"model.safetensors or model.safetensors.index.json, found neither"}},
        Case{"header_length_past_end",
             HeaderLengthPastEnd,
             {"model.safetensors': header length", "runs past the end of the file"}},
        Case{"header_not_json",
             HeaderGarbled,
             {"model.safetensors': header: expected well-formed JSON"}},
        Case{"tensor_missing",
             Tensors([](json& h) { h.erase("encoder.layer.1.output.dense.weight"); }),
             {"no tensor 'encoder.layer.1.output.dense.weight'"}},
        Case{"tensor_wrong_shape",
             Tensors([](json& h) {
               h[kTensor]["shape"] = json::array({32, 64});
             }),
             {std::string("model.safetensors': tensor '") + kTensor + "'",
              "expected shape [64, 32] (from config.json), found [32, 64]"}},
        Case{"tensor_integers",
             Tensors([](json& h) { h["embeddings.LayerNorm.bias"]["dtype"] = "I32"; }),
             {"model.safetensors': tensor 'embeddings.LayerNorm.bias'",
              "cannot read I32 values as floats"}},
        // tokenizer files
        Case{"tokenizer_wordlevel",
             JsonEdit("tokenizer.json", [](json& j) { j["model"]["type"] = "WordLevel"; }),
             {"tokenizer.json': model.type: expected \"WordPiece\", \"Unigram\" or \"BPE\"",
              "found \"WordLevel\""}},
        // A WordPiece vocabulary called BPE: its "##" continuation has no place in a
        // byte-level BPE.
        Case{"tokenizer_bpe",
             JsonEdit("tokenizer.json", [](json& j) { j["model"]["type"] = "BPE"; }),
             {"model.continuing_subword_prefix: expected \"\" or null", "found \"##\""}},
        Case{"tokenizer_vocab_short",
             JsonEdit("tokenizer.json",
                      [](json& j) {
                        json& vocab = j["model"]["vocab"];
                        for (auto it = vocab.begin(); it != vocab.end(); ++it) {
                          if (*it == vocab.size() - 1) {
                            vocab.erase(it);
                            break;
                          }
                        }
                      }),
             {"tokenizer.json has", "tokens but config.json's vocab_size is"}},
        Case{"tokenizer_files_missing",
             Removed({"tokenizer.json", "vocab.txt"}),
             {"vocab.txt': cannot open", "a folder without tokenizer.json needs vocab.txt"}},
        // flags on a sound folder
        Case{"max_seq_length_flag",
             nullptr,
             {"--max-seq-length 5000: expected 3..64", "max_position_embeddings"},
             {"--max-seq-length", "5000"}},
        Case{"max_batch_zero",
             nullptr,
             {"--max-batch: expected a whole number from 1 to 65536, found '0'"},
             {"--max-batch", "0"}},
        Case{"max_batch_too_many_tokens",
             nullptr,
             {"a step of 4096 sequences of 48 tokens exceeds 65536 tokens"},
             {"--max-batch", "4096"}},
        Case{"weights_k_quant",
             nullptr,
             {"--weights q4_k_m", "GGUF input", "keep, f32, f16, bf16, q8 or q4"},
             {"--weights", "q4_k_m"}}),
    [](const auto& info) { return std::string(info.param.name); });

// Inputs that are no checkpoint folder at all.
TEST_F(TinyBert, EmptyFolder) {
  const std::string dir = test::ScratchPath("bert-empty"), out = dir + ".kes";
  ASSERT_TRUE(MakeEmptyFolder(dir));
  EXPECT_TRUE(
      IsCleanError(test::Convert({dir, out}),
                   {dir + ": expected a Hugging Face checkpoint folder", "found no config.json"}));
  EXPECT_FALSE(test::Exists(out));
  RemoveFolder(dir);
}

TEST_F(TinyBert, FileOfACheckpointInsteadOfItsFolder) {
  ASSERT_EQ(make_error_, "");
  const std::string out = test::ScratchPath("bert-file.kes");
  EXPECT_TRUE(IsCleanError(
      test::Convert({pristine_ + "/model.safetensors", out}),
      {"model.safetensors': not a GGUF file",
       "a Hugging Face checkpoint is converted from its folder: give '" + pristine_ + "'"}));
  EXPECT_FALSE(test::Exists(out));
}

// A CTranslate2 folder (faster-whisper's layout) is converted as Whisper: one without Whisper's
// variables gets a clear error, and a damaged model.bin gets the reader's message.
TEST_F(TinyBert, CTranslate2FolderIsReadAsWhisper) {
  const std::string dir = test::ScratchPath("ct2-folder"), out = dir + ".kes";
  ASSERT_TRUE(MakeEmptyFolder(dir));
  fs::copy_file(std::string(KESTREL_SOURCE_DIR) + "/fuzz/corpus/ct2_model/whisper-v6-f16.bin",
                dir + "/model.bin");
  // A fuzz seed: a WhisperSpec file without Whisper's encoder variables.
  EXPECT_TRUE(IsCleanError(test::Convert({dir, out}),
                           {dir + ": model.bin: expected encoder/conv1/weight"}));
  EXPECT_FALSE(test::Exists(out));
  std::ofstream(dir + "/model.bin", std::ios::binary | std::ios::trunc) << "garbage";
  EXPECT_TRUE(IsCleanError(test::Convert({dir, out}), {"model.bin", "binary version"}));
  EXPECT_FALSE(test::Exists(out));
  RemoveFolder(dir);
}

TEST_F(TinyBert, MissingPath) {
  const std::string missing = test::ScratchPath("bert-no-such-folder");
  const std::string out = missing + ".kes";
  EXPECT_TRUE(IsCleanError(test::Convert({missing, out}), {"cannot open", missing}));
  EXPECT_FALSE(test::Exists(out));
}

// A sound checkpoint whose output cannot be written.
TEST_F(TinyBert, OutputFolderMissing) {
  ASSERT_EQ(make_error_, "");
  const std::string out = test::ScratchPath("bert-no-such-folder") + "/out.kes";
  EXPECT_TRUE(IsCleanError(test::Convert({pristine_, out}), {"cannot create", out}));
  EXPECT_FALSE(test::Exists(out));
}

}  // namespace
}  // namespace kestrel
