// The generation requests of /v1/completions and /v1/chat/completions, read from their JSON
// and checked field by field: a wrong type or an out-of-range value is a 400 naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"

namespace kestrel::server {

struct Message {
  std::string role;  // system, user or assistant ("developer" is read as system)
  std::string content;
};

struct GenerationRequest {
  bool chat = false;
  std::string model;  // "" when the request named none: the server's text model
  // /v1/completions: the prompt as text, or as token ids when prompt_is_tokens.
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  bool prompt_is_tokens = false;
  std::vector<Message> messages;  // /v1/chat/completions
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  float temperature = 0.8f;    // kestrel's default, as `kestrel run` and llama-server
  float top_p = 0.95f;
  int32_t top_k = 40;  // not OpenAI's; llama-server's extension
  uint64_t seed = 0;
  int64_t max_tokens = -1;  // -1: up to the end of the context
  std::vector<std::string> stop;
  // chat_template_kwargs.enable_thinking (llama-server's extension; vLLM's too): the chat
  // template's enable_thinking, unset when the request does not give it.
  std::optional<bool> enable_thinking;
};

// Reads `body` (already parsed JSON) into *out.
ApiError ParseGenerationRequest(const nlohmann::json& body, bool chat, GenerationRequest* out);

}  // namespace kestrel::server
