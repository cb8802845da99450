// kestrel: run and inspect .kes models.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/cli.h"

namespace {

const char kUsage[] =
    "usage: kestrel <command> [MODEL.kes] [options]\n"
    "commands:\n"
    "  run         generate text from a prompt, streaming tokens\n"
    "  chat        talk with an instruction-tuned model, turn by turn\n"
    "  embed       print the embedding of each text (encoder models)\n"
    "  transcribe  speech to text from a WAV file (Whisper models)\n"
    "  tokenize    print the token ids of a text\n"
    "  inspect     print the model's architecture, sizes, memory and FLOPs per token\n"
    "  bench       measure prefill and decode speed (tokens/s, latency, memory)\n"
    "  perplexity  score a text file (llama.cpp's protocol: chunks of --ctx, second halves;\n"
    "              --stream: one sequence running past the context)\n"
    "  cpu         print the CPU and the SIMD targets Kestrel compiled, supports, chose\n"
    "Run 'kestrel <command> --help' for the command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 1 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "run") return kestrel::cli::RunCommand(args);
  if (command == "chat") return kestrel::cli::ChatCommand(args);
  if (command == "embed") return kestrel::cli::EmbedCommand(args);
  if (command == "transcribe") return kestrel::cli::TranscribeCommand(args);
  if (command == "tokenize") return kestrel::cli::TokenizeCommand(args);
  if (command == "inspect") return kestrel::cli::InspectCommand(args);
  if (command == "bench") return kestrel::cli::BenchCommand(args);
  if (command == "perplexity") return kestrel::cli::PerplexityCommand(args);
  if (command == "cpu") return kestrel::cli::CpuCommand(args);
  return kestrel::cli::Fail("unknown command '" + command + "'\n" + kUsage);
}
