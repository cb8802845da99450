#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/argmax.h"

namespace kestrel {

size_t Sampler::ScratchBytes(size_t vocab) { return vocab * sizeof(Candidate); }

Status Sampler::Init(const SamplerOptions& options, size_t vocab, void* scratch,
                     size_t scratch_bytes) {
  KES_CHECK_OR_RETURN(vocab > 0, "sampler: vocabulary is empty");
  KES_CHECK_OR_RETURN(std::isfinite(options.temperature) && options.temperature >= 0.0f,
                      "temperature must be >= 0, found " + std::to_string(options.temperature));
  KES_CHECK_OR_RETURN(options.top_k >= 0,
                      "top-k must be >= 0, found " + std::to_string(options.top_k));
  KES_CHECK_OR_RETURN(options.top_p > 0.0f && options.top_p <= 1.0f,
                      "top-p must be in (0, 1], found " + std::to_string(options.top_p));
  KES_CHECK_OR_RETURN(scratch != nullptr && scratch_bytes >= ScratchBytes(vocab),
                      "sampler scratch too small: need " + std::to_string(ScratchBytes(vocab)) +
                          " bytes, found " + std::to_string(scratch_bytes));
  options_ = options;
  vocab_ = vocab;
  candidates_ = static_cast<Candidate*>(scratch);
  // splitmix64 state; the seed fully determines the sequence.
  state_ = options.seed ^ 0x9E3779B97F4A7C15ull;
  return OkStatus();
}

double Sampler::NextUniform() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::Sample(const float* logits) {
  if (options_.temperature == 0.0f) return static_cast<int32_t>(ops::Argmax(logits, vocab_));

  for (size_t i = 0; i < vocab_; ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  const auto higher = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t n = vocab_;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    n = static_cast<size_t>(options_.top_k);
    std::nth_element(candidates_, candidates_ + n, candidates_ + vocab_, higher);
  }
  std::sort(candidates_, candidates_ + n, higher);

  // Softmax at the temperature, reusing logit as the unnormalized probability.
  const double max_logit = candidates_[0].logit;
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double p = std::exp((candidates_[i].logit - max_logit) / options_.temperature);
    candidates_[i].logit = static_cast<float>(p);
    total += p;
  }
  // Nucleus: the smallest prefix whose probability reaches top_p.
  if (options_.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < n; ++i) {
      cumulative += candidates_[i].logit;
      if (cumulative >= options_.top_p * total) {
        n = i + 1;
        total = cumulative;
        break;
      }
    }
  }
  const double target = NextUniform() * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cumulative += candidates_[i].logit;
    if (target < cumulative) return candidates_[i].id;
  }
  return candidates_[n - 1].id;
}

}  // namespace kestrel
