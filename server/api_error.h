// OpenAI-style errors: {"error": {"message", "type", "param", "code"}} with an HTTP status.
#pragma once

#include <string>

namespace kestrel::server {

struct ApiError {
  int status = 0;  // 0: no error
  std::string message;
  std::string type;   // "invalid_request_error", "authentication_error", "server_error", ...
  std::string param;  // the request field at fault; "" for none (null in the JSON)
  std::string code;   // a stable machine-readable code; "" for none (null in the JSON)

  bool ok() const { return status == 0; }
};

// 400 invalid_request_error about `param`.
ApiError InvalidRequest(std::string message, std::string param = "", std::string code = "");
ApiError NotFound(std::string message, std::string param = "", std::string code = "");
ApiError ServerError(std::string message);
ApiError Unavailable(std::string message, std::string code);
// 404 for an endpoint whose model the server was started without: `what` it lacks ("speech
// model") and the flag that would load one ("--whisper-model W.kes").
ApiError NoModel(const std::string& what, const std::string& flag);

// The JSON body of an error.
std::string ErrorBody(const ApiError& error);

}  // namespace kestrel::server
