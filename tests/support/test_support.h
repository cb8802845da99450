// Helpers the tests share: scratch files, running the CLI tools as child processes (through the
// emulator when the tests run cross-compiled under qemu-user), and the tiny random-weight
// Gemma 3 model that tests/py/make_tiny_gemma3.py writes and kestrel-convert converts.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kestrel_generated.h"

namespace kestrel {
class Model;
}

namespace kestrel::test {

// The runtime's embedding lookup for a block-quantized .kes dtype (Q8_0, Q4_0 or a kept GGUF
// type), which reads rows back as floats: the tests' way to see a quantized tensor's values.
// nullptr for other dtypes.
using LookupFn = void (*)(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens,
                          size_t n, float scale, float* out);
LookupFn QuantizedLookup(fb::DType dtype);

// The logits of every position of `tokens` (the model's score plan), with a session of
// `context` positions, `threads` threads and an f32 KV cache; "" or what failed.
std::string ScoreAll(const Model& model, const std::vector<int32_t>& tokens, size_t threads,
                     size_t context, std::vector<float>* logits);

// A path in the tests' scratch folder (created on first use).
std::string TmpPath(const std::string& name);
// A scratch path unique to this process, so ctest can run the tests of one binary in parallel.
std::string ScratchPath(const std::string& name);

bool Exists(const std::string& path);
std::vector<uint8_t> ReadBytes(const std::string& path);
// Returns false when the file cannot be written completely.
bool WriteBytes(const std::string& path, const uint8_t* data, size_t size);

// Raw little-endian arrays (the format tests/py/gemma3_oracle.py reads and writes).
template <typename T>
bool WriteRaw(const std::string& path, const std::vector<T>& values) {
  return WriteBytes(path, reinterpret_cast<const uint8_t*>(values.data()),
                    values.size() * sizeof(T));
}
template <typename T>
std::vector<T> ReadRaw(const std::string& path) {
  const std::vector<uint8_t> bytes = ReadBytes(path);
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// The oracle tolerance: logits agree within this fraction of the reference row's max - min.
constexpr double kLogitTolerance = 1e-3;
// Largest |ours - reference| over rows of `vocab` logits, as a fraction of each reference row's
// max - min; *worst_row (optional) gets the row where it occurs.
double LargestLogitError(const float* ours, const float* reference, size_t rows, size_t vocab,
                         size_t* worst_row = nullptr);

// True when `path` exists and is at least as new as every one of `inputs`.
bool IsFresh(const std::string& path, const std::vector<std::string>& inputs);

struct ProcessResult {
  bool exited = false;  // false: killed by a signal (or never started)
  int exit_code = -1;
  int signal = 0;
  std::string out, err;
};
std::string Describe(const ProcessResult& r);

// Runs a program built by this project (args[0] is its path) with stdout and stderr captured,
// no shell: arguments arrive verbatim. In a cross build it runs under the emulator
// (CMAKE_CROSSCOMPILING_EMULATOR), which reads QEMU_CPU from the environment like ctest's runs.
// Standard input is `input` (empty: at its end at once).
ProcessResult RunProcess(const std::vector<std::string>& args, const std::string& input = "");
// Starts what RunProcess runs without waiting for it, standard input read from in_path, output
// and error written to out_path and err_path (created or truncated). Returns whether it started
// (then *pid is the child to wait for); if not, *error (when not null) says why.
bool StartProcess(const std::vector<std::string>& program_args, const std::string& in_path,
                  const std::string& out_path, const std::string& err_path, pid_t* pid,
                  std::string* error);
ProcessResult Cli(std::vector<std::string> args, const std::string& input = "");  // kestrel
ProcessResult Convert(std::vector<std::string> args);  // build/.../kestrel-convert

// The emulator prefix this build runs its programs with; empty for native builds.
std::vector<std::string> EmulatorCommand();

// Runs a host shell command (Python scripts of tests/py); returns "" or what failed.
std::string RunHostCommand(const std::string& command);

// `name` as a gtest parameter name, which takes letters, digits and '_' only: '-' becomes '_'.
inline std::string ParamName(std::string name) {
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

// A tiny random-weight model family: the script (under tests/py) that writes its GGUF, with its
// arguments, the oracle (under tests/py) that scores it, and the stem of its files in test-tmp.
struct TinyFamily {
  const char* stem;
  const char* make_script;
  const char* make_args;
  const char* oracle;
};
// gtest prints a family by its stem.
inline void PrintTo(const TinyFamily& family, std::ostream* os) { *os << family.stem; }
inline constexpr TinyFamily kTinyGemma3 = {"tiny", "make_tiny_gemma3.py", "", "gemma3_oracle.py"};
// Llama with a separate output head and Llama 3 RoPE frequency factors; Qwen2 with Q/K/V biases,
// NEOX RoPE and a tied head; Llama with linear RoPE scaling.
inline constexpr TinyFamily kTinyLlama = {"tiny-llama", "make_tiny_llama.py",
                                          "--arch llama --rope-scaling llama3", "llama_oracle.py"};
inline constexpr TinyFamily kTinyQwen2 = {"tiny-qwen2", "make_tiny_llama.py", "--arch qwen2",
                                          "llama_oracle.py"};
inline constexpr TinyFamily kTinyLlamaLinear = {"tiny-llama-linear", "make_tiny_llama.py",
                                                "--arch llama --rope-scaling linear",
                                                "llama_oracle.py"};

// A tiny random-weight BERT checkpoint folder (tests/py/make_tiny_bert.py with `flags`) at
// test-tmp/scratch/<stem>, made once and reused, also by the other processes ctest starts, while
// newer than the script. Made under a lock, so a process never sees another's half-made or
// replaced folder. Returns "" or what failed; *folder gets the path.
std::string MakeTinyBert(const std::string& stem, const std::string& flags, std::string* folder);
// Writes a tiny random-weight Whisper as a CTranslate2 folder (tests/py/make_tiny_whisper.py
// FOLDER FLAGS); "" or what failed.
std::string MakeTinyWhisper(const std::string& folder, const std::string& flags = "");

// The tiny model, made once and reused (also by the other processes ctest starts) while newer
// than the script and the converter that made it.
struct TinyModel {
  std::string gguf, kes;
  std::vector<uint8_t> bytes;  // the .kes file
};
// Writes the tiny GGUF of `family` for `seed` to `out`; returns "" or what failed.
std::string MakeTinyGguf(const std::string& out, int seed, const TinyFamily& family = kTinyGemma3);
// Makes (or reuses) <stem>.gguf (seed 1) and its f32 conversion <stem>.kes; returns "" or what
// failed.
std::string MakeTinyModel(TinyModel* t, const TinyFamily& family = kTinyGemma3);

}  // namespace kestrel::test
