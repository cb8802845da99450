// Command-line flags, as both programs (kestrel, kestrel-convert) read them: argv-style
// arguments walked by FlagReader, values parsed strictly, errors naming the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/kv_layout.h"
#include "runtime/status.h"

namespace kestrel::cli {

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
    return Number(flag, ParseInt, min, max, out);
  }
  template <typename T>
  Status Float(const std::string& flag, double min, double max, T* out) {
    return Number(flag, ParseFloat, min, max, out);
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
  // Int and Float: the value parsed by `parse` (ParseInt, ParseFloat) as a V in [min, max].
  template <typename V, typename T>
  Status Number(const std::string& flag,
                Status (*parse)(const std::string&, const std::string&, V, V, V*), V min, V max,
                T* out) {
    std::string text;
    V v = 0;
    Status s = Value(flag, &text);
    if (s.ok()) s = parse(flag, text, min, max, &v);
    if (s.ok()) *out = static_cast<T>(v);
    return s;
  }

  const std::vector<std::string>& args_;
  size_t i_ = 0;
};

}  // namespace kestrel::cli
