// POST /tokenize and /detokenize, as llama-server has them: {"content": TEXT, "add_special":
// false, "parse_special": true} gives {"tokens": [...]}; {"tokens": [...]} gives
// {"content": TEXT}.
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/server_state.h"

namespace kestrel::server {
namespace {

using nlohmann::json;

ApiError CheckModel(const ServerState& state, const json& body) {
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_string()) {
    return InvalidRequest(std::string("model: expected a string, got ") + it->type_name(), "model",
                          "invalid_type");
  }
  if (*it != state.text_model_id) {
    return NotFound("The model '" + it->get<std::string>() + "' does not exist", "model",
                    "model_not_found");
  }
  return {};
}

ApiError ReadFlag(const json& body, const char* field, bool* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_boolean()) {
    return InvalidRequest(std::string(field) + ": expected true or false, got " + it->type_name(),
                          field, "invalid_type");
  }
  *out = it->get<bool>();
  return {};
}

void Tokenize(const ServerState& state, const httplib::Request& req, httplib::Response& res) {
  json body;
  ApiError e = ParseJsonObject(req, &body);
  if (e.ok()) e = CheckModel(state, body);
  bool add_special = false, parse_special = true;
  if (e.ok()) e = ReadFlag(body, "add_special", &add_special);
  if (e.ok()) e = ReadFlag(body, "parse_special", &parse_special);
  const auto content = body.find("content");
  if (e.ok() && (content == body.end() || !content->is_string())) {
    e = InvalidRequest(std::string("content: expected a string, got ") +
                           (content == body.end() ? "none" : content->type_name()),
                       "content", "invalid_type");
  }
  if (!e.ok()) return SendError(res, e);
  const uint32_t flags =
      (add_special ? kestrel::kAddSpecial : 0u) | (parse_special ? kestrel::kParseSpecial : 0u);
  Result<std::vector<int32_t>> ids =
      state.text_model->Tokenize(content->get_ref<const std::string&>(), flags);
  if (!ids.ok()) return SendError(res, InvalidRequest(ids.status().message(), "content"));
  SendJson(res, json({{"tokens", *ids}}).dump());
}

void Detokenize(const ServerState& state, const httplib::Request& req, httplib::Response& res) {
  json body;
  ApiError e = ParseJsonObject(req, &body);
  if (e.ok()) e = CheckModel(state, body);
  std::vector<int32_t> ids;
  const auto tokens = body.find("tokens");
  if (e.ok() && (tokens == body.end() || !tokens->is_array())) {
    e = InvalidRequest(std::string("tokens: expected a list of token ids, got ") +
                           (tokens == body.end() ? "none" : tokens->type_name()),
                       "tokens", "invalid_type");
  }
  if (e.ok()) {
    for (const json& t : *tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<uint64_t>() >= state.n_vocab) {
        e = InvalidRequest(
            "tokens: expected ids in [0, " + std::to_string(state.n_vocab) + "), got " + t.dump(),
            "tokens", "invalid_value");
        break;
      }
      ids.push_back(t.get<int32_t>());
    }
  }
  if (!e.ok()) return SendError(res, e);
  Result<std::string> text = state.text_model->Detokenize(ids);
  if (!text.ok()) return SendError(res, InvalidRequest(text.status().message(), "tokens"));
  SendJson(res, json({{"content", *text}}).dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

void AddTokenRoutes(httplib::Server& http, ServerState& state) {
  http.Post("/tokenize", [&state](const httplib::Request& req, httplib::Response& res) {
    Tokenize(state, req, res);
  });
  http.Post("/detokenize", [&state](const httplib::Request& req, httplib::Response& res) {
    Detokenize(state, req, res);
  });
}

ApiError ParseJsonObject(const httplib::Request& req, json* body) {
  try {
    *body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    return InvalidRequest(std::string("the body is not valid JSON: ") + e.what(), "",
                          "invalid_json");
  }
  if (!body->is_object()) {
    return InvalidRequest(std::string("body: expected a JSON object, got ") + body->type_name(), "",
                          "invalid_type");
  }
  return {};
}

}  // namespace kestrel::server
