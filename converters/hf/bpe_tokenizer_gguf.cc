// tokenizer.json's byte-level BPE as the tokenizer.ggml.* keys convert_hf_to_gguf.py writes
// (get_vocab_base and gguf-py's SpecialVocab), so that the GGUF tokenizer import reads a
// Hugging Face decoder folder exactly as it reads the GGUF made from it.
#include "converters/hf/decoder_gguf.h"
#include "converters/hf_json_fields.h"
#include "converters/safetensors/json_reader.h"

namespace kestrel {
namespace {

using hf::JsonNode;
using nlohmann::json;

// GGUF token types.
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

std::string Num(uint64_t v) { return std::to_string(v); }

// The expressions of Llama 3's and Qwen2's Split pre-tokenizers, as their tokenizer.json spell
// them; llama.cpp names them "llama-bpe" and "qwen2".
constexpr char kLlama3Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr char kQwen2Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// GPT-4o's (Phi-4-mini's tokenizer.json), llama.cpp's "gpt-4o".
constexpr char kGpt4oRegex[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

bool FieldIs(const JsonNode& node, const char* key, const json& value) {
  const JsonNode child = node.Child(key);
  return child.present() && *child.value == value;
}

struct Vocabulary {
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
};

Status ReadVocabulary(const JsonNode& root, uint32_t vocab_size, Vocabulary* v) {
  v->pieces.resize(vocab_size);
  v->types.assign(vocab_size, kUnused);
  for (uint32_t i = 0; i < vocab_size; ++i) v->pieces[i] = "[PAD" + Num(i) + "]";
  std::vector<bool> named(vocab_size, false);
  const auto name = [&](const JsonNode& where, uint64_t id, const std::string& piece,
                        int32_t type) {
    KES_CHECK_OR_RETURN(id < vocab_size, where.Where() + ": \"" + piece + "\" has id " + Num(id) +
                                             ", outside config.json's vocab_size of " +
                                             Num(vocab_size));
    KES_CHECK_OR_RETURN(!named[id] || v->pieces[id] == piece,
                        where.Where() + ": \"" + piece + "\" has id " + Num(id) + ", which \"" +
                            v->pieces[id] + "\" has too");
    v->pieces[id] = piece;
    v->types[id] = type;
    named[id] = true;
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(
      hf::ForEachVocabEntry(root, [&](const JsonNode& node, uint64_t id, const std::string& piece) {
        return name(node, id, piece, kNormal);
      }));
  if (root.Child("added_tokens").is_null()) return OkStatus();
  return hf::ForEachAddedToken(
      root, [&](const JsonNode& token, uint64_t id, std::string content, bool special) {
        int32_t type = kControl;
        if (!special && !LooksLikeSpecialToken(content)) {
          type = kUserDefined;
          content = SpacesForU2581(content);
        }
        KES_RETURN_IF_ERROR(name(token, id, content, type));
        return OkStatus();
      });
}

}  // namespace

// The llama.cpp pre-tokenizer name for tokenizer.json's pre_tokenizer: Llama 3's or Qwen2's
// Split expression then ByteLevel without its own expression, SmolLM's single digits then
// ByteLevel, or GPT-2's ByteLevel alone.
Status HfBpePreTokenizerName(const JsonNode& root, std::string* out) {
  const JsonNode pre = root.Child("pre_tokenizer");
  KES_RETURN_IF_ERROR(hf::ExpectType(pre, json::value_t::object));
  const auto byte_level = [](const JsonNode& node, bool own_regex) {
    return FieldIs(node, "type", "ByteLevel") && !FieldIs(node, "add_prefix_space", true) &&
           (own_regex ? !FieldIs(node, "use_regex", false) : FieldIs(node, "use_regex", false));
  };
  if (byte_level(pre, true)) {
    *out = "gpt2";
    return OkStatus();
  }
  const JsonNode list = pre.Child("pretokenizers");
  if (FieldIs(pre, "type", "Sequence") && list.present() && list.value->is_array() &&
      list.value->size() == 2) {
    JsonNode first = list, second = list;
    first.value = &(*list.value)[0];
    second.value = &(*list.value)[1];
    const JsonNode regex = first.Child("pattern").Child("Regex");
    if (FieldIs(first, "type", "Split") && FieldIs(first, "behavior", "Isolated") &&
        !FieldIs(first, "invert", true) && regex.present() && byte_level(second, false)) {
      if (*regex.value == kLlama3Regex) *out = "llama-bpe";
      if (*regex.value == kQwen2Regex) *out = "qwen2";
      if (*regex.value == kGpt4oRegex) *out = "gpt-4o";
      if (!out->empty()) return OkStatus();
    }
    if (FieldIs(first, "type", "Digits") && FieldIs(first, "individual_digits", true) &&
        byte_level(second, true)) {
      *out = "smollm";
      return OkStatus();
    }
  }
  return Status::Error(pre.Where() +
                       ": expected the byte-level pre-tokenizer of GPT-2, SmolLM, "
                       "Llama 3, Qwen2 or GPT-4o, found " +
                       pre.value->dump().substr(0, 400));
}

Status ReadHfBpeMerges(const JsonNode& model, std::vector<std::string>* out) {
  const JsonNode merges = model.Child("merges");
  KES_RETURN_IF_ERROR(hf::ExpectType(merges, json::value_t::array));
  out->reserve(merges.value->size());
  for (size_t i = 0; i < merges.value->size(); ++i) {
    const json& m = (*merges.value)[i];
    if (m.is_string()) {
      out->push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      // gguf-py joins pairs with a space, spelling a space inside a part as U+0120.
      std::string joined;
      for (int side = 0; side < 2; ++side) {
        if (side == 1) joined += ' ';
        for (char c : m[side].get<std::string>())
          joined += c == ' ' ? "\xc4\xa0" : std::string(1, c);
      }
      out->push_back(joined);
    } else {
      return Status::Error(merges.Where() + "[" + Num(i) +
                           "]: expected \"left right\" or [\"left\", \"right\"], found " +
                           safetensors::JsonKind(m));
    }
  }
  return OkStatus();
}

Status AddHfBpeTokenizer(const std::string& folder, uint32_t vocab_size,
                         const std::string& config_path, gguf::Builder* out) {
  json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(hf::OpenJsonObject(folder + "/tokenizer.json", &storage, &root));
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(hf::ExpectType(model, json::value_t::object));
  std::string type;
  KES_RETURN_IF_ERROR(hf::GetString(model.Child("type"), &type));
  KES_CHECK_OR_RETURN(type == "BPE", model.Child("type").Where() +
                                         ": expected \"BPE\" (byte-level), found \"" + type + "\"");
  KES_CHECK_OR_RETURN(!FieldIs(model, "byte_fallback", true),
                      model.Child("byte_fallback").Where() +
                          ": true (a SentencePiece-style BPE, as Llama 2 and Mistral 7B have) is "
                          "not read from Hugging Face folders; convert the model's GGUF instead");
  const JsonNode normalizer = root.Child("normalizer");
  KES_CHECK_OR_RETURN(normalizer.is_null() || FieldIs(normalizer, "type", "NFC"),
                      normalizer.Where() + ": expected null or NFC, found " +
                          (normalizer.present() ? normalizer.value->dump().substr(0, 200) : ""));
  std::string pre;
  KES_RETURN_IF_ERROR(HfBpePreTokenizerName(root, &pre));
  Vocabulary v;
  KES_RETURN_IF_ERROR(ReadVocabulary(root, vocab_size, &v));
  std::vector<std::string> merges;
  KES_RETURN_IF_ERROR(ReadHfBpeMerges(model, &merges));

  out->SetString("tokenizer.ggml.model", "gpt2");
  out->SetString("tokenizer.ggml.pre", pre);
  out->SetStringArray("tokenizer.ggml.tokens", v.pieces);
  out->SetInt32Array("tokenizer.ggml.token_type", v.types);
  out->SetStringArray("tokenizer.ggml.merges", merges);
  return AddHfSpecialTokens(folder, &root, vocab_size, config_path, out);
}

}  // namespace kestrel
