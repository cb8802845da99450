#include "runtime/whisper_vocabulary.h"

#include <algorithm>
#include <string>

namespace kestrel {
namespace {

Status FindPiece(const Tokenizer& tokenizer, const char* piece, int32_t* id) {
  *id = tokenizer.Find(piece);
  KES_CHECK_OR_RETURN(*id >= 0, std::string("expected the Whisper special token '") + piece +
                                    "' in the vocabulary; it has none");
  return OkStatus();
}

// OpenAI's non_speech_tokens (whisper/tokenizer.py, as faster-whisper copies it): each symbol
// alone and after a space, when the tokenizer makes it one token; the music symbols' first token
// always (they share their first UTF-8 bytes); and a word-initial hyphen and quote.
Status NonSpeechTokens(const Tokenizer& tokenizer, std::vector<int32_t>* out) {
  static constexpr std::string_view kAscii = "\"#()*+/:;<=>@[\\]^_`{|}~";  // each alone
  static constexpr std::string_view kSymbols[] = {
      "「", "」",  "『", "』", "<<",  ">>",  "<<<", ">>>", "--", "---", "-(", "-[",
      "('", "(\"", "((", "))", "(((", ")))", "[[",  "]]",  "{{", "}}",  "♪♪", "♪♪♪"};
  static constexpr std::string_view kMusic[] = {"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  // One id list and one text buffer for every Encode, so building the set costs a few
  // allocations per symbol rather than several.
  std::vector<int32_t> ids;
  std::string text;
  for (const char* lead : {" -", " '"}) {
    KES_RETURN_IF_ERROR(tokenizer.Encode(lead, false, false, &ids));
    KES_CHECK_OR_RETURN(!ids.empty(), std::string("'") + lead + "' encodes to no token");
    out->push_back(ids[0]);
  }
  auto add = [&](std::string_view symbol, bool first_token_always) -> Status {
    for (const bool spaced : {false, true}) {
      text.assign(spaced ? " " : "").append(symbol);
      KES_RETURN_IF_ERROR(tokenizer.Encode(text, false, false, &ids));
      if (ids.size() == 1 || (first_token_always && !ids.empty())) out->push_back(ids[0]);
    }
    return OkStatus();
  };
  for (size_t i = 0; i < kAscii.size(); ++i) KES_RETURN_IF_ERROR(add(kAscii.substr(i, 1), false));
  for (std::string_view s : kSymbols) KES_RETURN_IF_ERROR(add(s, false));
  for (std::string_view s : kMusic) KES_RETURN_IF_ERROR(add(s, true));
  return OkStatus();
}

bool IsLanguagePiece(std::string_view piece) {
  if (piece.size() < 6 || piece.substr(0, 2) != "<|" || piece.substr(piece.size() - 2) != "|>") {
    return false;
  }
  const std::string_view code = piece.substr(2, piece.size() - 4);
  return code.size() <= 3 &&
         std::all_of(code.begin(), code.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

}  // namespace

Status WhisperVocabulary::Find(const Tokenizer& tokenizer, size_t vocab_size,
                               WhisperVocabulary* out) {
  WhisperVocabulary v;
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|endoftext|>", &v.eot));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|startoftranscript|>", &v.sot));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|translate|>", &v.translate));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|transcribe|>", &v.transcribe));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|startoflm|>", &v.sot_lm));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|startofprev|>", &v.sot_prev));
  KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|notimestamps|>", &v.no_timestamps));
  v.no_speech = tokenizer.Find("<|nospeech|>");
  if (v.no_speech < 0) KES_RETURN_IF_ERROR(FindPiece(tokenizer, "<|nocaptions|>", &v.no_speech));
  v.timestamp_begin = v.no_timestamps + 1;
  v.timestamp_end = static_cast<int32_t>(vocab_size) - 1;
  KES_CHECK_OR_RETURN(v.timestamp_begin <= v.timestamp_end && v.sot < v.translate &&
                          std::max({v.eot, v.sot, v.translate, v.transcribe, v.sot_lm, v.sot_prev,
                                    v.no_speech}) < v.timestamp_begin,
                      "expected Whisper's special tokens before the timestamps, with "
                      "<|notimestamps|> before the last logit (" +
                          std::to_string(vocab_size) + " logits, <|notimestamps|> is " +
                          std::to_string(v.no_timestamps) + ")");
  v.multilingual = vocab_size >= 51865;
  for (int32_t id = v.sot + 1; id < v.translate; ++id) {
    if (IsLanguagePiece(tokenizer.Piece(id))) v.languages.push_back(id);
  }
  KES_CHECK_OR_RETURN(!v.multilingual || !v.languages.empty(),
                      "a multilingual Whisper vocabulary without language tokens");

  KES_RETURN_IF_ERROR(NonSpeechTokens(tokenizer, &v.suppress));
  for (int32_t id : {v.transcribe, v.translate, v.sot, v.sot_prev, v.sot_lm, v.no_speech}) {
    v.suppress.push_back(id);
  }
  std::sort(v.suppress.begin(), v.suppress.end());
  v.suppress.erase(std::unique(v.suppress.begin(), v.suppress.end()), v.suppress.end());
  KES_RETURN_IF_ERROR(tokenizer.Encode(" ", false, false, &v.suppress_at_start));
  v.suppress_at_start.push_back(v.eot);
  for (int32_t id : v.suppress) {
    KES_CHECK_OR_RETURN(id >= 0 && static_cast<size_t>(id) < vocab_size,
                        "a suppressed token id " + std::to_string(id) + " past the " +
                            std::to_string(vocab_size) + " logits");
  }
  *out = std::move(v);
  return OkStatus();
}

int32_t WhisperVocabulary::Language(const Tokenizer& tokenizer, std::string_view code) const {
  for (int32_t id : languages) {
    if (LanguageCode(tokenizer, id) == code) return id;
  }
  return -1;
}

std::string_view WhisperVocabulary::LanguageCode(const Tokenizer& tokenizer, int32_t id) {
  const std::string_view piece = tokenizer.Piece(id);
  return IsLanguagePiece(piece) ? piece.substr(2, piece.size() - 4) : std::string_view();
}

}  // namespace kestrel
