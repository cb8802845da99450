// kestrel embed MODEL.kes (-p TEXT | -f FILE) [--json]: one embedding per text, with an encoder
// model (BERT and friends).
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kEmbedUsage[] =
    "usage: kestrel embed MODEL.kes (-p TEXT | -f FILE | --ids FILE) [options]\n"
    "  -p, --prompt TEXT   a text to embed (may be given several times)\n"
    "  -f, --file FILE     texts to embed, one per line; '-' reads standard input\n"
    "  --ids FILE          token ids to embed instead of texts: one sequence per line, ids\n"
    "                      separated by spaces, special tokens included; '-': standard "
    "input\n" KESTREL_THREADS_USAGE
    "  --json              print {\"embeddings\": [[...], ...], \"token_counts\": [...]}\n"
    "  --disable-targets T SIMD targets not to use, e.g. AVX3_DL (compare targets on one CPU)\n"
    "Texts longer than the model's sequence limit are truncated, as sentence-transformers does.\n";

Status ParseIds(const std::string& line, size_t number, std::vector<int32_t>* ids) {
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    int64_t v;
    KES_RETURN_IF_ERROR(ParseInt("--ids line " + std::to_string(number), word, 0, INT32_MAX, &v));
    ids->push_back(static_cast<int32_t>(v));
  }
  return OkStatus();
}

void PrintJson(const std::vector<float>& out, size_t dim,
               const std::vector<std::vector<int32_t>>& ids) {
  std::printf("{\"embeddings\": [");
  for (size_t i = 0; i < ids.size(); ++i) {
    std::printf("%s[", i ? ",\n  " : "\n  ");
    for (size_t j = 0; j < dim; ++j) std::printf("%s%.9g", j ? ", " : "", out[i * dim + j]);
    std::printf("]");
  }
  std::printf("],\n \"token_counts\": [");
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%zu", i ? ", " : "", ids[i].size());
  std::printf("]}\n");
}

}  // namespace

int EmbedCommand(const std::vector<std::string>& args) {
  std::string model_path, file, ids_file;
  std::vector<std::string> texts;
  bool json = false;
  EncoderOptions options;
  options.n_threads = DefaultThreads();
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-p" || arg == "--prompt") {
      texts.emplace_back();
      *s = flags.Value(arg, &texts.back());
    } else if (arg == "-f" || arg == "--file") {
      *s = flags.Value(arg, &file);
    } else if (arg == "--ids") {
      *s = flags.Value(arg, &ids_file);
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--disable-targets") {
      *s = flags.DisableTargets(arg);
    } else {
      return ThreadsFlag(flags, arg, &options.n_threads, s);
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "embed", kEmbedUsage, flag, &model_path)) {
    return *exit_code;
  }
  if ((!texts.empty()) + (!file.empty()) + (!ids_file.empty()) != 1) {
    return Fail(std::string("give texts with -p, or one of -f FILE and --ids FILE\n") +
                kEmbedUsage);
  }
  // The input files first: a missing one is found before the model is mapped.
  std::vector<std::string> id_lines;
  Status s = ids_file.empty() ? OkStatus() : ReadInputLines("--ids", ids_file, &id_lines);
  if (s.ok() && !file.empty()) s = ReadInputLines("-f", file, &texts);
  if (!s.ok()) return Fail(s.message());
  std::unique_ptr<Model> model;
  std::unique_ptr<Encoder> encoder;
  s = OpenEncoder(model_path, options, /*scores=*/false, &model, &encoder);
  if (!s.ok()) return Fail(s.message());

  std::vector<std::vector<int32_t>> ids;
  if (!ids_file.empty()) {
    for (size_t i = 0; s.ok() && i < id_lines.size(); ++i) {
      ids.emplace_back();
      s = ParseIds(id_lines[i], i + 1, &ids.back());
    }
  } else {
    for (size_t i = 0; s.ok() && i < texts.size(); ++i) {
      ids.emplace_back();
      s = encoder->Tokenize(texts[i], &ids.back());
    }
  }
  if (!s.ok()) return Fail(s.message());
  if (ids.empty()) return Fail("no texts to embed");

  const size_t dim = encoder->embedding_dim();
  std::vector<float> out(ids.size() * dim);
  s = EncodeWithProgress(*encoder, "embedding text", ids, nullptr, out.data());
  if (!s.ok()) return Fail(s.message());
  if (json) {
    PrintJson(out, dim, ids);
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%zu tokens:", ids[i].size());
      for (size_t j = 0; j < dim; ++j) std::printf(" %.6f", out[i * dim + j]);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace kestrel::cli
