#include "converters/safetensors/json_reader.h"

#include <set>

#include "runtime/mapped_file.h"

namespace kestrel::safetensors {
namespace {

using nlohmann::json;

// Watches the parser's events for repeated keys and excessive nesting. The callback cannot stop
// the parser without throwing, so it records the first problem and ParseJson reports it after.
class KeyChecker {
 public:
  explicit KeyChecker(std::vector<std::string>* top_level_keys) : top_level_(top_level_keys) {}

  bool OnEvent(int depth, json::parse_event_t event, const json& parsed) {
    if (depth > kMaxJsonDepth && problem_.empty()) {
      problem_ =
          "expected at most " + std::to_string(kMaxJsonDepth) + " levels of nesting, found more";
    }
    switch (event) {
      case json::parse_event_t::object_start: frames_.emplace_back(); break;
      case json::parse_event_t::object_end: frames_.pop_back(); break;
      case json::parse_event_t::key: OnKey(depth, parsed.get_ref<const std::string&>()); break;
      default: break;
    }
    return true;
  }
  const std::string& problem() const { return problem_; }

 private:
  struct Frame {
    std::set<std::string> keys;
    std::string last_key;  // names this object's children in messages
  };

  void OnKey(int depth, const std::string& key) {
    if (frames_.empty()) return;  // cannot happen: keys come inside objects
    Frame& frame = frames_.back();
    if (!frame.keys.insert(key).second && problem_.empty()) {
      problem_ = "duplicate key '" + key + "'";
      if (frames_.size() >= 2) problem_ += " in the object of '" + frames_.end()[-2].last_key + "'";
      problem_ += " (each key may appear once)";
    }
    frame.last_key = key;
    if (depth == 1 && frames_.size() == 1 && top_level_ != nullptr) top_level_->push_back(key);
  }

  std::vector<Frame> frames_;
  std::vector<std::string>* top_level_;
  std::string problem_;
};

}  // namespace

std::string JsonKind(json::value_t type) {
  switch (type) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    case json::value_t::null: return "null";
    default: return "no value";
  }
}

std::string JsonKind(const json& value) {
  if (value.is_number()) return "the number " + value.dump();
  if (value.is_string()) return "the string " + value.dump();
  return JsonKind(value.type());
}

Status ParseJson(std::string_view text, const std::string& what, json* out,
                 std::vector<std::string>* top_level_keys) {
  if (top_level_keys != nullptr) top_level_keys->clear();
  KeyChecker checker(top_level_keys);
  json::parser_callback_t callback = [&checker](int depth, json::parse_event_t event,
                                                json& parsed) {
    return checker.OnEvent(depth, event, parsed);
  };
  // nlohmann reports syntax errors (and invalid UTF-8) only by exception; none escapes here.
  try {
    *out = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    std::string message = e.what();  // "[json.exception.parse_error.101] parse error at line..."
    const size_t tag_end = message.find("] ");
    if (tag_end != std::string::npos) message.erase(0, tag_end + 2);
    *out = json();
    return Status::Error(what + ": expected well-formed JSON, found a " + message);
  }
  if (!checker.problem().empty()) {
    *out = json();
    return Status::Error(what + ": " + checker.problem());
  }
  return OkStatus();
}

Status ReadJson(const std::string& path, json::value_t expected, json* out) {
  std::unique_ptr<MappedFile> file;
  KES_RETURN_IF_ERROR(MappedFile::Open(path, &file));
  const std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  KES_RETURN_IF_ERROR(ParseJson(text, "'" + path + "'", out));
  if (out->type() != expected) {
    const std::string found = JsonKind(out->type());
    *out = json();
    return Status::Error("'" + path + "': expected " + JsonKind(expected) +
                         " at the top level, found " + found);
  }
  return OkStatus();
}

}  // namespace kestrel::safetensors
