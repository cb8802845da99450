// KL divergence of a model against a base model over the positions `kestrel perplexity` scores,
// with llama.cpp's `llama-perplexity --kl-divergence-base FILE [--kl-divergence]` protocol and
// file format, so a base file written by either tool is read by the other.
//
// The file (all fields little-endian, as llama.cpp writes them on every target we build for):
//   char     magic[8] = "_logits_"
//   uint32   n_ctx                       tokens per chunk (--ctx)
//   int32    n_vocab
//   int32    n_chunk
//   int32    tokens[n_chunk * n_ctx]     the text's tokens, BOS first when the tokenizer adds one
//                                        (the original tokens, not the per-chunk BOS replacements)
//   then, chunk by chunk, one row per scored position (n_ctx - 1 - n_ctx/2 of them per chunk):
//   float32  scale, min_log_prob         (8 bytes: the first 4 uint16 slots of the row)
//   uint16   q[n_vocab]                  log p_i ~= scale * q_i + min_log_prob
//   uint16   pad[n_vocab % 2]            rows are 2 * ceil(n_vocab / 2) + 4 uint16 long
// A row keeps the 16 nats below the most likely token: floor = max(min logit, max logit - 16),
// scale = (max logit - floor) / 65535, q_i = round((logit_i - floor) / scale), 0 at or below the
// floor; min_log_prob is the floor's log-probability. Tokens at the floor (p <= e^-16) are left
// out of the KL sum, as llama.cpp leaves them out.
//
// Rows are written and read one at a time: the file for Gemma 3's 262144-token vocabulary is
// 128 MiB per 512-token chunk, and no more than one row of it is ever in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/output_file.h"
#include "runtime/status.h"

namespace kestrel::cli {

// log(sum_i exp(logits[i])), in double, shifted by the row's maximum so nothing overflows.
double LogSumExp(const float* logits, size_t vocab);

// What --kl-divergence reports, with llama.cpp's uncertainties (0 for fewer than 11 positions).
// Fractions (same_top, rms_dp) are in [0, 1]; the text output prints them as percentages.
struct KlDivergenceSummary {
  size_t count = 0;             // positions compared
  double ppl = 0, ppl_err = 0;  // PPL(Q), this model's
  double ppl_base = 0, ppl_base_err = 0;
  double ln_ppl_ratio = 0, ln_ppl_ratio_err = 0;  // mean ln(PPL(Q) / PPL(base))
  double kld_mean = 0, kld_err = 0;
  double kld_max = 0, kld_p999 = 0, kld_p99 = 0, kld_median = 0, kld_min = 0;
  double rms_dp = 0, rms_dp_err = 0;      // RMS of p(correct token) - p_base(correct token)
  double same_top = 0, same_top_err = 0;  // share of positions with the same most likely token
};

// The sums llama.cpp keeps per compared position (in double), and every position's KLD for the
// percentiles.
struct KlDivergenceSums {
  double nll = 0, nll2 = 0, nll_base = 0, nll_base2 = 0, nll_nll_base = 0;
  double kld = 0, kld2 = 0, dp2 = 0, dp4 = 0;
  size_t same_top = 0;
  std::vector<float> klds;
  KlDivergenceSummary Summarize() const;
};

// A --kl-divergence-base file being written (base run) or read and compared (--kl-divergence).
class KlDivergenceFile {
 public:
  // Base run: writes the header and the first n_chunks * ctx of `tokens` now, into a temporary
  // beside `path`; AddPosition then appends one row per scored position, in scoring order.
  // Finish puts the file in place: a file left unfinished (an error while scoring, SIGINT) is
  // removed, and whatever `path` held before stays as it was.
  static Status Create(const std::string& path, size_t ctx, size_t vocab,
                       const std::vector<int32_t>& tokens, size_t n_chunks,
                       std::unique_ptr<KlDivergenceFile>* out);
  // --kl-divergence: opens a base file and checks it was made from this run's text, --ctx and
  // vocabulary, with every row it announces present. *n_chunks: on entry the chunks this run
  // asks for (0: as many as the file holds); on return the chunks to score.
  static Status Open(const std::string& path, size_t ctx, size_t vocab,
                     const std::vector<int32_t>& tokens, size_t* n_chunks,
                     std::unique_ptr<KlDivergenceFile>* out);
  ~KlDivergenceFile();

  bool comparing() const { return !writing_; }
  // One scored position: its `vocab` logits and the token that follows it. Writes the row, or
  // reads the base's row and adds the comparison to sums().
  Status AddPosition(const float* logits, int32_t next_token);
  // Flushes, closes and renames a written file into place, reporting a failed write (a full
  // disk).
  Status Finish();
  const KlDivergenceSums& sums() const { return sums_; }

 private:
  KlDivergenceFile(const std::string& path, std::FILE* file, std::unique_ptr<AtomicOutput> out,
                   size_t vocab);
  Status WriteRow(const float* logits);
  Status CompareRow(const float* logits, int32_t next_token);

  std::string path_;
  std::FILE* file_;                    // the base being read (--kl-divergence)
  std::unique_ptr<AtomicOutput> out_;  // the base being written
  size_t vocab_;
  bool writing_;
  size_t rows_done_ = 0;
  std::vector<uint16_t> row_;  // one file row: scale and min_log_prob, then the quantized values
  KlDivergenceSums sums_;
};

// Refuses a --kl-divergence-base PATH that a base run must not write: the text file or the
// model (the same file), or an existing file that is not a base file (no '_logits_' magic; an
// empty file may be written). An existing base file is replaced, as llama.cpp does.
Status CheckBaseFileTarget(const std::string& path, const std::string& text_path,
                           const std::string& model_path);

// llama.cpp's "====== ... statistics ======" blocks, under its names for each figure.
void PrintKlDivergence(const KlDivergenceSummary& s, std::FILE* out);
// The summary as JSON members (", \"kld_mean\": ..."), to append inside an object.
std::string KlDivergenceJsonMembers(const KlDivergenceSummary& s);

}  // namespace kestrel::cli
