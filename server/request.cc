#include "server/request.h"

#include <nlohmann/json.hpp>
#include <string>

namespace kestrel::server {
namespace {

using nlohmann::json;

const char* TypeName(const json& v) { return v.type_name(); }

ApiError WrongType(const std::string& field, const char* expected, const json& v) {
  return InvalidRequest(field + ": expected " + expected + ", got " + TypeName(v), field,
                        "invalid_type");
}

ApiError ReadNumber(const json& body, const char* field, double min, double max, double* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_number()) return WrongType(field, "a number", *it);
  const double v = it->get<double>();
  if (!(v >= min && v <= max)) {
    return InvalidRequest(std::string(field) + ": expected a number in [" + json(min).dump() +
                              ", " + json(max).dump() + "], got " + it->dump(),
                          field, "invalid_value");
  }
  *out = v;
  return {};
}

ApiError ReadInteger(const json& body, const char* field, int64_t min, int64_t max, int64_t* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_number_integer()) return WrongType(field, "an integer", *it);
  const bool is_unsigned = it->is_number_unsigned();
  const int64_t v = is_unsigned && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : it->get<int64_t>();
  if (v < min || v > max) {
    return InvalidRequest(std::string(field) + ": expected an integer in [" + std::to_string(min) +
                              ", " + std::to_string(max) + "], got " + it->dump(),
                          field, "invalid_value");
  }
  *out = v;
  return {};
}

ApiError ReadBool(const json& body, const char* field, bool* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_boolean()) return WrongType(field, "true or false", *it);
  *out = it->get<bool>();
  return {};
}

ApiError ReadStop(const json& body, std::vector<std::string>* stop) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_string()) {
    if (!it->get_ref<const std::string&>().empty()) stop->push_back(it->get<std::string>());
    return {};
  }
  if (!it->is_array()) return WrongType("stop", "a string or a list of strings", *it);
  if (it->size() > 4) {
    return InvalidRequest("stop: expected at most 4 sequences, got " + std::to_string(it->size()),
                          "stop", "invalid_value");
  }
  for (const json& s : *it) {
    if (!s.is_string()) return WrongType("stop", "a string or a list of strings", s);
    if (!s.get_ref<const std::string&>().empty()) stop->push_back(s.get<std::string>());
  }
  return {};
}

// A message's content: a string, or a list of {"type": "text", "text": ...} parts.
ApiError ReadContent(const json& v, const std::string& field, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return {};
  }
  if (!v.is_array()) return WrongType(field, "a string or a list of text parts", v);
  for (const json& part : v) {
    if (!part.is_object()) return WrongType(field, "a string or a list of text parts", part);
    const auto type = part.find("type");
    const auto text = part.find("text");
    if (type == part.end() || *type != "text") {
      return InvalidRequest(field + ": only text parts are supported (type \"text\"), got " +
                                (type == part.end() ? std::string("none") : type->dump()),
                            field, "unsupported_content");
    }
    if (text == part.end() || !text->is_string()) {
      return WrongType(field + ".text", "a string", text == part.end() ? json() : *text);
    }
    *out += text->get<std::string>();
  }
  return {};
}

ApiError ReadMessages(const json& body, std::vector<Message>* messages) {
  const auto it = body.find("messages");
  if (it == body.end()) return InvalidRequest("messages: required", "messages", "missing");
  if (!it->is_array()) return WrongType("messages", "a list of messages", *it);
  if (it->empty()) {
    return InvalidRequest("messages: expected at least one message, got an empty list", "messages",
                          "empty");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(field, "an object", m);
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return WrongType(field + ".role", "a string", role == m.end() ? json() : *role);
    }
    Message message;
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      return InvalidRequest(
          field + ".role: expected system, developer, user or assistant, got " + role->dump(),
          field + ".role", "invalid_value");
    }
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      return InvalidRequest(field + ".content: required", field + ".content", "missing");
    }
    ApiError e = ReadContent(*content, field + ".content", &message.content);
    if (!e.ok()) return e;
    messages->push_back(std::move(message));
  }
  return {};
}

ApiError ReadPrompt(const json& body, GenerationRequest* out) {
  const auto it = body.find("prompt");
  if (it == body.end()) return InvalidRequest("prompt: required", "prompt", "missing");
  const char* expected = "a string, a list of one string, or a list of token ids";
  if (it->is_string()) {
    out->prompt = it->get<std::string>();
    return {};
  }
  if (!it->is_array() || it->empty()) return WrongType("prompt", expected, *it);
  if ((*it)[0].is_string()) {
    if (it->size() != 1) {
      return InvalidRequest(
          "prompt: one prompt per request is supported, got " + std::to_string(it->size()),
          "prompt", "invalid_value");
    }
    out->prompt = (*it)[0].get<std::string>();
    return {};
  }
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return WrongType("prompt", expected, t);
    }
    out->prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  out->prompt_is_tokens = true;
  return {};
}

}  // namespace

ApiError ParseGenerationRequest(const json& body, bool chat, GenerationRequest* out) {
  if (!body.is_object()) return WrongType("body", "a JSON object", body);
  out->chat = chat;
  ApiError e;
  if (const auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("model", "a string", *it);
    out->model = it->get<std::string>();
  }
  e = chat ? ReadMessages(body, &out->messages) : ReadPrompt(body, out);
  if (!e.ok()) return e;
  if (e = ReadBool(body, "stream", &out->stream); !e.ok()) return e;
  if (const auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("stream_options", "an object", *it);
    if (e = ReadBool(*it, "include_usage", &out->include_usage); !e.ok()) {
      e.message.insert(0, "stream_options.");
      e.param = "stream_options.include_usage";
      return e;
    }
  }
  double v = out->temperature;
  if (e = ReadNumber(body, "temperature", 0, 2, &v); !e.ok()) return e;
  out->temperature = static_cast<float>(v);
  v = out->top_p;
  if (e = ReadNumber(body, "top_p", 0, 1, &v); !e.ok()) return e;
  if (v <= 0) return InvalidRequest("top_p: expected a number in (0, 1], got 0", "top_p");
  out->top_p = static_cast<float>(v);
  int64_t i = out->top_k;
  if (e = ReadInteger(body, "top_k", 0, 1 << 20, &i); !e.ok()) return e;
  out->top_k = static_cast<int32_t>(i);
  i = 0;
  if (e = ReadInteger(body, "seed", INT64_MIN, INT64_MAX, &i); !e.ok()) return e;
  out->seed = static_cast<uint64_t>(i);
  int64_t n = 1;
  if (e = ReadInteger(body, "n", 1, 1, &n); !e.ok()) return e;
  // max_completion_tokens is the newer name of max_tokens; either bounds the reply.
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    if (e = ReadInteger(body, field, 1, int64_t{1} << 30, &out->max_tokens); !e.ok()) return e;
  }
  const auto kwargs = body.find("chat_template_kwargs");
  if (const auto it = kwargs; chat && it != body.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("chat_template_kwargs", "an object", *it);
    if (const auto thinking = it->find("enable_thinking");
        thinking != it->end() && !thinking->is_null()) {
      if (!thinking->is_boolean()) {
        return WrongType("chat_template_kwargs.enable_thinking", "true or false", *thinking);
      }
      out->enable_thinking = thinking->get<bool>();
    }
  }
  return ReadStop(body, &out->stop);
}

}  // namespace kestrel::server
