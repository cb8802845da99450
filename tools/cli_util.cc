#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <sys/stat.h>

#include "tools/cli.h"

#include "ops/targets.h"
#include "runtime/cpu_count.h"
#include "runtime/output_file.h"
#include "tools/progress.h"

namespace kestrel::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "kestrel: error: %s\n", message.c_str());
  return 1;
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
  // A sink cannot stop Generate, and on a broken stdout (a full disk; a closed pipe where
  // SIGPIPE is ignored) generation would run on for nothing: the first failed write ends the
  // program with the error.
  if (!WriteStdout(text.data(), text.size())) std::exit(Fail(CloseStdout().message()));
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

bool GenerationFlag(FlagReader& flags, const std::string& arg, SessionOptions* session,
                    bool* ctx_given, SamplerOptions* sampler, Status* status) {
  if (arg == "-c" || arg == "--ctx") {
    *status = flags.Int(arg, 1, 1 << 24, &session->context_length);
    *ctx_given = true;
    return true;
  }
  return ThreadsFlag(flags, arg, &session->n_threads, status) ||
         SamplerFlag(flags, arg, sampler, status) || KvFlag(flags, arg, &session->kv, status);
}

Status CreateSession(const Model& model, const SessionOptions& options,
                     std::unique_ptr<Session>* out) {
  const size_t context = std::min<size_t>(options.context_length, model.hparams().context_length());
  KES_CHECK_OR_RETURN(options.kv.sinks < context, "--sinks: expected fewer than the context of " +
                                                      std::to_string(context) + " tokens, found " +
                                                      std::to_string(options.kv.sinks));
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

size_t DefaultThreads() { return PhysicalCores(); }

void WarnAboutThreads(size_t n_threads) {
  const size_t cpus = AvailableCpus();
  if (n_threads <= cpus) return;
  std::fprintf(stderr,
               "kestrel: warning: --threads %zu is more than the %zu CPUs available; the work "
               "is split %zu ways but runs on %zu threads\n",
               n_threads, cpus, n_threads, cpus);
}

bool ThreadsFlag(FlagReader& flags, const std::string& arg, size_t* n_threads, Status* status) {
  if (arg != "-t" && arg != "--threads") return false;
  *status = flags.Int(arg, 1, 256, n_threads);
  if (status->ok()) WarnAboutThreads(*n_threads);
  return true;
}

Status ChooseContext(const Model& model, size_t asked, bool given, size_t minimum,
                     size_t* context) {
  const size_t trained = model.hparams().context_length();
  *context = std::min(asked, trained);
  if (given && asked > trained) {
    std::fprintf(stderr,
                 "kestrel: warning: --ctx %zu is more than the model's context of %zu tokens; "
                 "using %zu\n",
                 asked, trained, trained);
  }
  // A context must hold the default attention sinks and a token more; past that, a --sinks
  // that fills it is the flag to blame, and CreateSession says so.
  const size_t sinks = KvOptions().sinks;
  minimum = std::max(minimum, sinks + 1);
  KES_CHECK_OR_RETURN(*context >= minimum, "--ctx: expected at least " + std::to_string(minimum) +
                                               " tokens (the " + std::to_string(sinks) +
                                               " attention sinks and more), found " +
                                               std::to_string(*context));
  return OkStatus();
}

Status ReadInputText(const std::string& flag, const std::string& path, std::string* out) {
  const bool from_stdin = path == "-";
  const std::string name =
      from_stdin ? "standard input (" + flag + " -)" : "text file '" + path + "' (" + flag + ")";
  struct stat st;
  if (!from_stdin && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::Error(name + " is not a regular file but a folder");
  }
  std::FILE* file = from_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::Error("cannot open " + name + ": " + std::strerror(errno));
  }
  out->clear();
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) out->append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  if (!from_stdin) std::fclose(file);
  if (failed) return Status::Error("cannot read " + name + ": " + std::strerror(error));
  return OkStatus();
}

