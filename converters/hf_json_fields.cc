#include "converters/hf_json_fields.h"

#include <fstream>

namespace kestrel::hf {

using nlohmann::json;

std::string JsonNode::Where() const {
  return "'" + file + "'" + (path.empty() ? std::string() : ": " + path);
}

JsonNode JsonNode::Child(const std::string& key) const {
  JsonNode child{nullptr, file, path.empty() ? key : path + "." + key};
  if (value != nullptr && value->is_object()) {
    const auto it = value->find(key);
    if (it != value->end()) child.value = &*it;
  }
  return child;
}

Status OpenJsonObject(const std::string& path, json* storage, JsonNode* out) {
  KES_RETURN_IF_ERROR(safetensors::ReadJson(path, json::value_t::object, storage));
  *out = JsonNode{storage, path, ""};
  return OkStatus();
}

Status OpenOptionalJsonObject(const std::string& path, json* storage, JsonNode* out) {
  *out = JsonNode{nullptr, path, ""};
  if (!std::ifstream(path).good()) return OkStatus();
  return OpenJsonObject(path, storage, out);
}

Status ExpectType(const JsonNode& node, json::value_t type) {
  KES_CHECK_OR_RETURN(node.present(), node.Where() + ": expected " + safetensors::JsonKind(type) +
                                          ", found no such field");
  const bool number = type == json::value_t::number_unsigned;
  const bool ok = number ? node.value->is_number_unsigned() ||
                               (node.value->is_number_integer() && node.value->get<int64_t>() >= 0)
                         : node.value->type() == type;
  KES_CHECK_OR_RETURN(
      ok, node.Where() + ": expected " +
              (number ? std::string("a non-negative integer") : safetensors::JsonKind(type)) +
              ", found " + safetensors::JsonKind(*node.value));
  return OkStatus();
}

Status GetString(const JsonNode& node, std::string* out) {
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::string));
  *out = node.value->get<std::string>();
  return OkStatus();
}

Status GetBool(const JsonNode& node, bool* out) {
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::boolean));
  *out = node.value->get<bool>();
  return OkStatus();
}

Status GetUint(const JsonNode& node, uint64_t* out) {
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::number_unsigned));
  *out = node.value->get<uint64_t>();
  return OkStatus();
}

}  // namespace kestrel::hf
