#include "tools/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "ops/targets.h"

namespace kestrel::cli {

Status ParseInt(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    return Status::Error(flag + ": expected a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max) + ", found '" + text + "'");
  }
  *out = v;
  return OkStatus();
}

Status ParseFloat(const std::string& flag, const std::string& text, double min, double max,
                  double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min || v > max) {
    return Status::Error(flag + ": expected a number from " + std::to_string(min) + " to " +
                         std::to_string(max) + ", found '" + text + "'");
  }
  *out = v;
  return OkStatus();
}

Status FlagReader::Value(const std::string& flag, std::string* out) {
  if (Done()) return Status::Error(flag + " needs a value");
  *out = Next();
  return OkStatus();
}

Status FlagReader::KvType(const std::string& flag, ops::KvType* out) {
  std::string name;
  KES_RETURN_IF_ERROR(Value(flag, &name));
  KES_CHECK_OR_RETURN(ops::ParseKvType(name, out),
                      flag + ": expected f32, f16 or int8, found '" + name + "'");
  return OkStatus();
}

Status FlagReader::DisableTargets(const std::string& flag) {
  std::string names;
  KES_RETURN_IF_ERROR(Value(flag, &names));
  const std::string error = ops::DisableTargets(names);
  return error.empty() ? OkStatus() : Status::Error(flag + ": " + error);
}

Status FlagReader::Positional(const std::string& arg, const std::string& command, const char* usage,
                              std::string* model_path) {
  if (!arg.empty() && arg[0] == '-') {
    return Status::Error("unknown option '" + arg + "' for '" + command + "'\n" + usage);
  }
  if (!model_path->empty()) return Status::Error("unexpected argument '" + arg + "'\n" + usage);
  *model_path = arg;
  return OkStatus();
}

}  // namespace kestrel::cli
