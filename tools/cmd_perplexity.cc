// kestrel perplexity MODEL.kes -f TEXT: how well the model predicts a text, measured the way
// llama.cpp's `llama-perplexity` does, so the two tools' numbers compare:
//   - the whole text is tokenized once (BOS first when the model's tokenizer adds one);
//   - the tokens are cut into consecutive chunks of --ctx tokens, the remainder dropped;
//   - each chunk is scored from position 0 of a fresh sequence, its first token replaced by BOS
//     (when the tokenizer adds one);
//   - only the second half of a chunk counts, so every scored token has at least ctx/2 tokens of
//     context: the logits at positions j = ctx/2 .. ctx-2 score token j + 1, which is
//     ctx - ctx/2 - 1 tokens per chunk (llama.cpp's count).
// PPL = exp(mean NLL) and its error is llama.cpp's: PPL * sqrt(var(NLL) / (count - 1)).
// --stream scores the same chunks as one sequence instead, from position 0 and on past the
// context (the session keeps the attention sinks and the most recent tokens), no token replaced
// by BOS: the same positions are scored (offsets ctx/2 .. ctx-2 of every chunk), so the two modes
// compare token for token and differ only in the context each scored token sees (at least ctx/2
// tokens of its chunk; streamed, after the first chunk, the sinks and the ctx - sinks most recent
// tokens).
// Log-softmax is done in double.
// --kl-divergence-base FILE saves the scored positions' log-probabilities (llama.cpp's file
// format); adding --kl-divergence compares this model against them instead (kl_divergence.h).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/cli.h"
#include "tools/kl_divergence.h"