Status OpenEncoder(const std::string& path, const EncoderOptions& options, bool scores,
                   std::unique_ptr<Model>* model, std::unique_ptr<Encoder>* encoder) {
  KES_RETURN_IF_ERROR(OpenModel(path, ModelKind::kEncoder, model));
  KES_RETURN_IF_ERROR(Encoder::Create(**model, options, encoder).WithContext(path));
  if (scores && !(*encoder)->scores()) {
    return Status::Error(path +
                         " embeds texts (it has no classification head to score a pair "
                         "with): use 'kestrel embed', or convert a reranker "
                         "(*ForSequenceClassification)");
  }
  if (!scores && (*encoder)->scores()) {
    return Status::Error(path +
                         " is a reranker (a cross-encoder: it scores a query and a "
                         "document together): use 'kestrel rerank'");
  }
  return OkStatus();
}

Status EncodeWithProgress(Encoder& encoder, const char* what,
                          const std::vector<std::vector<int32_t>>& ids, const size_t* second_starts,
                          float* out) {
  std::vector<const int32_t*> pointers;
  std::vector<size_t> lengths;
  for (const auto& seq : ids) pointers.push_back(seq.data()), lengths.push_back(seq.size());
  Progress progress(what, ids.size());
  progress.Update(0);
  encoder.SetProgress(
      [](void* context, size_t done, size_t) { static_cast<Progress*>(context)->Update(done); },
      &progress);
  const Status s = encoder.Encode(pointers.data(), lengths.data(), ids.size(), out, second_starts);
  encoder.SetProgress(nullptr, nullptr);
  return s;
}

Status ReadInputLines(const std::string& flag, const std::string& path,
                      std::vector<std::string>* lines) {
  std::string text;
  KES_RETURN_IF_ERROR(ReadInputText(flag, path, &text));
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;
    lines->emplace_back(text, start, stop - start);
    start = end + 1;
  }
  return OkStatus();
}

namespace {

ModelKind KindOf(const Model& model) {
  if (model.has_audio_encoder()) return ModelKind::kSpeech;
  if (model.is_encoder()) return ModelKind::kEncoder;
  return ModelKind::kTextGenerator;
}

}  // namespace

Status ExpectModelKind(const Model& model, const std::string& path, ModelKind wanted) {
  const ModelKind kind = KindOf(model);
  if (kind == wanted) return OkStatus();
  const std::string arch = model.meta().architecture()->str();
  switch (kind) {
    case ModelKind::kEncoder:
      return Status::Error(path + " is an encoder model (" + arch +
                           "): it embeds texts and generates nothing; use 'kestrel embed'");
    case ModelKind::kSpeech:
      return Status::Error(path + " is a speech model (" + arch +
                           "); use 'kestrel transcribe MODEL AUDIO.wav'");
    case ModelKind::kTextGenerator: break;
  }
  return Status::Error(path + " is a text generator (" + arch + ")" +
                       (wanted == ModelKind::kEncoder ? ", not an embedding model" : "") +
                       "; use 'kestrel run' or 'kestrel chat'");
}

Status OpenModel(const std::string& path, ModelKind wanted, std::unique_ptr<Model>* model) {
  KES_RETURN_IF_ERROR(Model::Open(path, model));
  return ExpectModelKind(**model, path, wanted);
}

Status OpenTextGenerator(const std::string& path, bool ctx_given, SessionOptions* options,
                         std::unique_ptr<Model>* model) {
  KES_RETURN_IF_ERROR(OpenModel(path, ModelKind::kTextGenerator, model));
  return ChooseContext(**model, options->context_length, ctx_given, 1, &options->context_length);
}

Status PrefillWithProgress(Session& session, const int32_t* tokens, size_t n, size_t* done) {
  *done = 0;
  const fb::Plan* prefill = session.model().FindPlan("prefill");
  const size_t chunk = prefill != nullptr ? prefill->max_tokens() : 0;
  if (chunk == 0 || n <= chunk) return OkStatus();
  Progress progress("prefill", n);
  // Whole chunks only, so the last call (Generate's) starts where one call would cut a chunk.
  const size_t ahead = (n - 1) / chunk * chunk;
  while (*done < ahead) {
    KES_RETURN_IF_ERROR(session.Prefill(tokens + *done, chunk));
    *done += chunk;
    progress.Update(*done);
  }
  return OkStatus();
}

}  // namespace kestrel::cli
