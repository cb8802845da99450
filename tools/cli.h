// Shared pieces of the `kestrel` command-line tool: subcommands and flag parsing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "tools/flags.h"

namespace kestrel::cli {

int RunCommand(const std::vector<std::string>& args);
int InspectCommand(const std::vector<std::string>& args);
int CpuCommand(const std::vector<std::string>& args);
int BenchCommand(const std::vector<std::string>& args);
int PerplexityCommand(const std::vector<std::string>& args);
int ChatCommand(const std::vector<std::string>& args);
int TokenizeCommand(const std::vector<std::string>& args);
int EmbedCommand(const std::vector<std::string>& args);
int RerankCommand(const std::vector<std::string>& args);
int TranscribeCommand(const std::vector<std::string>& args);

// Prints "kestrel: error: <message>" to stderr and returns the exit code 1.
int Fail(const std::string& message);

// A command's own flags: true when `arg` is one of them (its value, if it takes one, read from
// `flags`), with *status saying whether the value was valid, as ThreadsFlag and the others do.
using FlagHandler = std::function<bool(FlagReader& flags, const std::string& arg, Status* status)>;

// Reads a command's arguments in order: -h/--help prints `usage` to stdout and ends the
// command (exit code 0); every other argument goes to `handle`, and one it does not take is the
// model path (FlagReader::Positional: an unknown option, or a second path, is an error naming
// `command`). An error, and no model path once all are read (`no_model`, then `usage`), is
// printed and ends it with 1. Returns that exit code, or nullopt for the command to go on.
std::optional<int> ReadCommandFlags(const std::vector<std::string>& args,
                                    const std::string& command, const char* usage,
                                    const FlagHandler& handle, std::string* model_path,
                                    const char* no_model = "no model given");

// Usage lines of the sampling flags run and chat share (a string literal, to concatenate).
#define KESTREL_SAMPLER_FLAGS_USAGE                                                 \
  "  --temp T            temperature; 0 is greedy (default 0.8)\n"                  \
  "  --top-k K           keep the K most likely tokens; 0 keeps all (default 40)\n" \
  "  --top-p P           keep the smallest set with probability P (default 0.95)\n" \
  "  --seed S            random seed (default 0)\n"

// Writes a generated token's text to stdout at once (a TokenSink for Generate).
void StreamToken(void* context, int32_t token, std::string_view text);

// The sampling flags run and chat share (--temp, --top-k, --top-p, --seed): true when `arg` is
// one of them, with *status saying whether its value was valid.
bool SamplerFlag(FlagReader& flags, const std::string& arg, SamplerOptions* options,
                 Status* status);

// Usage lines of the KV-cache flags run, chat, bench and perplexity share.
#define KESTREL_KV_FLAGS_USAGE                                                                 \
  "  --kv-type T         KV cache type: f32, f16 or int8 (default f16)\n"                      \
  "  --sinks N           first tokens kept for good once past the context (attention sinks;\n" \
  "                      default 4)\n"

// The KV-cache flags run, chat, bench and perplexity share (--kv-type, --sinks): true when `arg`
// is one of them, with *status saying whether its value was valid.
bool KvFlag(FlagReader& flags, const std::string& arg, KvOptions* kv, Status* status);

// The flags run and chat share: -t/--threads, -c/--ctx (*ctx_given set when given), the
// sampling and the KV-cache flags; true when `arg` is one of them, with *status saying whether
// its value was valid.
bool GenerationFlag(FlagReader& flags, const std::string& arg, SessionOptions* session,
                    bool* ctx_given, SamplerOptions* sampler, Status* status);

// Session::Create, after checking what the flags chose against the context it gets (the
// runtime's error could not name the flag).
Status CreateSession(const Model& model, const SessionOptions& options,
                     std::unique_ptr<Session>* out);

// -t/--threads, every command alike: one thread per physical core available by default (a
// second thread on a core's SMT sibling mostly waits for the same SIMD units), and one warning
// line when a count is more than the CPUs available (those threads could only take turns).
#define KESTREL_THREADS_USAGE \
  "  -t, --threads N     threads (default: one per physical core available)\n"
size_t DefaultThreads();
// Prints "kestrel: warning: --threads N is more than the M CPUs available; ..." when it is.
void WarnAboutThreads(size_t n_threads);
// True when `arg` is -t or --threads, with *status saying whether its value was valid.
bool ThreadsFlag(FlagReader& flags, const std::string& arg, size_t* n_threads, Status* status);

// The context a session gets for --ctx `asked` (`given`: on the command line; otherwise a
// default): more than the model's context is clamped to it, with a warning when given (as
// llama.cpp warns when n_ctx exceeds the training context); fewer tokens than `minimum`, or
// than the default attention sinks and one more, is an error naming --ctx.
Status ChooseContext(const Model& model, size_t asked, bool given, size_t minimum, size_t* context);

// OpenModel of an encoder, then its Encoder; an error naming the other command when the model
// scores pairs (a reranker) and `scores` is false, or embeds and `scores` is true.
Status OpenEncoder(const std::string& path, const EncoderOptions& options, bool scores,
                   std::unique_ptr<Model>* model, std::unique_ptr<Encoder>* encoder);

// Encoder::Encode of every sequence of `ids` (second_starts: Encode's) into out, with
// "<what> 300/10000" on stderr after each step when stderr is a terminal.
Status EncodeWithProgress(Encoder& encoder, const char* what,
                          const std::vector<std::vector<int32_t>>& ids, const size_t* second_starts,
                          float* out);

// Reads all of `path`, or standard input for "-", for the flag `flag` (e.g. "-f").
Status ReadInputText(const std::string& flag, const std::string& path, std::string* out);
// The same, appended to *lines one line each (without "\n" or "\r\n"; no line after a final
// newline).
Status ReadInputLines(const std::string& flag, const std::string& path,
                      std::vector<std::string>* lines);

// What a model does, for the commands that need one kind: "MODEL is an encoder model (bert)...
// use 'kestrel embed'" instead of a runtime error about plans.
enum class ModelKind { kTextGenerator, kEncoder, kSpeech };
Status ExpectModelKind(const Model& model, const std::string& path, ModelKind wanted);
// Model::Open, then ExpectModelKind.
Status OpenModel(const std::string& path, ModelKind wanted, std::unique_ptr<Model>* model);
// OpenModel of a text generator, with options->context_length chosen for it by ChooseContext
// (`ctx_given`: whether --ctx was given; at least one token).
Status OpenTextGenerator(const std::string& path, bool ctx_given, SessionOptions* options,
                         std::unique_ptr<Model>* model);

// Session::Prefill of all but the last of `n` tokens, chunk by chunk (the prefill plan's
// chunks, so the results are the same as one call), with "prefill 1536/4096 tokens" on stderr
// while it runs when stderr is a terminal; *done gets the tokens prefilled (the rest are the
// caller's, for Generate). Nothing is prefilled for a prompt of one chunk or less.
Status PrefillWithProgress(Session& session, const int32_t* tokens, size_t n, size_t* done);

std::string FormatBytes(uint64_t bytes);
// Matmul FLOPs per token (per encoder position for speech models): 2 per weight element of every
// MatMul in the decode, encode or encode_audio plan, times its rows per token.
uint64_t MatMulFlopsPerToken(const Model& model);
// Escapes what a JSON string cannot hold (names come from files and /proc/cpuinfo).
std::string JsonEscape(const std::string& text);
// The CPU's name from /proc/cpuinfo: "model name" on x86; implementer and part on ARM, where
// the kernel names no model.
std::string CpuName();

}  // namespace kestrel::cli
