#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tools/cli.h"

#include "ops/targets.h"

namespace kestrel::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "kestrel: error: %s\n", message.c_str());
  return 1;
}

Status ParseInt(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    return Status::Error(flag + ": expected a whole number from " + std::to_string(min) +
                         " to " + std::to_string(max) + ", found '" + text + "'");
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

Status FlagReader::Positional(const std::string& arg, const std::string& command,
                              const char* usage, std::string* model_path) {
  if (!arg.empty() && arg[0] == '-') {
    return Status::Error("unknown option '" + arg + "' for '" + command + "'\n" + usage);
  }
  if (!model_path->empty()) return Status::Error("unexpected argument '" + arg + "'\n" + usage);
  *model_path = arg;
  return OkStatus();
}

std::string JsonEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out += code;
    } else {
      out += c;
    }
  }
  return out;
}

void StreamToken(void*, int32_t, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

bool SamplerFlag(FlagReader& flags, const std::string& arg, SamplerOptions* options,
                 Status* status) {
  if (arg == "--temp") {
    *status = flags.Float(arg, 0, 100, &options->temperature);
  } else if (arg == "--top-k") {
    *status = flags.Int(arg, 0, 1 << 24, &options->top_k);
  } else if (arg == "--top-p") {
    double p = 0;
    *status = flags.Float(arg, 0, 1, &p);
    if (status->ok() && p <= 0) {
      *status = Status::Error("--top-p: expected a number above 0 and at most 1");
    }
    if (status->ok()) options->top_p = static_cast<float>(p);
  } else if (arg == "--seed") {
    *status = flags.Int(arg, 0, INT64_MAX, &options->seed);
  } else {
    return false;
  }
  return true;
}

bool KvFlag(FlagReader& flags, const std::string& arg, KvOptions* kv, Status* status) {
  if (arg == "--kv-type") {
    *status = flags.KvType(arg, &kv->type);
  } else if (arg == "--sinks") {
    *status = flags.Int(arg, 0, 1 << 24, &kv->sinks);
  } else {
    return false;
  }
  return true;
}

Status CreateSession(const Model& model, const SessionOptions& options,
                     std::unique_ptr<Session>* out) {
  const size_t context =
      std::min<size_t>(options.context_length, model.hparams().context_length());
  KES_CHECK_OR_RETURN(options.kv.sinks < context,
                      "--sinks: expected fewer than the context of " + std::to_string(context) +
                          " tokens, found " + std::to_string(options.kv.sinks));
  return Session::Create(model, options, out);
}

std::string FormatBytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.2f GiB", bytes / 1073741824.0);
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.2f MiB", bytes / 1048576.0);
  } else {
    std::snprintf(text, sizeof(text), "%.1f KiB", bytes / 1024.0);
  }
  return std::to_string(bytes) + " B (" + text + ")";
}

// The CPU's name from /proc/cpuinfo: "model name" on x86, "CPU part" (and implementer) on ARM,
// where the kernel names no model.
std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, implementer, part;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") return value;
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (!part.empty()) return "implementer " + implementer + ", part " + part;
  return "unknown";
}

uint64_t MatMulFlopsPerToken(const Model& model) {
  const char* plan = model.is_encoder()          ? "encode"
                     : model.has_audio_encoder() ? "encode_audio"
                                                 : "decode";
  uint64_t flops = 0;
  for (const fb::Op* op : *model.FindPlan(plan)->ops()) {
    if (op->params_type() != fb::OpParams::MatMul) continue;
    const fb::Tensor* w = model.meta().tensors()->Get(op->weights()->Get(0));
    flops += 2 * w->shape()->Get(0) * w->shape()->Get(1) * op->params_as_MatMul()->rows_per_token();
  }
  return flops;
}

}  // namespace kestrel::cli
