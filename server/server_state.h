// What every handler of `kestrel serve` shares: the options, the models once loaded, the slots
// and the counters /metrics reports.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kestrel/kestrel.hpp"
#include "server/handle_pool.h"
#include "server/options.h"
#include "server/slot_pool.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace kestrel::server {

struct Metrics {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> prompt_tokens{0};  // prefilled (reused ones not counted)
  std::atomic<uint64_t> generated_tokens{0};
  std::atomic<uint64_t> prompt_micros{0};
  std::atomic<uint64_t> generation_micros{0};
  std::atomic<uint64_t> rejected_busy{0};  // 503: queue full
  std::atomic<uint64_t> clients_gone{0};
};

struct ServerState {
  explicit ServerState(const ServeOptions& o) : options(o) {}

  const ServeOptions& options;
  std::atomic<bool> ready{false};     // models loaded and slots made
  std::atomic<bool> stopping{false};  // SIGINT or SIGTERM: generations stop
  int64_t started = 0;                // unix time, the models' "created"

  std::optional<kestrel::Model> text_model;  // set before `ready`, then read-only
  std::string text_model_id;                 // its file name without .kes
  size_t context = 0;                        // per slot
  size_t n_vocab = 0;
  int32_t bos_id = -1;
  std::unique_ptr<SlotPool> slots;

  // --embed-model: the encoder model, its id, and its encoders.
  std::optional<kestrel::Model> embed_model;
  std::string embed_model_id;
  size_t embed_dim = 0;
  size_t embed_max_tokens = 0;  // per input, special tokens included
  size_t embed_vocab = 0;
  std::unique_ptr<EncoderPool> encoders;

  // --rerank-model: the cross-encoder, its id, and its encoders.
  std::optional<kestrel::Model> rerank_model;
  std::string rerank_model_id;
  std::unique_ptr<EncoderPool> rerankers;

  // --whisper-model: the speech model, its id, and its transcribers.
  std::optional<kestrel::Model> whisper_model;
  std::string whisper_model_id;
  std::unique_ptr<TranscriberPool> transcribers;
  std::atomic<uint64_t> next_id{0};
  Metrics metrics;
  // Requests computing now (server/memory_release.h): the last to end gives back the free heap.
  std::atomic<size_t> computing{0};

  // Test-only (tests/py/server_queue_check.py), from KESTREL_SERVE_TEST_TOKEN_DELAY_MS: a pause
  // after each generated token, so that a test holds a slot for as long as it needs without a
  // race. Not a flag, not documented for users; 0 (no pause) unless that variable is set.
  std::chrono::milliseconds test_token_delay{0};
};

// The id a model file is served under: its file name without the directory and ".kes".
std::string ModelId(const std::string& path);

// Opens the model file at `path` into *model and reads its *info, as every model the server
// loads starts: "" or what failed.
std::string OpenModel(const std::string& path, std::optional<kestrel::Model>* model,
                      kestrel::ModelInfo* info);

// Sends `error` as the JSON error body with its HTTP status.
struct ApiError;
// The request's body as a JSON object, or the error saying why it is not one.
ApiError ParseJsonObject(const httplib::Request& req, nlohmann::json* body);
void SendError(httplib::Response& res, const ApiError& error);
void SendJson(httplib::Response& res, const std::string& body, int status = 200);
// A request no slot, encoder or transcriber was taken for (the queue full, or the server
// stopping): 503 server_busy with Retry-After, counted for /metrics; `message` says why.
void SendBusy(ServerState& state, httplib::Response& res, std::string message);

// The routes of the generation endpoints (completions.cc) and of the rest (server.cc).
void AddGenerationRoutes(httplib::Server& http, ServerState& state);
void AddTokenRoutes(httplib::Server& http, ServerState& state);
void AddEmbeddingRoutes(httplib::Server& http, ServerState& state);
void AddRerankRoutes(httplib::Server& http, ServerState& state);

// Open --embed-model and --whisper-model and make their encoders and transcribers, printing
// their memory; "" or what failed.
std::string LoadEmbedModel(ServerState& state);
std::string LoadRerankModel(ServerState& state);

// The encoder model at `path` (given by `flag`) and `parallel` encoders of it, after checking it
// is a reranker or not as `reranker` says; prints its memory under `what`. "" or what failed.
struct EncoderModel {
  std::optional<kestrel::Model> model;
  std::unique_ptr<EncoderPool> pool;
  kes_encoder_info info{};
  size_t n_vocab = 0;
};
std::string LoadEncoderModel(const ServeOptions& o, const std::string& path, const char* flag,
                             bool reranker, const char* what, EncoderModel* out);
std::string LoadWhisperModel(ServerState& state);
void AddTranscriptionRoutes(httplib::Server& http, ServerState& state);

}  // namespace kestrel::server
