// Typed access to the fields of a Hugging Face JSON file, with messages that name the file and
// the field path: "'m/tokenizer.json': model.max_input_chars_per_word: expected a non-negative
// integer, found the string \"100\"".
#pragma once

#include <cstdint>
#include <string>

#include "converters/safetensors/json_reader.h"

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

// Required fields: an error when absent or of another type.
Status GetString(const JsonNode& node, std::string* out);
Status GetBool(const JsonNode& node, bool* out);
Status GetUint(const JsonNode& node, uint64_t* out);
Status ExpectType(const JsonNode& node, nlohmann::json::value_t type);

}  // namespace kestrel::hf