namespace kestrel::cli {
namespace {

const char kPerplexityUsage[] =
    "usage: kestrel perplexity MODEL.kes -f TEXT_FILE [options]\n"
    "  -f, --file PATH     the text to score (UTF-8); '-' reads standard input\n"
    "  -c, --ctx N         tokens per chunk; the second half of each is scored (default 512;\n"
    "                      more than the model's context is lowered to it, with a warning)\n"
    "  --chunks N          score only the first N chunks (default: all)\n"
    "  --stream            score the chunks as one sequence running past the context (sinks plus\n"
    "                      the most recent tokens) instead of each from position 0: the same\n"
    "                      tokens are scored (second half of every chunk, at least ctx/2 tokens\n"
    "                      of context each), with all the context the session "
    "keeps\n" KESTREL_THREADS_USAGE KESTREL_KV_FLAGS_USAGE
    "  --json              print one JSON object instead of the summary line\n"
    "  --kl-divergence-base PATH\n"
    "                      save the log-probabilities of the scored tokens to PATH (llama.cpp's\n"
    "                      format), or with --kl-divergence read them as the base to compare to\n"
    "  --kl-divergence     report the KL divergence from the base in --kl-divergence-base\n"
    "  --disable-targets T SIMD targets not to use, e.g. AVX3_DL\n";

// The NLL sums over the scored tokens, as llama.cpp keeps them.
struct NllSums {
  double nll = 0, nll2 = 0;
  size_t count = 0;
  double Perplexity() const { return std::exp(nll / count); }
  // llama.cpp's standard error of the perplexity (0 when it is undefined).
  double Error() const {
    const double mean = nll / count, variance = nll2 / count - mean * mean;
    if (count < 2 || variance <= 0) return 0;
    return Perplexity() * std::sqrt(variance / (count - 1));
  }
};

// Scores one chunk from the session's position (0, or where the previous chunk ended when
// streaming) and adds the NLL of its second half to *sums, and each of those positions to *kld
// when given. The score plan runs `step` tokens at a time, so Score is called `step` tokens at a
// time too: the same chunks as one call over the whole chunk, with a logits buffer of `step` rows
// instead of `ctx`.
Status ScoreChunk(Session& session, const int32_t* tokens, size_t ctx, size_t step, float* logits,
                  NllSums* sums, KlDivergenceFile* kld) {
  const size_t vocab = session.vocab_size(), first = ctx / 2;
  for (size_t begin = 0; begin < ctx; begin += step) {
    const size_t n = std::min(step, ctx - begin);
    KES_RETURN_IF_ERROR(session.Score(tokens + begin, n, logits));
    for (size_t j = std::max(begin, first); j < begin + n && j + 1 < ctx; ++j) {
      const float* row = logits + (j - begin) * vocab;
      const double nll = LogSumExp(row, vocab) - row[tokens[j + 1]];
      sums->nll += nll;
      sums->nll2 += nll * nll;
      ++sums->count;
      if (kld != nullptr) KES_RETURN_IF_ERROR(kld->AddPosition(row, tokens[j + 1]));
    }
  }
  return OkStatus();
}

// What the flags ask for.
struct PerplexityOptions {
  std::string model_path, text_path, kld_base_path;
  size_t ctx = 512, max_chunks = 0;  // max_chunks 0: all
  bool json = false, kl_divergence = false, stream = false;
  SessionOptions session;
  PerplexityOptions() { session.n_threads = DefaultThreads(); }
};

constexpr size_t kMinChunk = 4;

// perplexity's own flags, read into *o.
FlagHandler PerplexityFlags(PerplexityOptions* o) {
  return [o](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-f" || arg == "--file") {
      *s = flags.Value(arg, &o->text_path);
    } else if (arg == "-c" || arg == "--ctx") {
      // Below 4 tokens a chunk scores fewer than 2 tokens: no mean worth the name.
      *s = flags.Int(arg, kMinChunk, 1 << 24, &o->ctx);
    } else if (arg == "--chunks") {
      *s = flags.Int(arg, 1, 1 << 30, &o->max_chunks);
    } else if (arg == "--stream") {
      o->stream = true;
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--kl-divergence-base") {
      *s = flags.Value(arg, &o->kld_base_path);
    } else if (arg == "--kl-divergence") {
      o->kl_divergence = true;
    } else if (arg == "--disable-targets") {
      *s = flags.DisableTargets(arg);
    } else {
      return ThreadsFlag(flags, arg, &o->session.n_threads, s) ||
             KvFlag(flags, arg, &o->session.kv, s);
    }
    return true;
  };
}

// What the flags asked for, once all are read: the text, and a --kl-divergence-base that goes
// with the rest.
Status CheckOptions(const PerplexityOptions& o) {
  KES_CHECK_OR_RETURN(!o.text_path.empty(),
                      std::string("no text file given (-f)\n") + kPerplexityUsage);
  KES_CHECK_OR_RETURN(!o.kl_divergence || !o.kld_base_path.empty(),
                      "--kl-divergence needs the base model's file: --kl-divergence-base PATH");
  // llama.cpp's base file holds chunked scores; a streamed one would pass for them.
  KES_CHECK_OR_RETURN(!o.stream || o.kld_base_path.empty(),
                      "--stream: expected no --kl-divergence-base (the base file holds "
                      "llama.cpp's chunked scores), found '" +
                          o.kld_base_path + "'");
  // A base run writes PATH: checked before any work, so a forgotten --kl-divergence never
  // costs the text, the model or some other file.
  if (!o.kld_base_path.empty() && !o.kl_divergence) {
    KES_RETURN_IF_ERROR(CheckBaseFileTarget(o.kld_base_path, o.text_path, o.model_path));
  }
  return OkStatus();
}

// A run: the model, its session and score-plan step, the text's tokens and the chunks scored.
struct PerplexityRun {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
  size_t step = 0;  // tokens per Score call
  std::vector<int32_t> tokens;
  size_t n_chunks = 0;
  std::unique_ptr<KlDivergenceFile> kld;  // with --kl-divergence-base
};

Status OpenScoringModel(const PerplexityOptions& o, PerplexityRun* run) {
  KES_RETURN_IF_ERROR(OpenModel(o.model_path, ModelKind::kTextGenerator, &run->model));
  const Model& model = *run->model;
  const fb::Plan* score_plan = model.FindPlan("score");
  KES_CHECK_OR_RETURN(score_plan != nullptr && score_plan->max_tokens() > 0,
                      "the model has no 'score' plan, which perplexity needs (convert it again)");
  run->step = score_plan->max_tokens();
  return OkStatus();
}

Status TokenizeText(const PerplexityOptions& o, PerplexityRun* run) {
  std::string text;
  KES_RETURN_IF_ERROR(ReadInputText("-f", o.text_path, &text));
  const Status s = run->model->tokenizer().Encode(text, /*add_special=*/true,
                                                  /*parse_special=*/false, &run->tokens);
  KES_RETURN_IF_ERROR(s.WithContext("text file '" + o.text_path + "'"));
  KES_CHECK_OR_RETURN(run->tokens.size() >= o.ctx,
                      "text file '" + o.text_path + "' has " + std::to_string(run->tokens.size()) +
                          " tokens; --ctx " + std::to_string(o.ctx) + " needs at least " +
                          std::to_string(o.ctx) + " for one chunk");
  run->n_chunks = run->tokens.size() / o.ctx;
  if (o.max_chunks > 0) run->n_chunks = std::min(run->n_chunks, o.max_chunks);
  return OkStatus();
}

Status OpenSession(const PerplexityOptions& o, PerplexityRun* run) {
  SessionOptions options = o.session;
  options.context_length = o.ctx;
  KES_RETURN_IF_ERROR(CreateSession(*run->model, options, &run->session));
  KES_CHECK_OR_RETURN(run->session->context_length() >= o.ctx,
                      "--ctx " + std::to_string(o.ctx) + " exceeds the session's context of " +
                          std::to_string(run->session->context_length()) + " tokens");
  return OkStatus();
}

// --kl-divergence-base: creates the base file for this run's chunks, or (--kl-divergence) opens
// it, checks it against this run's text, --ctx and vocabulary, and scores the chunks it holds
// (no more than --chunks).
Status OpenBaseFile(const PerplexityOptions& o, PerplexityRun* run) {
  if (o.kld_base_path.empty()) return OkStatus();
  const size_t vocab = run->model->vocab_size();
  if (!o.kl_divergence) {
    KES_RETURN_IF_ERROR(KlDivergenceFile::Create(o.kld_base_path, o.ctx, vocab, run->tokens,
                                                 run->n_chunks, &run->kld));
    // Said every time: a comparing run that forgot --kl-divergence would replace the base.
    std::fprintf(stderr,
                 "kestrel: writing the KL-divergence base to '%s' (use --kl-divergence to "
                 "compare against it)\n",
                 o.kld_base_path.c_str());
    return OkStatus();
  }
  run->n_chunks = o.max_chunks;
  return KlDivergenceFile::Open(o.kld_base_path, o.ctx, vocab, run->tokens, &run->n_chunks,
                                &run->kld);
}

// Scores every chunk, printing the running perplexity to stderr as llama.cpp does. Chunked, each
// starts a fresh sequence with BOS; streamed, each continues the one before.
Status ScoreChunks(const PerplexityOptions& o, PerplexityRun* run, NllSums* sums) {
  const Tokenizer& tokenizer = run->model->tokenizer();
  const bool replace_with_bos =
      !o.stream && tokenizer.config().add_bos && tokenizer.config().bos_id >= 0;
  std::vector<float> logits(run->step * run->model->vocab_size());  // [step, vocab]
  for (size_t c = 0; c < run->n_chunks; ++c) {
    int32_t* chunk = run->tokens.data() + c * o.ctx;
    const int32_t original = chunk[0];
    if (replace_with_bos) chunk[0] = tokenizer.config().bos_id;
    if (c == 0 || !o.stream) run->session->Reset();
    const Status s =
        ScoreChunk(*run->session, chunk, o.ctx, run->step, logits.data(), sums, run->kld.get());
    chunk[0] = original;  // the previous chunk's last token stays what the text says
    KES_RETURN_IF_ERROR(s.WithContext("chunk " + std::to_string(c + 1)));
    std::fprintf(stderr, "[%zu]%.4f,", c + 1, sums->Perplexity());
    std::fflush(stderr);
  }
  std::fputc('\n', stderr);
  return run->kld ? run->kld->Finish() : OkStatus();
}

void PrintResults(const PerplexityOptions& o, const PerplexityRun& run, const NllSums& sums,
                  double seconds) {
  const size_t threads = run.session->n_threads();
  const bool comparing = run.kld && run.kld->comparing();
  const KlDivergenceSummary kld = comparing ? run.kld->sums().Summarize() : KlDivergenceSummary();
  if (o.json) {
    // text_tokens lets a caller check that another runtime tokenized the text the same way.
    std::printf(
        "{\"model\": \"%s\", \"ctx\": %zu, \"chunks\": %zu, \"tokens_scored\": %zu, "
        "\"text_tokens\": %zu, \"ppl\": %.17g, \"ppl_err\": %.17g, \"seconds\": %.4f, "
        "\"threads\": %zu, \"stream\": %s, \"sinks\": %zu, \"kv_type\": \"%s\"%s}\n",
        JsonEscape(o.model_path).c_str(), o.ctx, run.n_chunks, sums.count, run.tokens.size(),
        sums.Perplexity(), sums.Error(), seconds, threads, o.stream ? "true" : "false",
        o.session.kv.sinks, ops::KvTypeName(o.session.kv.type),
        comparing ? KlDivergenceJsonMembers(kld).c_str() : "");
    return;
  }
  const std::string streamed =
      o.stream ? ", streamed with " + std::to_string(o.session.kv.sinks) + " sinks" : "";
  std::printf("perplexity: %.4f ± %.5f over %zu tokens (%zu chunks of %zu%s), KV %s\n",
              sums.Perplexity(), sums.Error(), sums.count, run.n_chunks, o.ctx, streamed.c_str(),
              ops::KvTypeName(o.session.kv.type));
  if (comparing) PrintKlDivergence(kld, stdout);
  if (run.kld && !comparing) {
    std::fprintf(stderr, "log-probabilities of %zu positions saved to '%s'\n", sums.count,
                 o.kld_base_path.c_str());
  }
  std::fprintf(stderr, "%zu tokens of context scored in %.2f s (%.2f tokens/s), %zu threads\n",
               run.n_chunks * o.ctx, seconds, run.n_chunks * o.ctx / seconds, threads);
}

}  // namespace

int PerplexityCommand(const std::vector<std::string>& args) {
  PerplexityOptions options;
  if (std::optional<int> exit_code = ReadCommandFlags(
          args, "perplexity", kPerplexityUsage, PerplexityFlags(&options), &options.model_path)) {
    return *exit_code;
  }
  Status s = CheckOptions(options);
  PerplexityRun run;
  if (s.ok()) s = OpenScoringModel(options, &run);
  // The chunk size is the measurement: lowered to the model's context, it is always said, even
  // from the default.
  if (s.ok()) {
    s = ChooseContext(*run.model, options.ctx, /*given=*/true, kMinChunk, &options.ctx);
  }
  if (s.ok()) s = TokenizeText(options, &run);
  if (s.ok()) s = OpenSession(options, &run);
  if (s.ok()) s = OpenBaseFile(options, &run);
  if (!s.ok()) return Fail(s.message());

  NllSums sums;
  const auto start = std::chrono::steady_clock::now();
  s = ScoreChunks(options, &run, &sums);
  if (!s.ok()) return Fail(s.message());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintResults(options, run, sums, seconds);
  return 0;
}

}  // namespace kestrel::cli
