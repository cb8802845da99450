// tokenizer.json's byte-level BPE as the tokenizer.ggml.* keys convert_hf_to_gguf.py writes
// (get_vocab_base and gguf-py's SpecialVocab), so that the GGUF tokenizer import reads a
// Hugging Face decoder folder exactly as it reads the GGUF made from it.
#include <fstream>
#include <sstream>

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

bool FieldIs(const JsonNode& node, const char* key, const json& value) {
  const JsonNode child = node.Child(key);
  return child.present() && *child.value == value;
}

// The llama.cpp pre-tokenizer name for tokenizer.json's pre_tokenizer: Llama 3's or Qwen2's
// Split expression then ByteLevel without its own expression, SmolLM's single digits then
// ByteLevel, or GPT-2's ByteLevel alone.
Status PreTokenizerName(const JsonNode& root, std::string* out) {
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
      if (!out->empty()) return OkStatus();
    }
    if (FieldIs(first, "type", "Digits") && FieldIs(first, "individual_digits", true) &&
        byte_level(second, true)) {
      *out = "smollm";
      return OkStatus();
    }
  }
  return Status::Error(pre.Where() + ": expected the byte-level pre-tokenizer of GPT-2, SmolLM, "
                                     "Llama 3 or Qwen2, found " +
                       pre.value->dump().substr(0, 400));
}

