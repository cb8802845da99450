// `kestrel serve` flags: read with the CLI's FlagReader, checked here, and handed to the server
// (server.cc) as plain ServeOptions.
#include <cstdio>
#include <string>
#include <vector>

#include "server/options.h"
#include "server/serve.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kServeUsage[] =
    "usage: kestrel serve MODEL.kes [options]\n"
    "An OpenAI-compatible HTTP server (docs/server.md): /v1/chat/completions, /v1/completions,\n"
    "/v1/embeddings, /v1/rerank, /v1/audio/transcriptions, /v1/models, /health, /tokenize, "
    "/detokenize.\n"
    "  --host HOST         address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port PORT         port (default 8080; 0: any free port, printed once listening)\n"
    "  -np, --parallel N   slots: requests generating at once, each with its own session and\n"
    "                      arena, all made at start (default 1)\n"
    "  --queue N           requests that may wait for a free slot; more get 503 with\n"
    "                      Retry-After (default 4 per slot)\n"
    "  -c, --ctx N         context per slot in tokens (default 4096, at most the "
    "model's)\n" KESTREL_THREADS_USAGE
    "                      (per slot; default: the cores shared among the slots)\n"
    "  --template NAME     write chats in the built-in format gemma, chatml or llama3 instead\n"
    "                      of by the model's own Jinja chat template\n"
    "  --api-key KEY       require 'Authorization: Bearer KEY' (default: any token, or none)\n"
    "  --metrics           serve Prometheus metrics at GET /metrics\n"
    "  --max-body BYTES    largest request body (default 26214400: 25 MiB)\n"
    "  --embed-model E.kes an encoder model for /v1/embeddings\n"
    "  --rerank-model R.kes a reranker (cross-encoder) for /v1/rerank\n"
    "  --whisper-model W.kes  a Whisper model for /v1/audio/transcriptions\n";

}  // namespace

int ServeCommand(const std::vector<std::string>& args) {
  server::ServeOptions options;
  bool threads_given = false, queue_given = false;
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "--host") {
      *s = flags.Value(arg, &options.host);
      if (s->ok() && options.host.empty())
        *s = Status::Error("--host: expected an address, got ''");
    } else if (arg == "--port") {
      *s = flags.Int(arg, 0, 65535, &options.port);
    } else if (arg == "-np" || arg == "--parallel") {
      *s = flags.Int(arg, 1, 256, &options.parallel);
    } else if (arg == "--queue") {
      *s = flags.Int(arg, 0, 4096, &options.queue);
      queue_given = true;
    } else if (arg == "-c" || arg == "--ctx") {
      *s = flags.Int(arg, 8, 1 << 24, &options.context);
    } else if (ThreadsFlag(flags, arg, &options.n_threads, s)) {
      threads_given = true;
    } else if (arg == "--template") {
      *s = flags.Value(arg, &options.chat_format);
      if (s->ok() && options.chat_format != "gemma" && options.chat_format != "chatml" &&
          options.chat_format != "llama3") {
        *s = Status::Error("--template: expected gemma, chatml or llama3, got '" +
                           options.chat_format + "'");
      }
    } else if (arg == "--api-key") {
      *s = flags.Value(arg, &options.api_key);
      if (s->ok() && options.api_key.empty()) {
        *s = Status::Error("--api-key: expected a key, got ''");
      }
    } else if (arg == "--metrics") {
      options.metrics = true;
    } else if (arg == "--max-body") {
      *s = flags.Int(arg, 1024, int64_t{1} << 30, &options.max_body_bytes);
    } else if (arg == "--embed-model") {
      *s = flags.Value(arg, &options.embed_model_path);
    } else if (arg == "--rerank-model") {
      *s = flags.Value(arg, &options.rerank_model_path);
    } else if (arg == "--whisper-model") {
      *s = flags.Value(arg, &options.whisper_model_path);
    } else {
      return false;
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "serve", kServeUsage, flag, &options.model_path)) {
    return *exit_code;
  }
  if (!queue_given) options.queue = 4 * options.parallel;
  if (threads_given) {
    WarnAboutThreads(options.n_threads * options.parallel);
  } else {
    const size_t cores = DefaultThreads();
    options.n_threads = cores > options.parallel ? cores / options.parallel : 1;
  }
  options.format_bytes = [](uint64_t bytes) { return FormatBytes(bytes); };
  return server::RunServer(options);
}

}  // namespace kestrel::cli
