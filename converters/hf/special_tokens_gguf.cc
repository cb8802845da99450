// The special tokens of a Hugging Face decoder folder as gguf-py's SpecialVocab writes them:
// tokenizer_config.json's <kind>_token (a string or {"content": ...}) names one of
// tokenizer.json's added tokens; config.json's <kind>_token_id fills in what it leaves unset;
// add_bos_token / add_eos_token from tokenizer_config.json, or the post-processor's template; the
// chat template from tokenizer_config.json or chat_template.jinja.
#include <fstream>
#include <map>
#include <sstream>

#include "converters/hf/decoder_gguf.h"
#include "converters/hf_json_fields.h"

namespace kestrel {
namespace {

using hf::JsonNode;
using nlohmann::json;

struct SpecialTokens {
  int64_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1;
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

// The crude reading gguf-py gives a TemplateProcessing post-processor, on the token contents
// tokenizer_config.json names (`contents`: kind -> content; `has_config`: whether it exists).
// The single-text template adds BOS when it starts with the BOS token; when it ends with a
// special token, that token becomes EOS and is added (a different EOS of tokenizer_config.json
// becomes the end of turn: Qwen3-Embedding appends <|endoftext|> after its <|im_end|> EOS).
void ReadPostProcessor(const JsonNode& root, bool has_config,
                       std::map<std::string, std::string>* contents, SpecialTokens* s) {
  const JsonNode post = root.Child("post_processor");
  if (post.is_null() || !post.value->is_object()) return;
  std::vector<const json*> processors;
  const JsonNode list = post.Child("processors");
  if (list.present() && list.value->is_array()) {
    for (const json& p : *list.value) processors.push_back(&p);
  } else {
    processors.push_back(post.value);
  }
  const auto special_id = [](const json& item) -> std::string {
    if (!item.is_object() || !item.contains("SpecialToken")) return "";
    const json& t = item["SpecialToken"];
    return t.is_object() && t.contains("id") && t["id"].is_string() ? t["id"].get<std::string>()
                                                                    : "";
  };
  for (const json* p : processors) {
    if (!p->is_object() || p->value("type", "") != "TemplateProcessing") continue;
    const auto single = p->find("single");
    if (single == p->end() || !single->is_array() || single->size() < 2) continue;
    const std::string first = special_id(single->front()), last = special_id(single->back());
    if (!first.empty()) {
      if (!has_config) (*contents)["bos"] = first;
      s->add_bos = first == (*contents)["bos"] ? 1 : 0;
    }
    if (!last.empty()) {
      if (!has_config) {
        (*contents)["eos"] = last;
      } else if (last != (*contents)["eos"]) {
        (*contents)["eot"] = (*contents)["eos"];
        (*contents)["eos"] = last;
      }
      s->add_eos = 1;
    }
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

Status ReadSpecialTokens(const std::string& folder, const JsonNode& root,
                         const std::string& config_path, SpecialTokens* s) {
  // The first of tokenizer.json's added tokens with that content, as gguf-py looks it up.
  const auto added_id = [&](const std::string& content) -> int64_t {
    const JsonNode added = root.Child("added_tokens");
    if (!added.present() || !added.value->is_array()) return -1;
    for (const json& t : *added.value) {
      if (t.is_object() && t.value("content", "") == content && t.contains("id") &&
          t["id"].is_number_unsigned()) {
        return t["id"].get<int64_t>();
      }
    }
    return -1;
  };
  json config_storage, storage;
  JsonNode tc;
  KES_RETURN_IF_ERROR(hf::OpenOptionalJsonObject(folder + "/tokenizer_config.json", &storage, &tc));
  const bool has_tc = tc.present();
  std::map<std::string, std::string> contents;
  for (const char* kind : {"bos", "eos", "unk", "pad"}) {
    contents[kind] = TokenContent(tc.Child(std::string(kind) + "_token"));
  }
  ReadPostProcessor(root, has_tc, &contents, s);
  const std::pair<const char*, int64_t*> kinds[] = {
      {"bos", &s->bos}, {"eos", &s->eos}, {"unk", &s->unk}, {"pad", &s->pad}, {"eot", &s->eot}};
  for (const auto& [kind, id] : kinds) {
    if (!contents[kind].empty()) *id = added_id(contents[kind]);
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
    // A multimodal model's ids may sit in its text_config only.
    JsonNode from_config = config.Child(std::string(kind) + "_token_id");
    if (from_config.is_null())
      from_config = config.Child("text_config").Child(std::string(kind) + "_token_id");
    if (*id < 0 && from_config.present() && from_config.value->is_number_unsigned()) {
      *id = from_config.value->get<int64_t>();
    }
  }
  return OkStatus();
}

}  // namespace

Status ReadGenerationStopIds(const std::string& folder, size_t vocab_size,
                             std::vector<int32_t>* out) {
  json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(
      hf::OpenOptionalJsonObject(folder + "/generation_config.json", &storage, &root));
  const JsonNode eos = root.Child("eos_token_id");
  if (eos.is_null()) return OkStatus();
  std::vector<const json*> ids;
  if (eos.value->is_array()) {
    for (const json& id : *eos.value) ids.push_back(&id);
  } else {
    ids.push_back(eos.value);
  }
  for (const json* id : ids) {
    KES_CHECK_OR_RETURN(id->is_number_unsigned() && id->get<uint64_t>() < vocab_size,
                        eos.Where() + ": expected token ids below the vocabulary's " +
                            std::to_string(vocab_size) + ", found " + id->dump());
    out->push_back(static_cast<int32_t>(id->get<uint64_t>()));
  }
  return OkStatus();
}

bool LooksLikeSpecialToken(const std::string& t) {
  const auto wrapped = [&](const std::string& open, const std::string& close) {
    return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
           t.compare(t.size() - close.size(), close.size(), close) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

std::string SpacesForU2581(std::string token) {
  for (size_t at; (at = token.find("\xe2\x96\x81")) != std::string::npos;) {
    token.replace(at, 3, " ");
  }
  return token;
}

Status AddHfSpecialTokens(const std::string& folder, const hf::JsonNode* tokenizer_json,
                          uint32_t vocab_size, const std::string& config_path, gguf::Builder* out) {
  SpecialTokens s;
  KES_RETURN_IF_ERROR(
      ReadSpecialTokens(folder, tokenizer_json ? *tokenizer_json : JsonNode(), config_path, &s));
  const std::pair<const char*, int64_t> ids[] = {{"tokenizer.ggml.bos_token_id", s.bos},
                                                 {"tokenizer.ggml.eos_token_id", s.eos},
                                                 {"tokenizer.ggml.unknown_token_id", s.unk},
                                                 {"tokenizer.ggml.padding_token_id", s.pad},
                                                 {"tokenizer.ggml.eot_token_id", s.eot}};
  for (const auto& [key, id] : ids) {
    if (id >= 0 && id < vocab_size) out->SetUint32(key, static_cast<uint32_t>(id));
  }
  if (s.add_bos >= 0) out->SetBool("tokenizer.ggml.add_bos_token", s.add_bos == 1);
  if (s.add_eos >= 0) out->SetBool("tokenizer.ggml.add_eos_token", s.add_eos == 1);
  if (s.has_chat_template) out->SetString("tokenizer.chat_template", s.chat_template);
  return OkStatus();
}

}  // namespace kestrel
