// kestrel rerank MODEL.kes -q QUERY (-d DOC ... | -f FILE) [--json]: a cross-encoder's score of
// each document against the query (bge-reranker, ms-marco cross-encoders), best first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kRerankUsage[] =
    "usage: kestrel rerank MODEL.kes -q QUERY (-d DOC ... | -f FILE) [options]\n"
    "  -q, --query TEXT    the query\n"
    "  -d, --doc TEXT      a document to score (may be given several times)\n"
    "  -f, --file FILE     documents to score, one per line; '-' reads standard input\n"
    "  --top N             print only the N best documents (default: all)\n" KESTREL_THREADS_USAGE
    "  --json              print {\"scores\": [...], \"logits\": [...], \"token_counts\": [...]}\n"
    "                      in the documents' order\n"
    "Prints one line per document, best first: its score (the sigmoid of the model's logit, as\n"
    "sentence-transformers' CrossEncoder gives it), its line number and its text. A pair longer\n"
    "than the model's sequence limit is cut, the longer side first.\n";

}  // namespace

int RerankCommand(const std::vector<std::string>& args) {
  std::string model_path, file, query;
  bool has_query = false, json = false;
  std::vector<std::string> docs;
  int64_t top = -1;
  EncoderOptions options;
  options.n_threads = DefaultThreads();
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-q" || arg == "--query") {
      has_query = true;
      *s = flags.Value(arg, &query);
    } else if (arg == "-d" || arg == "--doc") {
      docs.emplace_back();
      *s = flags.Value(arg, &docs.back());
    } else if (arg == "-f" || arg == "--file") {
      *s = flags.Value(arg, &file);
    } else if (arg == "--top") {
      *s = flags.Int(arg, 1, INT32_MAX, &top);
    } else if (arg == "--json") {
      json = true;
    } else {
      return ThreadsFlag(flags, arg, &options.n_threads, s);
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "rerank", kRerankUsage, flag, &model_path)) {
    return *exit_code;
  }
  if (!has_query) return Fail(std::string("give the query with -q\n") + kRerankUsage);
  if (docs.empty() == file.empty()) {
    return Fail(std::string("give documents with -d, or -f FILE (one of them)\n") + kRerankUsage);
  }
  Status s = file.empty() ? OkStatus() : ReadInputLines("-f", file, &docs);
  if (!s.ok()) return Fail(s.message());
  if (docs.empty()) return Fail("no documents to score");
  std::unique_ptr<Model> model;
  std::unique_ptr<Encoder> encoder;
  s = OpenEncoder(model_path, options, /*scores=*/true, &model, &encoder);
  if (!s.ok()) return Fail(s.message());
  if (encoder->embedding_dim() != 1) {
    return Fail(model_path + " gives " + std::to_string(encoder->embedding_dim()) +
                " scores per pair; a reranker gives one");
  }

  std::vector<std::vector<int32_t>> ids(docs.size());
  std::vector<size_t> second_starts(docs.size());
  for (size_t i = 0; s.ok() && i < docs.size(); ++i) {
    s = encoder->TokenizePair(query, docs[i], &ids[i], &second_starts[i]);
  }
  if (!s.ok()) return Fail(s.message());
  std::vector<float> logits(docs.size());
  s = EncodeWithProgress(*encoder, "scoring document", ids, second_starts.data(), logits.data());
  if (!s.ok()) return Fail(s.message());
  std::vector<double> scores(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) scores[i] = 1.0 / (1.0 + std::exp(-double{logits[i]}));
  if (json) {
    const auto list = [&](const char* name, const auto& values, const char* format) {
      std::printf("\"%s\": [", name);
      for (size_t i = 0; i < values.size(); ++i) {
        std::printf(i ? ", " : "");
        std::printf(format, values[i]);
      }
      std::printf("]");
    };
    std::printf("{");
    list("scores", scores, "%.9g");
    std::printf(",\n ");
    list("logits", logits, "%.9g");
    std::printf(",\n ");
    std::vector<size_t> counts;
    for (const auto& seq : ids) counts.push_back(seq.size());
    list("token_counts", counts, "%zu");
    std::printf("}\n");
    return 0;
  }
  std::vector<size_t> order(docs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  const size_t shown = top < 0 ? order.size() : std::min(order.size(), static_cast<size_t>(top));
  for (size_t r = 0; r < shown; ++r) {
    std::printf("%.6f\t%zu\t%s\n", scores[order[r]], order[r] + 1, docs[order[r]].c_str());
  }
  return 0;
}

}  // namespace kestrel::cli
