// What `kestrel serve` was asked for, in plain types: the flag parser (serve_command.cc, which
// sees the runtime's headers) fills it and the server (which sees only the C API) reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel::server {

struct ServeOptions {
  std::string model_path;          // the text generator
  std::string embed_model_path;    // --embed-model; "" for none
  std::string rerank_model_path;   // --rerank-model; "" for none
  std::string whisper_model_path;  // --whisper-model; "" for none
  std::string host = "127.0.0.1";
  int port = 8080;        // 0: any free port (printed once listening)
  size_t parallel = 1;    // slots: sessions generating at once
  size_t queue = 0;       // requests that may wait for a slot; past it 503 (default 4 per slot)
  size_t context = 4096;  // tokens per slot
  size_t n_threads = 0;   // per slot; 0: the library's default
  // --template: the built-in chat format (gemma, chatml, llama3) instead of the model's own
  // Jinja template; "" for the model's.
  std::string chat_format;
  std::string api_key;                // "" accepts any bearer token, or none
  bool metrics = false;               // GET /metrics
  size_t max_body_bytes = 25u << 20;  // OpenAI's limit on audio uploads
  // Prints a byte count as `kestrel inspect` does ("1.50 MiB").
  std::string (*format_bytes)(uint64_t bytes) = nullptr;

  // `bytes` by format_bytes, or as a plain count ("1572864 B") without one.
  std::string Bytes(uint64_t bytes) const {
    return format_bytes != nullptr ? format_bytes(bytes) : std::to_string(bytes) + " B";
  }
};

// Loads the models, creates the slots and serves until SIGINT or SIGTERM; returns the exit code.
int RunServer(const ServeOptions& options);

}  // namespace kestrel::server
