#include "tests/support/llama_cpp_logits.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/support/test_support.h"

namespace kestrel::test {
namespace {

class Reader {
 public:
  explicit Reader(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  bool Take(void* out, size_t n) {
    if (bytes_.size() - at_ < n) return false;
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool String(std::string* out) {
    uint32_t n = 0;
    if (!Take(&n, sizeof(n)) || bytes_.size() - at_ < n) return false;
    out->assign(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return true;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

void LogSoftmax(const double* logits, size_t n, std::vector<double>* out) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(logits[i] - max);
  const double log_z = max + std::log(sum);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) (*out)[i] = logits[i] - log_z;
}

}  // namespace

std::string ReadLlamaCppLogits(const std::string& path, LlamaCppLogits* f) {
  Reader r(ReadBytes(path));
  char magic[8];
  std::string gguf_name;
  if (!r.Take(magic, sizeof(magic)) || std::memcmp(magic, "KESLGT1", 8) != 0) {
    return path + ": not a logits fixture (magic KESLGT1)";
  }
  if (!r.String(&f->make_args) || !r.String(&f->text) || !r.String(&f->provenance) ||
      !r.String(&gguf_name) || !r.Take(&f->gguf_hash, 8) || !r.Take(&f->text_tokens, 4) ||
      !r.Take(&f->n_tokens, 4) || !r.Take(&f->vocab, 4)) {
    return path + ": truncated header";
  }
  f->tokens.resize(f->n_tokens);
  f->top.resize(f->n_tokens);
  if (!r.Take(f->tokens.data(), 4 * f->n_tokens) || !r.Take(f->top.data(), 4 * f->n_tokens)) {
    return path + ": truncated tokens";
  }
  f->logits.resize(size_t{f->n_tokens} * f->vocab);
  std::vector<uint16_t> q(f->vocab);
  for (uint32_t t = 0; t < f->n_tokens; ++t) {
    float lo = 0, step = 0;
    if (!r.Take(&lo, 4) || !r.Take(&step, 4) || !r.Take(q.data(), 2 * q.size())) {
      return path + ": truncated at row " + std::to_string(t);
    }
    for (uint32_t v = 0; v < f->vocab; ++v) f->logits[size_t{t} * f->vocab + v] = lo + step * q[v];
  }
  return r.AtEnd() ? "" : path + ": bytes after the last row";
}

std::string ReadLlamaCppLogitsAndModel(const std::string& path, const std::string& maker,
                                       const std::string& gguf, LlamaCppLogits* f) {
  const std::string error = ReadLlamaCppLogits(path, f);
  if (!error.empty()) return error;
  return RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/" +
                        maker + " " + gguf + " " + f->make_args);
}

uint64_t Fnv1a64(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

LogitAgreement CompareWithLlamaCpp(const LlamaCppLogits& f, const std::vector<float>& ours,
                                   uint32_t first, uint32_t end) {
  LogitAgreement a;
  const uint32_t positions = end - first;
  std::vector<double> row(f.vocab), log_p, log_q;
  for (uint32_t t = first; t < end; ++t) {
    const double* base = &f.logits[size_t{t} * f.vocab];
    const float* mine = &ours[size_t{t} * f.vocab];
    for (uint32_t v = 0; v < f.vocab; ++v) {
      row[v] = mine[v];
      a.logit_diff_max = std::max(a.logit_diff_max, std::fabs(row[v] - base[v]));
    }
    LogSoftmax(base, f.vocab, &log_p);
    LogSoftmax(row.data(), f.vocab, &log_q);
    double kl = 0;
    for (uint32_t v = 0; v < f.vocab; ++v) kl += std::exp(log_p[v]) * (log_p[v] - log_q[v]);
    a.kl_mean += kl / positions;
    a.kl_max = std::max(a.kl_max, kl);
    const int32_t top = static_cast<int32_t>(std::max_element(mine, mine + f.vocab) - mine);
    if (top != f.top[t] && ++a.top_differ <= 5) {
      a.first_differences += "position " + std::to_string(t) + ": top " + std::to_string(top) +
                             ", llama.cpp's " + std::to_string(f.top[t]) + "\n";
    }
  }
  return a;
}

}  // namespace kestrel::test
