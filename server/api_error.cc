#include "server/api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace kestrel::server {
namespace {

ApiError Make(int status, const char* type, std::string message, std::string param,
              std::string code) {
  return ApiError{status, std::move(message), type, std::move(param), std::move(code)};
}

nlohmann::json OrNull(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

ApiError InvalidRequest(std::string message, std::string param, std::string code) {
  return Make(400, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}
ApiError NotFound(std::string message, std::string param, std::string code) {
  return Make(404, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}
ApiError ServerError(std::string message) {
  return Make(500, "server_error", std::move(message), "", "");
}
ApiError Unavailable(std::string message, std::string code) {
  return Make(503, "server_error", std::move(message), "", std::move(code));
}
ApiError NoModel(const std::string& what, const std::string& flag) {
  return NotFound("this server has no " + what + " (start it with " + flag + ")", "model",
                  "model_not_found");
}

std::string ErrorBody(const ApiError& error) {
  const nlohmann::json body = {{"error",
                                {{"message", error.message},
                                 {"type", error.type},
                                 {"param", OrNull(error.param)},
                                 {"code", OrNull(error.code)}}}};
  // Messages may quote request text that is not valid UTF-8.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kestrel::server
