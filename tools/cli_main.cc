// kestrel: run and inspect .kes models.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/mapped_file.h"
#include "runtime/output_file.h"
#include "server/serve.h"
#include "tools/cli.h"
#include "tools/version.h"

namespace {

const char kUsage[] =
    "usage: kestrel <command> [MODEL.kes] [options]\n"
    "commands:\n"
    "  run         generate text from a prompt, streaming tokens\n"
    "  chat        talk with an instruction-tuned model, turn by turn\n"
    "  embed       print the embedding of each text (encoder models)\n"
    "  rerank      score documents against a query (cross-encoder rerankers)\n"
    "  transcribe  speech to text from a WAV file (Whisper models)\n"
    "  tokenize    print the token ids of a text\n"
    "  inspect     print the model's architecture, sizes, memory and FLOPs per token\n"
    "  bench       measure prefill and decode speed (tokens/s, latency, memory)\n"
    "  perplexity  score a text file (llama.cpp's protocol: chunks of --ctx, second halves;\n"
    "              --stream: one sequence running past the context)\n"
    "  serve       an OpenAI-compatible HTTP server (docs/server.md)\n"
    "  cpu         print the CPU and the SIMD targets Kestrel compiled, supports, chose\n"
    "Run 'kestrel <command> --help' for the command's options; 'kestrel --version' for the\n"
    "version. KESTREL_VERIFY_WEIGHTS=1 in the environment makes every command check the\n"
    "model's weights checksum when it opens it (as 'kestrel inspect MODEL --verify' does).\n";

int RunCommand(const std::string& command, const std::vector<std::string>& args) {
  if (command == "--version") {
    std::printf("%s\n", kestrel::VersionText("kestrel").c_str());
    return 0;
  }
  if (command == "run") return kestrel::cli::RunCommand(args);
  if (command == "chat") return kestrel::cli::ChatCommand(args);
  if (command == "embed") return kestrel::cli::EmbedCommand(args);
  if (command == "rerank") return kestrel::cli::RerankCommand(args);
  if (command == "transcribe") return kestrel::cli::TranscribeCommand(args);
  if (command == "tokenize") return kestrel::cli::TokenizeCommand(args);
  if (command == "inspect") return kestrel::cli::InspectCommand(args);
  if (command == "bench") return kestrel::cli::BenchCommand(args);
  if (command == "perplexity") return kestrel::cli::PerplexityCommand(args);
  if (command == "serve") return kestrel::cli::ServeCommand(args);
  if (command == "cpu") return kestrel::cli::CpuCommand(args);
  return kestrel::cli::Fail("unknown command '" + command + "'\n" + kUsage);
}

}  // namespace

int main(int argc, char** argv) {
  // A model file truncated under us: a one-line error instead of a silent death by SIGBUS.
  kestrel::InstallMappedFileFaultHandler("kestrel");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 1 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  const int code = RunCommand(command, args);
  // Every command's output is checked here, once: a full disk or a closed pipe must not end
  // with exit 0 and a cut output.
  const kestrel::Status s = kestrel::CloseStdout();
  if (!s.ok()) return code != 0 ? code : kestrel::cli::Fail(s.message());
  return code;
}
