#include "tools/kl_divergence.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

namespace kestrel::cli {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 3 * sizeof(int32_t);
// A row keeps this many nats below its most likely token; log-probabilities below that (p <
// 1.1e-7) are stored as the floor and left out of the KL sum.
constexpr float kKeptNats = 16;
constexpr float kLevels = 65535;  // uint16 steps between the floor and the top

// Scored positions per chunk: the logits at ctx/2 .. ctx-2 (cmd_perplexity.cc).
size_t RowsPerChunk(size_t ctx) { return ctx - 1 - ctx / 2; }
// uint16 slots per row: 4 for the two floats, the values, padded to an even count.
size_t RowSlots(size_t vocab) { return 2 * ((vocab + 1) / 2) + 4; }
// Token ids and rows of one chunk, in bytes.
uint64_t ChunkBytes(size_t ctx, size_t vocab) {
  return uint64_t{ctx} * sizeof(int32_t) + uint64_t{RowsPerChunk(ctx)} * RowSlots(vocab) * 2;
}

std::string Quoted(const std::string& path) { return "base file '" + path + "'"; }

// The first index of the largest value (llama.cpp's tie rule for "same top").
template <typename T>
size_t ArgMax(const T* values, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (values[i] > values[best]) best = i;
  }
  return best;
}

// Quantizes one row of logits into `row` (RowSlots(vocab) uint16), as the file header says.
void EncodeRow(const float* logits, size_t vocab, uint16_t* row) {
  const auto [lo, hi] = std::minmax_element(logits, logits + vocab);
  const float max = *hi, floor = std::max(*lo, max - kKeptNats);
  const float scale = (max - floor) / kLevels;
  const float min_log_prob = static_cast<float>(floor - LogSumExp(logits, vocab));
  std::memcpy(row, &scale, sizeof(float));
  std::memcpy(row + 2, &min_log_prob, sizeof(float));
  uint16_t* q = row + 4;
  std::fill(q, row + RowSlots(vocab), uint16_t{0});
  if (scale == 0) return;  // every logit equal: all at the floor, each log p = -log(vocab)
  const float inv_scale = 1 / scale;
  for (size_t i = 0; i < vocab; ++i) {
    if (logits[i] <= floor) continue;
    // (max - floor) * inv_scale may round a hair above 65535.
    const float steps = std::nearbyint((logits[i] - floor) * inv_scale);
    q[i] = static_cast<uint16_t>(std::min(kLevels, steps));
  }
}

// llama.cpp's estimate of a mean and its standard error (0 below 11 values).
std::pair<double, double> MeanAndError(double sum, double sum2, size_t count) {
  if (count == 0) return {0, 0};
  const double mean = sum / count, variance = sum2 / count - mean * mean;
  return {mean, variance > 0 && count > 10 ? std::sqrt(variance / (count - 1)) : 0};
}

