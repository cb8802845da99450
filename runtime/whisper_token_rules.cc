#include "runtime/whisper_token_rules.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kestrel {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

void Mask(float* logits, int32_t begin, int32_t end) {
  if (begin < end) std::fill(logits + begin, logits + end, kMasked);
}

float LogSumExp(const float* x, size_t n) {
  const float top = *std::max_element(x, x + n);
  if (top == kMasked) return kMasked;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - top));
  return top + static_cast<float>(std::log(sum));
}

// OpenAI's timestamp rules (CTranslate2's ApplyTimestampRules): the first token is a timestamp
// no later than max_initial_timestamp; timestamps come in pairs (start, end) except right before
// <|endoftext|>; they never decrease; and a timestamp is forced whenever the timestamps together
// are more likely than the likeliest text token.
void ApplyTimestampRules(const WhisperVocabulary& v, const WhisperStepInput& in, float* l) {
  const int32_t tb = v.timestamp_begin, te = v.timestamp_end;
  l[v.no_timestamps] = kMasked;
  bool compare = false;
  const size_t n = in.n_generated;
  if (n == 0) {
    Mask(l, 0, tb);
    if (in.max_initial_timestamp >= tb) Mask(l, in.max_initial_timestamp + 1, te + 1);
  } else {
    const int32_t last = in.generated[n - 1];
    if (last >= tb) {
      const int32_t penultimate = n >= 2 ? in.generated[n - 2] : last;
      if (penultimate >= tb) {
        Mask(l, tb, te + 1);  // a pair just closed: text (or the end) follows
      } else {
        Mask(l, 0, v.eot);  // an opening timestamp: its closing one, or the end
        compare = true;
      }
    } else {
      compare = true;
    }
    for (size_t t = n; t-- > 0;) {
      if (in.generated[t] >= tb) {
        Mask(l, tb, in.generated[t]);
        break;
      }
    }
  }
  if (compare) {
    const float text_best = *std::max_element(l, l + tb);
    if (LogSumExp(l + tb, static_cast<size_t>(te - tb + 1)) > text_best) Mask(l, 0, tb);
  }
}

}  // namespace

WhisperStepResult NextWhisperToken(const WhisperVocabulary& vocabulary, size_t vocab,
                                   const WhisperStepInput& in, float* scratch) {
  std::memcpy(scratch, in.logits, vocab * sizeof(float));
  for (int32_t id : vocabulary.suppress) scratch[id] = kMasked;
  if (in.n_generated == 0) {
    for (int32_t id : vocabulary.suppress_at_start) scratch[id] = kMasked;
  }
  if (in.timestamps) ApplyTimestampRules(vocabulary, in, scratch);
  WhisperStepResult r;
  r.token = static_cast<int32_t>(std::max_element(scratch, scratch + vocab) - scratch);
  if (in.score) r.log_prob = scratch[r.token] - LogSumExp(scratch, vocab);
  return r;
}

}  // namespace kestrel