Status ReadMerges(const JsonNode& model, std::vector<std::string>* out) {
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
        for (char c : m[side].get<std::string>()) joined += c == ' ' ? "\xc4\xa0" : std::string(1, c);
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

// convert_hf_to_gguf.py's does_token_look_special.
bool LooksSpecial(const std::string& t) {
  const auto wrapped = [&](const std::string& open, const std::string& close) {
    return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
           t.compare(t.size() - close.size(), close.size(), close) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         wrapped("<|", "|>") || wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") ||
         wrapped("<unused", ">");
}

struct Vocabulary {
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
  std::vector<std::pair<std::string, int32_t>> added;  // content -> id, in file order
};

Status ReadVocabulary(const JsonNode& root, uint32_t vocab_size, Vocabulary* v) {
  v->pieces.resize(vocab_size);
  v->types.assign(vocab_size, kUnused);
  for (uint32_t i = 0; i < vocab_size; ++i) v->pieces[i] = "[PAD" + Num(i) + "]";
  std::vector<bool> named(vocab_size, false);
  const auto name = [&](const JsonNode& where, uint64_t id, const std::string& piece,
                        int32_t type) {
    KES_CHECK_OR_RETURN(id < vocab_size,
                        where.Where() + ": \"" + piece + "\" has id " + Num(id) +
                            ", outside config.json's vocab_size of " + Num(vocab_size));
    KES_CHECK_OR_RETURN(!named[id] || v->pieces[id] == piece,
                        where.Where() + ": \"" + piece + "\" has id " + Num(id) + ", which \"" +
                            v->pieces[id] + "\" has too");
    v->pieces[id] = piece;
    v->types[id] = type;
    named[id] = true;
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(hf::ForEachVocabEntry(
      root, [&](const JsonNode& node, uint64_t id, const std::string& piece) {
        return name(node, id, piece, kNormal);
      }));
  if (root.Child("added_tokens").is_null()) return OkStatus();
  return hf::ForEachAddedToken(root, [&](const JsonNode& token, uint64_t id, std::string content,
                                         bool special) {
    int32_t type = kControl;
    if (!special && !LooksSpecial(content)) {
      type = kUserDefined;
      // get_vocab_base pre-normalizes a user-defined token's U+2581 to a space.
      for (size_t at; (at = content.find("\xe2\x96\x81")) != std::string::npos;) {
        content.replace(at, 3, " ");
      }
    }
    KES_RETURN_IF_ERROR(name(token, id, content, type));
    v->added.emplace_back(content, static_cast<int32_t>(id));
    return OkStatus();
  });
}

// SpecialVocab: tokenizer_config.json's <typ>_token (a string or {"content": ...}) names an
// added token; config.json's <typ>_token_id fills in what it leaves unset.
struct SpecialTokens {
  int64_t bos = -1, eos = -1, unk = -1, pad = -1;
  int add_bos = -1, add_eos = -1;  // -1: not said
  std::string chat_template;
  bool has_chat_template = false;
};

std::string TokenContent(const JsonNode& node) {
  if (!node.present()) return "";
  if (node.value->is_string()) return node.value->get<std::string>();
  const JsonNode content = node.Child("content");
  return content.present() && content.value->is_string() ? content.value->get<std::string>() : "";
}

// The crude reading gguf-py gives a TemplateProcessing post-processor: the single-text template
// adds BOS when it starts with the BOS token.
void ReadPostProcessor(const JsonNode& root, const std::string& bos, SpecialTokens* s) {
  const JsonNode post = root.Child("post_processor");
  if (post.is_null() || !post.value->is_object()) return;
  std::vector<const json*> processors;
  const JsonNode list = post.Child("processors");
  if (list.present() && list.value->is_array()) {
    for (const json& p : *list.value) processors.push_back(&p);
  } else {
    processors.push_back(post.value);
  }
  for (const json* p : processors) {
    if (!p->is_object() || p->value("type", "") != "TemplateProcessing") continue;
    const auto single = p->find("single");
    if (single == p->end() || !single->is_array() || single->size() < 2) continue;
    const json& first = (*single)[0];
    const bool starts_special = first.is_object() && first.contains("SpecialToken") &&
                                first["SpecialToken"].is_object() &&
                                first["SpecialToken"].contains("id");
    if (starts_special) s->add_bos = first["SpecialToken"]["id"] == bos ? 1 : 0;
  }
}

Status ReadTextFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  KES_CHECK_OR_RETURN(in.good(), "'" + path + "': cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return OkStatus();
}

Status ReadSpecialTokens(const std::string& folder, const JsonNode& root, const Vocabulary& v,
                         const std::string& config_path, SpecialTokens* s) {
  const auto added_id = [&](const std::string& content) -> int64_t {
    for (const auto& [text, id] : v.added) {
      if (text == content) return id;
    }
    return -1;
  };
  json config_storage, storage;
  JsonNode tc;
  const std::string tc_path = folder + "/tokenizer_config.json";
  const bool has_tc = std::ifstream(tc_path).good();
  if (has_tc) KES_RETURN_IF_ERROR(hf::OpenJsonObject(tc_path, &storage, &tc));
  ReadPostProcessor(root, TokenContent(tc.Child("bos_token")), s);
  const std::pair<const char*, int64_t*> kinds[] = {
      {"bos", &s->bos}, {"eos", &s->eos}, {"unk", &s->unk}, {"pad", &s->pad}};
  for (const auto& [kind, id] : kinds) {
    const std::string content = TokenContent(tc.Child(std::string(kind) + "_token"));
    if (!content.empty()) *id = added_id(content);
  }
  for (const auto& [kind, flag] :
       {std::pair<const char*, int*>{"bos", &s->add_bos}, {"eos", &s->add_eos}}) {
    const JsonNode add = tc.Child(std::string("add_") + kind + "_token");
    if (add.present() && add.value->is_boolean()) *flag = add.value->get<bool>() ? 1 : 0;
  }
  const JsonNode chat = tc.Child("chat_template");
  if (chat.present() && chat.value->is_string()) {
    s->chat_template = chat.value->get<std::string>();
    s->has_chat_template = true;
  } else if (chat.present() && chat.value->is_array()) {
    for (const json& t : *chat.value) {  // named templates: the default one
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
          t["template"].is_string()) {
        s->chat_template = t["template"].get<std::string>();
        s->has_chat_template = true;
      }
    }
  } else if (std::ifstream(folder + "/chat_template.jinja").good()) {
    KES_RETURN_IF_ERROR(ReadTextFile(folder + "/chat_template.jinja", &s->chat_template));
    s->has_chat_template = true;
  }
  JsonNode config;
  KES_RETURN_IF_ERROR(hf::OpenJsonObject(config_path, &config_storage, &config));
  for (const auto& [kind, id] : kinds) {
    const JsonNode from_config = config.Child(std::string(kind) + "_token_id");
    if (*id < 0 && from_config.present() && from_config.value->is_number_unsigned()) {
      *id = from_config.value->get<int64_t>();
    }
  }
  return OkStatus();
}

}  // namespace

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
                                         ": expected \"BPE\" (byte-level), found \"" + type +
                                         "\"");
  KES_CHECK_OR_RETURN(!FieldIs(model, "byte_fallback", true),
                      model.Child("byte_fallback").Where() +
                          ": true (a SentencePiece-style BPE, as Llama 2 and Mistral 7B have) is "
                          "not read from Hugging Face folders; convert the model's GGUF instead");
  const JsonNode normalizer = root.Child("normalizer");
  KES_CHECK_OR_RETURN(normalizer.is_null() || FieldIs(normalizer, "type", "NFC"),
                      normalizer.Where() + ": expected null or NFC, found " +
                          (normalizer.present() ? normalizer.value->dump().substr(0, 200) : ""));
  std::string pre;
  KES_RETURN_IF_ERROR(PreTokenizerName(root, &pre));
  Vocabulary v;
  KES_RETURN_IF_ERROR(ReadVocabulary(root, vocab_size, &v));
  std::vector<std::string> merges;
  KES_RETURN_IF_ERROR(ReadMerges(model, &merges));
  SpecialTokens s;
  KES_RETURN_IF_ERROR(ReadSpecialTokens(folder, root, v, config_path, &s));

  out->SetString("tokenizer.ggml.model", "gpt2");
  out->SetString("tokenizer.ggml.pre", pre);
  out->SetStringArray("tokenizer.ggml.tokens", v.pieces);
  out->SetInt32Array("tokenizer.ggml.token_type", v.types);
  out->SetStringArray("tokenizer.ggml.merges", merges);
  const std::pair<const char*, int64_t> ids[] = {{"tokenizer.ggml.bos_token_id", s.bos},
                                                 {"tokenizer.ggml.eos_token_id", s.eos},
                                                 {"tokenizer.ggml.unknown_token_id", s.unk},
                                                 {"tokenizer.ggml.padding_token_id", s.pad}};
  for (const auto& [key, id] : ids) {
    if (id >= 0 && id < vocab_size) out->SetUint32(key, static_cast<uint32_t>(id));
  }
  if (s.add_bos >= 0) out->SetBool("tokenizer.ggml.add_bos_token", s.add_bos == 1);
  if (s.add_eos >= 0) out->SetBool("tokenizer.ggml.add_eos_token", s.add_eos == 1);
  if (s.has_chat_template) out->SetString("tokenizer.chat_template", s.chat_template);
  return OkStatus();
}

}  // namespace kestrel
