// `kestrel serve`: binds first, so /health answers 503 while the models load on another
// thread; then makes every slot (a session and its arena each) before the first request, prints
// their memory as `kestrel inspect` does, and serves until SIGINT or SIGTERM.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/options.h"
#include "server/server_state.h"

namespace kestrel::server {
namespace {

using nlohmann::json;

// Connections the kernel queues until the server accepts them: a burst of every client of a
// busy board at once.
constexpr int kListenBacklog = 512;

// Opens the text model and makes the slots; "" or what failed.
std::string Load(ServerState& state) {
  const ServeOptions& o = state.options;
  std::optional<kestrel::Model> model;
  kestrel::ModelInfo info{};
  if (std::string error = OpenModel(o.model_path, &model, &info); !error.empty()) return error;
  if (info.can_generate == 0) {
    return o.model_path +
           " does not generate text (an encoder or speech model): give a text "
           "generator as MODEL, an encoder with --embed-model, a reranker with --rerank-model";
  }
  kestrel::SessionParams params = kestrel::DefaultSessionParams();
  params.context_length = o.context;
  params.n_threads = o.n_threads;
  kes_memory_info memory{};
  memory.struct_size = sizeof(memory);
  if (kes_session_memory(model->get(), &params, &memory) != KES_OK) {
    return kes_model_last_error(model->get());
  }
  std::vector<std::unique_ptr<Slot>> slots;
  for (size_t i = 0; i < o.parallel; ++i) {
    Result<kestrel::Session> session = kestrel::Session::Create(*model, &params);
    if (!session.ok()) return session.status().message();
    auto slot = std::unique_ptr<Slot>(new Slot{i, std::move(session).value(), {}});
    slot->held.reserve(memory.context_length + 1);
    slots.push_back(std::move(slot));
  }
  // A trial turn: a model whose template cannot write a chat is told at start, not per request.
  const kes_chat_message trial = {"user", "Hello", 5};
  size_t trial_bytes = 0;
  const kes_status chat =
      kes_chat_apply_template(model->get(), o.chat_format.empty() ? nullptr : o.chat_format.c_str(),
                              &trial, 1, 1, nullptr, 0, &trial_bytes);
  if (chat != KES_OK && chat != KES_BUFFER_TOO_SMALL) {
    std::fprintf(stderr, "kestrel: warning: %s; /v1/chat/completions will answer 400\n",
                 kes_model_last_error(model->get()));
  }
  const uint64_t arenas = memory.arena_bytes * o.parallel;
  std::printf("model %s: context %zu tokens per slot, %zu slot%s, %zu thread%s each\n",
              ModelId(o.model_path).c_str(), memory.context_length, o.parallel,
              o.parallel == 1 ? "" : "s", o.n_threads, o.n_threads == 1 ? "" : "s");
  std::printf("memory at context %zu, per slot:\n", memory.context_length);
  std::printf("  activations:  %s\n", o.Bytes(memory.activations_bytes).c_str());
  std::printf("  KV cache:     %s\n", o.Bytes(memory.kv_cache_bytes).c_str());
  std::printf("  attention:    %s (decode's partitions)\n",
              o.Bytes(memory.attention_bytes).c_str());
  std::printf("  sampler:      %s\n", o.Bytes(memory.sampler_bytes).c_str());
  std::printf("  arena total:  %s\n", o.Bytes(memory.arena_bytes).c_str());
  std::printf("memory of the server:\n");
  std::printf("  weights:      %s (mapped, shared by the slots)\n",
              o.Bytes(memory.weights_bytes).c_str());
  std::printf("  arenas:       %s (%zu x %s)\n", o.Bytes(arenas).c_str(), o.parallel,
              o.Bytes(memory.arena_bytes).c_str());
  std::printf("  total:        %s (weights + arenas)\n",
              o.Bytes(memory.weights_bytes + arenas).c_str());
  std::fflush(stdout);
  state.context = memory.context_length;
  state.n_vocab = info.n_vocab;
  state.bos_id = info.bos_id;
  state.text_model_id = ModelId(o.model_path);
  state.slots = std::make_unique<SlotPool>(std::move(slots), o.queue);
  state.text_model = std::move(model);
  std::string error = o.embed_model_path.empty() ? "" : LoadEmbedModel(state);
  if (error.empty() && !o.rerank_model_path.empty()) error = LoadRerankModel(state);
  if (error.empty() && !o.whisper_model_path.empty()) error = LoadWhisperModel(state);
  return error;
}

// Test-only hooks, read from the environment by the server alone (tests/py/server_queue_check.py
// uses them; they are not flags and not documented for users): KESTREL_SERVE_TEST_LOAD_GATE=PATH
// holds the loading until PATH exists, so that a test sees the server while it loads however
// fast the model loads; KESTREL_SERVE_TEST_TOKEN_DELAY_MS=N pauses N ms after each generated
// token, so that a test holds a slot for as long as it needs without a race.
void WaitForTestLoadGate(const std::atomic<bool>& stopping) {
  const char* gate = std::getenv("KESTREL_SERVE_TEST_LOAD_GATE");
  if (gate == nullptr || *gate == '\0') return;
  struct stat st;
  while (::stat(gate, &st) != 0 && !stopping) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::chrono::milliseconds TestTokenDelay() {
  const char* ms = std::getenv("KESTREL_SERVE_TEST_TOKEN_DELAY_MS");
  return std::chrono::milliseconds(ms != nullptr ? std::strtol(ms, nullptr, 10) : 0);
}

// http.stop() before the server runs would be lost, so callers wait for it to run (or for
// `give_up`).
void WaitUntilRunning(const httplib::Server& http, const std::atomic<bool>& give_up) {
  while (!http.is_running() && !give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void AddInfoRoutes(httplib::Server& http, ServerState& state) {
  http.Get("/health", [&state](const httplib::Request&, httplib::Response& res) {
    if (!state.ready) {
      res.set_header("Retry-After", "1");
      SendJson(res, R"({"status":"loading"})", 503);
    } else {
      SendJson(res, R"({"status":"ok"})");
    }
  });
  http.Get("/v1/models", [&state](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    data.push_back({{"id", state.text_model_id},
                    {"object", "model"},
                    {"created", state.started},
                    {"owned_by", "kestrel"}});
    for (const std::string* id :
         {&state.embed_model_id, &state.rerank_model_id, &state.whisper_model_id}) {
      if (id->empty()) continue;
      data.push_back(
          {{"id", *id}, {"object", "model"}, {"created", state.started}, {"owned_by", "kestrel"}});
    }
    SendJson(res, json({{"object", "list"}, {"data", data}}).dump());
  });
  if (state.options.metrics) {
    http.Get("/metrics", [&state](const httplib::Request&, httplib::Response& res) {
      const Metrics& m = state.metrics;
      std::string text;
      const auto add = [&](const char* name, const char* type, const char* help, double value) {
        char line[512];
        std::snprintf(line, sizeof(line),
                      "# HELP kestrel_%s %s\n# TYPE kestrel_%s %s\nkestrel_%s %.17g\n", name, help,
                      name, type, name, value);
        text += line;
      };
      add("requests_total", "counter", "Generation requests received.",
          static_cast<double>(m.requests));
      add("prompt_tokens_total", "counter", "Prompt tokens prefilled (reused ones not counted).",
          static_cast<double>(m.prompt_tokens));
      add("prompt_seconds_total", "counter", "Seconds spent prefilling prompts.",
          static_cast<double>(m.prompt_micros) * 1e-6);
      add("tokens_predicted_total", "counter", "Tokens generated.",
          static_cast<double>(m.generated_tokens));
      add("tokens_predicted_seconds_total", "counter", "Seconds spent generating tokens.",
          static_cast<double>(m.generation_micros) * 1e-6);
      add("requests_rejected_busy_total", "counter", "Requests answered 503: the queue was full.",
          static_cast<double>(m.rejected_busy));
      add("clients_gone_total", "counter", "Generations stopped because the client went away.",
          static_cast<double>(m.clients_gone));
      const size_t busy = state.slots ? state.slots->busy() : 0;
      add("requests_processing", "gauge", "Requests generating now (slots busy).",
          static_cast<double>(busy));
      add("requests_deferred", "gauge", "Requests waiting for a slot.",
          static_cast<double>(state.slots ? state.slots->waiting() : 0));
      add("slots_busy_ratio", "gauge", "Busy slots over all slots.",
          state.slots ? static_cast<double>(busy) / state.slots->size() : 0.0);
      res.set_content(text, "text/plain; version=0.0.4");
    });
  }
}

// Answers before routing: 503 while loading (but /health), 401 for a wrong key with --api-key.
httplib::Server::HandlerResponse PreRoute(ServerState& state, const httplib::Request& req,
                                          httplib::Response& res) {
  if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
  const std::string& key = state.options.api_key;
  if (!key.empty()) {
    const std::string auth = req.get_header_value("Authorization");
    if (auth != "Bearer " + key) {
      ApiError e{401,
                 auth.empty() ? "no API key given: send 'Authorization: Bearer KEY'"
                              : "the API key given is not this server's (--api-key)",
                 "authentication_error", "", "invalid_api_key"};
      SendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
  }
  if (!state.ready) {
    res.set_header("Retry-After", "1");
    SendError(res, Unavailable("the model is loading; retry in a moment", "loading"));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// Errors cpp-httplib answers itself (no route, a body over the limit) get a JSON body too.
httplib::Server::HandlerResponse ErrorBodyFor(const ServerState& state, const httplib::Request& req,
                                              httplib::Response& res) {
  if (!res.body.empty() || res.is_chunked_content_provider_) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  ApiError e{res.status, "", "invalid_request_error", "", ""};
  if (res.status == 404) {
    e.message = "no such endpoint: " + req.method + " " + req.path;
    e.code = "unknown_url";
  } else if (res.status == 413) {
    e.message = "the request body is larger than " + std::to_string(state.options.max_body_bytes) +
                " bytes (--max-body)";
    e.code = "body_too_large";
  } else if (res.status == 405) {
    e.message = "method " + req.method + " is not allowed on " + req.path;
  } else {
    e.message = "HTTP status " + std::to_string(res.status);
    if (res.status >= 500) e.type = "server_error";
  }
  res.set_content(ErrorBody(e), "application/json");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

std::string ModelId(const std::string& path) {
  std::string id = path.substr(path.find_last_of('/') + 1);
  if (id.size() > 4 && id.compare(id.size() - 4, 4, ".kes") == 0) id.resize(id.size() - 4);
  return id;
}

std::string OpenModel(const std::string& path, std::optional<kestrel::Model>* model,
                      kestrel::ModelInfo* info) {
  Result<kestrel::Model> opened = kestrel::Model::Open(path);
  if (!opened.ok()) return opened.status().message();
  Result<kestrel::ModelInfo> read = opened->Info();
  if (!read.ok()) return read.status().message();
  model->emplace(std::move(opened).value());
  *info = *read;
  return "";
}

void SendError(httplib::Response& res, const ApiError& error) {
  SendJson(res, ErrorBody(error), error.status);
}

void SendJson(httplib::Response& res, const std::string& body, int status) {
  res.status = status;
  res.set_content(body, "application/json");
}

void SendBusy(ServerState& state, httplib::Response& res, std::string message) {
  ++state.metrics.rejected_busy;
  res.set_header("Retry-After", "1");
  SendError(res, Unavailable(std::move(message), "server_busy"));
}

int RunServer(const ServeOptions& options) {
  // A client gone mid-answer makes a write fail with EPIPE, not kill the server. SIGINT and
  // SIGTERM are taken by one thread (sigwait), so they are blocked before any thread starts.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ServerState state(options);
  state.started = static_cast<int64_t>(std::time(nullptr));
  state.test_token_delay = TestTokenDelay();
  httplib::Server http;
  // Threads for the requests that may generate or wait, and for idle keep-alive connections.
  const size_t threads = std::max<size_t>(16, 2 * (options.parallel + options.queue) + 8);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(options.max_body_bytes);
  // cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
  // library): 64 clients connecting at once overflowed it (the kernel's ListenOverflows), and on
  // a loaded machine some of those connections were reset. Listening again on the bound socket
  // raises the backlog (the kernel caps it at net.core.somaxconn).
  std::atomic<int> listen_socket{-1};
  http.set_socket_options([&listen_socket](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket = sock;  // the last one made is the one bound
  });
  http.set_pre_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
    return PreRoute(state, req, res);
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [&state](const httplib::Request& req, httplib::Response& res) {
        return ErrorBodyFor(state, req, res);
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(res, ServerError("internal error: " + what));
      });
  AddInfoRoutes(http, state);
  AddGenerationRoutes(http, state);
  AddTokenRoutes(http, state);
  AddEmbeddingRoutes(http, state);
  AddRerankRoutes(http, state);
  AddTranscriptionRoutes(http, state);

  int port = options.port;
  if (port == 0) {
    port = http.bind_to_any_port(options.host);
  } else if (!http.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port >= 0 && listen_socket >= 0) ::listen(listen_socket, kListenBacklog);
  if (port < 0) {
    std::fprintf(stderr,
                 "kestrel: error: cannot listen on %s port %d (in use, or not an address "
                 "of this machine)\n",
                 options.host.c_str(), options.port);
    return 1;
  }
  std::printf("kestrel: listening on http://%s:%d (loading %s)\n", options.host.c_str(), port,
              options.model_path.c_str());
  std::fflush(stdout);

  int exit_code = 0;
  std::mutex ready_mutex;
  std::thread loader([&] {
    WaitForTestLoadGate(state.stopping);
    const std::string error = Load(state);
    WaitUntilRunning(http, state.stopping);
    if (!error.empty()) {
      std::fprintf(stderr, "kestrel: error: %s\n", error.c_str());
      exit_code = 1;
      http.stop();
      return;
    }
    std::lock_guard<std::mutex> lock(ready_mutex);
    if (state.stopping) return;
    state.ready = true;
    std::printf("kestrel: ready\n");
    std::fflush(stdout);
  });
  std::atomic<bool> finished{false};
  std::thread signal_thread([&state, &http, &ready_mutex, &finished, stop_signals] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    if (finished) return;  // woken by RunServer's end, not by a user
    {
      // Waiters for a slot are woken (and answered 503) so that the HTTP threads can end.
      std::lock_guard<std::mutex> lock(ready_mutex);
      state.stopping = true;
      if (state.ready) {
        state.slots->Shutdown();
        if (state.encoders) state.encoders->Shutdown();
        if (state.transcribers) state.transcribers->Shutdown();
      }
    }
    WaitUntilRunning(http, finished);
    http.stop();
  });
  http.listen_after_bind();
  loader.join();
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  std::fprintf(stderr, "kestrel: server stopped\n");
  return exit_code;
}

}  // namespace kestrel::server
