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
  const float* logits = nullptr;       // [vocab] the decoder's, unchanged
  const int32_t* generated = nullptr;  // the tokens generated so far in this window
  size_t n_generated = 0;
  bool timestamps = false;
  // The first timestamp may be at most this token (<|1.00|> by default: timestamp_begin + 50).
  int32_t max_initial_timestamp = -1;
  // Whether to compute the log-probability (a log-sum-exp over the vocabulary, about a tenth of
  // a Whisper-tiny step): the transcriber needs it only for windows that may be silence.
  bool score = true;
};

struct WhisperStepResult {
  int32_t token = -1;
  float log_prob = 0;  // 0 when not scored
};

// scratch: [vocab] floats, overwritten with the masked logits.
WhisperStepResult NextWhisperToken(const WhisperVocabulary& vocabulary, size_t vocab,
                                   const WhisperStepInput& in, float* scratch);

}  // namespace kestrel
