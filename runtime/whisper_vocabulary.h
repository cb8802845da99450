// The special tokens of a Whisper vocabulary and the token sets Whisper's decoding suppresses,
// found by their pieces in the model's tokenizer. OpenAI's layout, which every Whisper shares:
// <|endoftext|>, <|startoftranscript|>, one <|xx|> per language, <|translate|>, <|transcribe|>,
// <|startoflm|>, <|startofprev|>, <|nospeech|> (or <|nocaptions|>), <|notimestamps|>, then one
// timestamp token per 20 ms from <|0.00|> to the end of the vocabulary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/status.h"
#include "runtime/tokenizer.h"

namespace kestrel {

struct WhisperVocabulary {
  int32_t eot = -1, sot = -1, translate = -1, transcribe = -1, sot_lm = -1, sot_prev = -1,
          no_speech = -1, no_timestamps = -1;
  // Timestamps: timestamp_begin is <|0.00|>, the token after <|notimestamps|>; the last logit is
  // the last timestamp (as CTranslate2 counts them).
  int32_t timestamp_begin = -1, timestamp_end = -1;
  // OpenAI's rule: the multilingual vocabularies have 51865 tokens or more; the English-only
  // ones start a transcript with <|startoftranscript|> alone.
  bool multilingual = false;
  std::vector<int32_t> languages;  // <|en|>, <|zh|>, ... in vocabulary order
  // Suppressed at every step: faster-whisper's get_suppressed_tokens([-1]), that is OpenAI's
  // non-speech symbols (speaker tags, music notes, brackets) as the tokenizer encodes them, and
  // the task and start tokens.
  std::vector<int32_t> suppress;
  // Suppressed at the first generated step (suppress_blank): a lone space and <|endoftext|>.
  std::vector<int32_t> suppress_at_start;

  // vocab_size: the model's logits. Fails naming the first special token it cannot find.
  static Status Find(const Tokenizer& tokenizer, size_t vocab_size, WhisperVocabulary* out);

  // The id of language `code` ("en", "de"), or -1.
  int32_t Language(const Tokenizer& tokenizer, std::string_view code) const;
  // "en" for <|en|>; empty for an id that is not a language token.
  static std::string_view LanguageCode(const Tokenizer& tokenizer, int32_t id);
};

}  // namespace kestrel
