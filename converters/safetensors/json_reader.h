// Strict JSON for the files of a Hugging Face checkpoint (the safetensors header, the shard index,
// config.json and friends), on nlohmann-json.
//
// Stricter than the library's defaults in the two ways an untrusted file could mislead us:
//  - a key repeated in one object is an error (nlohmann silently keeps the last, so a file could
//    say two different things about one tensor and each reader would believe a different one);
//  - nesting deeper than kMaxJsonDepth is an error (nothing we read nests more than a few levels,
//    and code that walks the result recursively must not run out of stack).
// Errors say what was being parsed, then the library's "line L, column C: ..." explanation.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kestrel::safetensors {

inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value into *out. `what` names the text in messages ("the header of
// 'model.safetensors'"). When top_level_keys is given it receives the keys of a top-level object
// in the order the text writes them (nlohmann::json sorts them; ordered_json would keep the order
// but looks keys up linearly, quadratic in a hostile header).
Status ParseJson(std::string_view text, const std::string& what, nlohmann::json* out,
                 std::vector<std::string>* top_level_keys = nullptr);

// Reads and parses the file at `path`, which must hold one value of type `expected` (most
// Hugging Face files hold an object; sentence-transformers' modules.json an array).
Status ReadJson(const std::string& path, nlohmann::json::value_t expected, nlohmann::json* out);

// "an object", "an array", "a string", "a number", "a boolean", "null": for "expected X, found Y".
std::string JsonKind(const nlohmann::json& value);
std::string JsonKind(nlohmann::json::value_t type);

}  // namespace kestrel::safetensors