// Linear interpolation between the sorted values around `fraction` (llama.cpp's percentile).
double Percentile(const std::vector<float>& sorted, double fraction) {
  const double at = fraction * (sorted.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return (1 - (at - below)) * sorted[below] + (at - below) * sorted[above];
}

Status CheckHeader(const std::string& path, const char* magic, uint32_t file_ctx,
                   int32_t file_vocab, int32_t file_chunks, size_t ctx, size_t vocab) {
  KES_CHECK_OR_RETURN(std::memcmp(magic, kMagic, sizeof(kMagic)) == 0,
                      Quoted(path) +
                          " is not a log-probability file of llama-perplexity's "
                          "--kl-divergence-base format (no '_logits_' magic)");
  KES_CHECK_OR_RETURN(file_ctx == ctx, Quoted(path) + " was made with --ctx " +
                                           std::to_string(file_ctx) + "; this run uses --ctx " +
                                           std::to_string(ctx));
  KES_CHECK_OR_RETURN(file_vocab >= 0 && static_cast<size_t>(file_vocab) == vocab,
                      Quoted(path) + " was made with a vocabulary of " +
                          std::to_string(file_vocab) + " tokens; this model has " +
                          std::to_string(vocab));
  KES_CHECK_OR_RETURN(file_chunks > 0, Quoted(path) + " holds " + std::to_string(file_chunks) +
                                           " chunks; expected at least 1");
  return OkStatus();
}

// The file must be exactly as long as its header says: a truncated base file would otherwise
// show up only after scoring all chunks before the missing one.
Status CheckSize(const std::string& path, std::FILE* file, size_t ctx, size_t vocab,
                 size_t chunks) {
  struct stat st;
  KES_CHECK_OR_RETURN(::fstat(fileno(file), &st) == 0,
                      "cannot stat " + Quoted(path) + ": " + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t per_chunk = ChunkBytes(ctx, vocab);
  // Compared by division first: a corrupt chunk count must not overflow the product.
  const bool fits = size >= kHeaderBytes && (size - kHeaderBytes) / per_chunk >= chunks;
  const uint64_t expected = fits ? kHeaderBytes + chunks * per_chunk : 0;
  if (fits && size == expected) return OkStatus();
  return Status::Error(
      Quoted(path) + (fits ? " is longer than" : " is truncated:") + " " + std::to_string(size) +
      " bytes, where its header announces " + std::to_string(chunks) + " chunks of " +
      std::to_string(ctx) + " tokens over a vocabulary of " + std::to_string(vocab) + " (" +
      std::to_string(kHeaderBytes) + " + " + std::to_string(per_chunk) + " bytes per chunk)");
}

// The text's tokens must be the ones the base model scored.
Status CheckTokens(const std::string& path, const std::vector<int32_t>& file_tokens,
                   const std::vector<int32_t>& tokens) {
  KES_CHECK_OR_RETURN(tokens.size() >= file_tokens.size(),
                      "the text has " + std::to_string(tokens.size()) + " tokens, fewer than the " +
                          std::to_string(file_tokens.size()) + " " + Quoted(path) +
                          " was made from (another text?)");
  const auto [theirs, ours] = std::mismatch(file_tokens.begin(), file_tokens.end(), tokens.begin());
  if (theirs == file_tokens.end()) return OkStatus();
  return Status::Error(Quoted(path) + " was made from other tokens: token " +
                       std::to_string(theirs - file_tokens.begin()) + " is " +
                       std::to_string(*theirs) + " there, " + std::to_string(*ours) +
                       " here (another text or tokenizer?)");
}

}  // namespace

double LogSumExp(const float* logits, size_t vocab) {
  const double max = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (size_t i = 0; i < vocab; ++i) sum += std::exp(logits[i] - max);
  return max + std::log(sum);
}

KlDivergenceFile::KlDivergenceFile(const std::string& path, std::FILE* file,
                                   std::unique_ptr<AtomicOutput> out, size_t vocab)
    : path_(path),
      file_(file),
      out_(std::move(out)),
      vocab_(vocab),
      writing_(out_ != nullptr),
      row_(RowSlots(vocab)) {}

// An unfinished base file's temporary goes with out_; the file at path_ is never touched.
KlDivergenceFile::~KlDivergenceFile() {
  if (file_ != nullptr) std::fclose(file_);
}

Status KlDivergenceFile::Create(const std::string& path, size_t ctx, size_t vocab,
                                const std::vector<int32_t>& tokens, size_t n_chunks,
                                std::unique_ptr<KlDivergenceFile>* out) {
  std::unique_ptr<AtomicOutput> file;
  KES_RETURN_IF_ERROR(AtomicOutput::Create(path, &file, Quoted(path)));
  out->reset(new KlDivergenceFile(path, nullptr, std::move(file), vocab));
  AtomicOutput& o = *(*out)->out_;
  const uint32_t header_ctx = static_cast<uint32_t>(ctx);
  const int32_t header[2] = {static_cast<int32_t>(vocab), static_cast<int32_t>(n_chunks)};
  KES_RETURN_IF_ERROR(o.Write(kMagic, sizeof(kMagic)));
  KES_RETURN_IF_ERROR(o.Write(&header_ctx, sizeof(header_ctx)));
  KES_RETURN_IF_ERROR(o.Write(header, sizeof(header)));
  return o.Write(tokens.data(), n_chunks * ctx * sizeof(int32_t));
}

Status CheckBaseFileTarget(const std::string& path, const std::string& text_path,
                           const std::string& model_path) {
  const std::string flag = "--kl-divergence-base";
  KES_RETURN_IF_ERROR(CheckNotInput(path, text_path, "text file (-f)").WithContext(flag));
  KES_RETURN_IF_ERROR(CheckNotInput(path, model_path, "model").WithContext(flag));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0)) {
    return OkStatus();
  }
  char magic[sizeof(kMagic)] = {};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  const bool is_base = S_ISREG(st.st_mode) && file != nullptr &&
                       std::fread(magic, sizeof(magic), 1, file.get()) == 1 &&
                       std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
  KES_CHECK_OR_RETURN(is_base, flag + ": '" + path +
                                   "' exists and is not a base file (no '_logits_' magic): not "
                                   "writing a base over it. To compare against a base file, add "
                                   "--kl-divergence; to write one, give a new path");
  return OkStatus();
}

