// Typed access to the fields of a Hugging Face JSON file, with messages that name the file and
// the field path: "'m/tokenizer.json': model.max_input_chars_per_word: expected a non-negative
// integer, found the string \"100\"".
#pragma once

#include <cstdint>
#include <string>

#include "converters/safetensors/json_reader.h"
#include "runtime/status.h"

namespace kestrel::hf {

// A value inside a parsed file; `value` is null when the field is absent.
struct JsonNode {
  const nlohmann::json* value = nullptr;
  std::string file;  // the path, as given to Open
  std::string path;  // dotted field path; empty for the top level

  std::string Where() const;                     // "'file': path" (or "'file'" at the top level)
  JsonNode Child(const std::string& key) const;  // absent when this is not an object
  bool present() const { return value != nullptr; }
  bool is_null() const { return value == nullptr || value->is_null(); }
};

// Reads and parses `path` (strictly, see json_reader.h), which must hold an object.
Status OpenJsonObject(const std::string& path, nlohmann::json* storage, JsonNode* out);
// The same for a file a folder may lack: when `path` cannot be opened, *out stays absent (its
// children too) and the status is OK.
Status OpenOptionalJsonObject(const std::string& path, nlohmann::json* storage, JsonNode* out);

// Required fields: an error when absent or of another type.
Status GetString(const JsonNode& node, std::string* out);
Status GetBool(const JsonNode& node, bool* out);
Status GetUint(const JsonNode& node, uint64_t* out);
Status ExpectType(const JsonNode& node, nlohmann::json::value_t type);

// Calls fn(entry node, id, piece) for each entry of tokenizer.json's model.vocab (an object of
// piece -> id), stopping at the first error fn returns.
template <typename Fn>
Status ForEachVocabEntry(const JsonNode& root, Fn fn) {
  const JsonNode vocab = root.Child("model").Child("vocab");
  KES_RETURN_IF_ERROR(ExpectType(vocab, nlohmann::json::value_t::object));
  for (const auto& entry : vocab.value->items()) {
    const JsonNode node = vocab.Child(entry.key());
    uint64_t id = 0;
    KES_RETURN_IF_ERROR(GetUint(node, &id));
    KES_RETURN_IF_ERROR(fn(node, id, entry.key()));
  }
  return OkStatus();
}

// Calls fn(token node, id, content, special) for each entry of tokenizer.json's added_tokens,
// stopping at the first error fn returns; each entry must be an object with an id, a content
// string and a special flag.
template <typename Fn>
Status ForEachAddedToken(const JsonNode& root, Fn fn) {
  const JsonNode added = root.Child("added_tokens");
  KES_RETURN_IF_ERROR(ExpectType(added, nlohmann::json::value_t::array));
  for (size_t i = 0; i < added.value->size(); ++i) {
    JsonNode token = added;
    token.value = &(*added.value)[i];
    token.path = added.path + "[" + std::to_string(i) + "]";
    KES_RETURN_IF_ERROR(ExpectType(token, nlohmann::json::value_t::object));
    uint64_t id = 0;
    std::string content;
    bool special = false;
    KES_RETURN_IF_ERROR(GetUint(token.Child("id"), &id));
    KES_RETURN_IF_ERROR(GetString(token.Child("content"), &content));
    KES_RETURN_IF_ERROR(GetBool(token.Child("special"), &special));
    KES_RETURN_IF_ERROR(fn(token, id, content, special));
  }
  return OkStatus();
}

}  // namespace kestrel::hf
