// One greedy step of Whisper's decoding with the logits rules faster-whisper has CTranslate2
// apply, in CTranslate2's order: the suppressed tokens, suppress_blank at the first step, then
// (when the transcript has timestamps) OpenAI's timestamp rules. The token is the most likely one
// after the rules, its log-probability taken over the rule-masked logits (as CTranslate2 scores).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/whisper_vocabulary.h"

namespace kestrel {

struct WhisperStepInput {
  const float* logits = nullptr;        // [vocab] the decoder's, unchanged
  const int32_t* generated = nullptr;   // the tokens generated so far in this window
  size_t n_generated = 0;
  bool timestamps = false;
  // The first timestamp may be at most this token (<|1.00|> by default: timestamp_begin + 50).
  int32_t max_initial_timestamp = -1;
};

struct WhisperStepResult {
  int32_t token = -1;
  float log_prob = 0;
};

// scratch: [vocab] floats, overwritten with the masked logits.
WhisperStepResult NextWhisperToken(const WhisperVocabulary& vocabulary, size_t vocab,
                                   const WhisperStepInput& in, float* scratch);

}  // namespace kestrel