Status KlDivergenceFile::Open(const std::string& path, size_t ctx, size_t vocab,
                              const std::vector<int32_t>& tokens, size_t* n_chunks,
                              std::unique_ptr<KlDivergenceFile>* out) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  KES_CHECK_OR_RETURN(file != nullptr, "cannot open " + Quoted(path) + ": " + std::strerror(errno));
  out->reset(new KlDivergenceFile(path, file, nullptr, vocab));
  char magic[sizeof(kMagic)] = {};
  uint32_t file_ctx = 0;
  int32_t counts[2] = {};  // n_vocab, n_chunk
  const bool read = std::fread(magic, sizeof(magic), 1, file) == 1 &&
                    std::fread(&file_ctx, sizeof(file_ctx), 1, file) == 1 &&
                    std::fread(counts, sizeof(counts), 1, file) == 1;
  KES_CHECK_OR_RETURN(read || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0,
                      Quoted(path) + " is truncated: shorter than its " +
                          std::to_string(kHeaderBytes) + "-byte header");
  KES_RETURN_IF_ERROR(CheckHeader(path, magic, file_ctx, counts[0], counts[1], ctx, vocab));
  const size_t file_chunks = static_cast<size_t>(counts[1]);
  KES_RETURN_IF_ERROR(CheckSize(path, file, ctx, vocab, file_chunks));
  // Every chunk's tokens precede the rows; only those of the chunks scored are compared.
  std::vector<int32_t> file_tokens(file_chunks * ctx);
  KES_CHECK_OR_RETURN(std::fread(file_tokens.data(), sizeof(int32_t), file_tokens.size(), file) ==
                          file_tokens.size(),
                      "cannot read the tokens of " + Quoted(path));
  *n_chunks = *n_chunks == 0 ? file_chunks : std::min(*n_chunks, file_chunks);
  file_tokens.resize(*n_chunks * ctx);
  return CheckTokens(path, file_tokens, tokens);
}

Status KlDivergenceFile::AddPosition(const float* logits, int32_t next_token) {
  KES_RETURN_IF_ERROR(writing_ ? WriteRow(logits) : CompareRow(logits, next_token));
  ++rows_done_;
  return OkStatus();
}

Status KlDivergenceFile::WriteRow(const float* logits) {
  const auto [lo, hi] = std::minmax_element(logits, logits + vocab_);
  KES_CHECK_OR_RETURN(std::isfinite(*lo) && std::isfinite(*hi),
                      "position " + std::to_string(rows_done_) +
                          " has logits that are not finite; cannot write " + Quoted(path_));
  EncodeRow(logits, vocab_, row_.data());
  return out_->Write(row_.data(), row_.size() * sizeof(uint16_t));
}

// One position of llama.cpp's --kl-divergence: KL(base || this model) over the base's kept
// tokens, both NLLs of the correct token, and whether the most likely tokens agree.
Status KlDivergenceFile::CompareRow(const float* logits, int32_t next_token) {
  KES_CHECK_OR_RETURN(std::fread(row_.data(), sizeof(uint16_t), row_.size(), file_) == row_.size(),
                      "cannot read row " + std::to_string(rows_done_) + " of " + Quoted(path_));
  float scale = 0, min_log_prob = 0;
  std::memcpy(&scale, row_.data(), sizeof(float));
  std::memcpy(&min_log_prob, row_.data() + 2, sizeof(float));
  KES_CHECK_OR_RETURN(std::isfinite(scale) && scale >= 0 && std::isfinite(min_log_prob),
                      "row " + std::to_string(rows_done_) + " of " + Quoted(path_) + " has scale " +
                          std::to_string(scale) + " and minimum " + std::to_string(min_log_prob) +
                          ": not log-probabilities");
  const uint16_t* q = row_.data() + 4;
  const double lse = LogSumExp(logits, vocab_);
  double kld = 0;
  for (size_t i = 0; i < vocab_; ++i) {
    const double base_log_p = scale * q[i] + min_log_prob;
    if (base_log_p > -kKeptNats) kld += std::exp(base_log_p) * (base_log_p - (logits[i] - lse));
  }
  const double nll = lse - logits[next_token];
  const double nll_base = -(scale * q[next_token] + min_log_prob);
  const double dp = std::exp(-nll) - std::exp(-nll_base);
  KlDivergenceSums& s = sums_;
  s.nll += nll;
  s.nll2 += nll * nll;
  s.nll_base += nll_base;
  s.nll_base2 += nll_base * nll_base;
  s.nll_nll_base += nll * nll_base;
  s.kld += kld;
  s.kld2 += kld * kld;
  s.dp2 += dp * dp;
  s.dp4 += dp * dp * dp * dp;
  s.same_top += ArgMax(logits, vocab_) == ArgMax(q, vocab_);
  s.klds.push_back(static_cast<float>(kld));
  return OkStatus();
}

Status KlDivergenceFile::Finish() { return writing_ ? out_->Commit() : OkStatus(); }

