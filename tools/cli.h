// Shared pieces of the `kestrel` command-line tool: subcommands and flag parsing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/kv_layout.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/status.h"

namespace kestrel::cli {

int RunCommand(const std::vector<std::string>& args);
int InspectCommand(const std::vector<std::string>& args);
int CpuCommand(const std::vector<std::string>& args);
int BenchCommand(const std::vector<std::string>& args);
int PerplexityCommand(const std::vector<std::string>& args);
int ChatCommand(const std::vector<std::string>& args);
int TokenizeCommand(const std::vector<std::string>& args);
int EmbedCommand(const std::vector<std::string>& args);
int TranscribeCommand(const std::vector<std::string>& args);

// Prints "kestrel: error: <message>" to stderr and returns the exit code 1.
int Fail(const std::string& message);

// Parsers that reject trailing garbage and out-of-range values with a message naming the flag.
Status ParseInt(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                int64_t* out);
Status ParseFloat(const std::string& flag, const std::string& text, double min, double max,
                  double* out);

// Walks argv-style arguments: positional ones and --flags that take a value.
class FlagReader {
 public:
  explicit FlagReader(const std::vector<std::string>& args) : args_(args) {}
  bool Done() const { return i_ >= args_.size(); }
  const std::string& Next() { return args_[i_++]; }
  // The value after the current flag; error if missing.
  Status Value(const std::string& flag, std::string* out);
  // The value after the current flag as a number in [min, max], stored in *out only when valid.
  template <typename T>
  Status Int(const std::string& flag, int64_t min, int64_t max, T* out) {
    std::string text;
    int64_t v = 0;
    Status s = Value(flag, &text);
    if (s.ok()) s = ParseInt(flag, text, min, max, &v);
    if (s.ok()) *out = static_cast<T>(v);
    return s;
  }
  template <typename T>
  Status Float(const std::string& flag, double min, double max, T* out) {
    std::string text;
    double v = 0;
    Status s = Value(flag, &text);
    if (s.ok()) s = ParseFloat(flag, text, min, max, &v);
    if (s.ok()) *out = static_cast<T>(v);
    return s;
  }
  // The value after the current flag as a KV cache type: f32, f16 or int8.
  Status KvType(const std::string& flag, ops::KvType* out);
  // --disable-targets LIST: keeps kernel dispatch off the named SIMD targets (ops/targets.h).
  Status DisableTargets(const std::string& flag);
  // An argument no flag of `command` matched: the model path when none was given yet, else an
  // error naming it (an unknown option, or a second positional argument), followed by usage.
  Status Positional(const std::string& arg, const std::string& command, const char* usage,
                    std::string* model_path);

 private:
  const std::vector<std::string>& args_;
  size_t i_ = 0;
};

// Usage lines of the sampling flags run and chat share (a string literal, to concatenate).
#define KESTREL_SAMPLER_FLAGS_USAGE                                                   \
  "  --temp T            temperature; 0 is greedy (default 0.8)\n"                   \
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
#define KESTREL_KV_FLAGS_USAGE                                                              \
  "  --kv-type T         KV cache type: f32, f16 or int8 (default f32)\n"                  \
  "  --sinks N           first tokens kept for good once past the context (attention sinks;\n" \
  "                      default 4)\n"

// The KV-cache flags run, chat, bench and perplexity share (--kv-type, --sinks): true when `arg`
// is one of them, with *status saying whether its value was valid.
bool KvFlag(FlagReader& flags, const std::string& arg, KvOptions* kv, Status* status);

// Session::Create, after checking what the flags chose against the context it gets (the
// runtime's error could not name the flag).
Status CreateSession(const Model& model, const SessionOptions& options,
                     std::unique_ptr<Session>* out);

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
