// Pre-tokenizers of byte-level BPE vocabularies (GGUF tokenizer.ggml.pre): the regular
// expressions that cut text into words before BPE merges run inside each word, as llama.cpp
// runs them. Each is written as a matcher over code points (the way llama.cpp's own
// unicode_regex_split_custom_* functions do it), with Unicode categories from utf8proc.
//
//   gpt2:      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   smollm:    \p{N} (each digit alone), then gpt2 inside each piece
//   llama-bpe: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+          (Llama 3)
//   qwen2:     the same with \p{N} (one digit) instead of \p{N}{1,3}
//
// The text is read as llama.cpp reads it (see SanitizeUtf8): surrogates and overlong forms are
// code points; a byte that is not UTF-8 becomes a word of its own, kept byte for byte (byte-level
// BPE calls SanitizeUtf8 first, so it finds none).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kestrel {

enum class PreTokenizer : uint8_t {
  kGpt2,
  kSmolLm,
  kLlama3,
  kQwen2,
  kGpt4o,  // GPT-4o's (Phi-4-mini): words split at case changes, digits in threes
};

// By GGUF name: "gpt2", "smollm", "llama-bpe" (also "llama3"), "qwen2", "gpt-4o"; an error
// naming the supported ones otherwise.
Status ParsePreTokenizer(std::string_view name, PreTokenizer* out);
const char* PreTokenizerName(PreTokenizer pre);

// `text` as llama.cpp reads it before pre-tokenizing (unicode_cpts_from_utf8, then each code
// point back to UTF-8): a lead byte decides the sequence length and only the continuation bytes
// are checked, so overlong forms become their code point's shortest form (C0 80 is NUL) and
// surrogates stay (ED A0 80); a byte that starts no complete sequence becomes U+FFFD, and the
// next byte is read afresh. A sequence above U+10FFFF (F4 90 80 80 .. F7 BF BF BF), on which
// llama.cpp throws, becomes one U+FFFD.
std::string SanitizeUtf8(std::string_view text);

// Appends the words of `text` to *words (views into text, in order, covering it exactly).
void PreTokenize(PreTokenizer pre, std::string_view text, std::vector<std::string_view>* words);

}  // namespace kestrel