KlDivergenceSummary KlDivergenceSums::Summarize() const {
  KlDivergenceSummary r;
  r.count = klds.size();
  if (r.count == 0) return r;
  const size_t n = r.count;
  const auto [log_ppl, log_ppl_err] = MeanAndError(nll, nll2, n);
  const auto [log_base, log_base_err] = MeanAndError(nll_base, nll_base2, n);
  r.ppl = std::exp(log_ppl);
  r.ppl_err = r.ppl * log_ppl_err;
  r.ppl_base = std::exp(log_base);
  r.ppl_base_err = r.ppl_base * log_base_err;
  // The two NLLs of a position are correlated: the ratio's error subtracts their covariance
  // (of the means, hence the second division by n - 1, as llama.cpp does).
  const double cov = n < 10 ? 0 : (nll_nll_base / n - (nll / n) * (nll_base / n)) / (n - 1);
  r.ln_ppl_ratio = log_ppl - log_base;
  r.ln_ppl_ratio_err =
      std::sqrt(std::max(0.0, log_ppl_err * log_ppl_err + log_base_err * log_base_err - 2 * cov));
  std::tie(r.kld_mean, r.kld_err) = MeanAndError(kld, kld2, n);
  std::vector<float> sorted = klds;
  std::sort(sorted.begin(), sorted.end());
  r.kld_max = sorted.back();
  r.kld_p999 = Percentile(sorted, 0.999);
  r.kld_p99 = Percentile(sorted, 0.99);
  r.kld_median = Percentile(sorted, 0.5);
  r.kld_min = sorted.front();
  const auto [mse, mse_err] = MeanAndError(dp2, dp4, n);
  r.rms_dp = std::sqrt(mse);
  r.rms_dp_err = r.rms_dp > 0 ? 0.5 / r.rms_dp * mse_err : 0;
  r.same_top = static_cast<double>(same_top) / n;
  r.same_top_err = n < 2 ? 0 : std::sqrt(r.same_top * (1 - r.same_top) / (n - 1));
  return r;
}

void PrintKlDivergence(const KlDivergenceSummary& s, std::FILE* out) {
  std::fprintf(out, "====== Perplexity statistics ======\n");
  std::fprintf(out, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", s.ppl, s.ppl_err);
  std::fprintf(out, "Mean PPL(base)                : %10.6f ± %10.6f\n", s.ppl_base,
               s.ppl_base_err);
  std::fprintf(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", s.ln_ppl_ratio,
               s.ln_ppl_ratio_err);
  const double ratio = std::exp(s.ln_ppl_ratio);
  std::fprintf(out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", ratio,
               ratio * s.ln_ppl_ratio_err);
  std::fprintf(out, "\n====== KL divergence statistics ======\n");
  std::fprintf(out, "Mean    KLD: %10.6f ± %10.6f\n", s.kld_mean, s.kld_err);
  std::fprintf(out, "Maximum KLD: %10.6f\n", s.kld_max);
  std::fprintf(out, "99.9%%   KLD: %10.6f\n", s.kld_p999);
  std::fprintf(out, "99.0%%   KLD: %10.6f\n", s.kld_p99);
  std::fprintf(out, "Median  KLD: %10.6f\n", s.kld_median);
  std::fprintf(out, "Minimum KLD: %10.6f\n", s.kld_min);
  std::fprintf(out, "\n====== Token probability statistics ======\n");
  std::fprintf(out, "RMS Δp    : %6.3f ± %5.3f %%\n", 100 * s.rms_dp, 100 * s.rms_dp_err);
  std::fprintf(out, "Same top p: %6.3f ± %5.3f %%\n", 100 * s.same_top, 100 * s.same_top_err);
}

std::string KlDivergenceJsonMembers(const KlDivergenceSummary& s) {
  const std::pair<const char*, double> members[] = {
      {"ppl_base", s.ppl_base},         {"ppl_base_err", s.ppl_base_err},
      {"ln_ppl_ratio", s.ln_ppl_ratio}, {"ln_ppl_ratio_err", s.ln_ppl_ratio_err},
      {"kld_mean", s.kld_mean},         {"kld_err", s.kld_err},
      {"kld_max", s.kld_max},           {"kld_p999", s.kld_p999},
      {"kld_p99", s.kld_p99},           {"kld_median", s.kld_median},
      {"kld_min", s.kld_min},           {"rms_dp", s.rms_dp},
      {"rms_dp_err", s.rms_dp_err},     {"same_top", s.same_top},
      {"same_top_err", s.same_top_err}};
  std::string json = ", \"kld_positions\": " + std::to_string(s.count);
  for (const auto& [name, value] : members) {
    char number[40];
    std::snprintf(number, sizeof(number), "%.17g", value);
    json += std::string(", \"") + name + "\": " + number;
  }
  return json;
}

}  // namespace kestrel::cli
