// BERT's text normalizer and pre-tokenizer, as Hugging Face `tokenizers` runs them
// (BertNormalizer, BertPreTokenizer). WordPiece (runtime/tokenizer_wordpiece.cc) splits the
// words these produce.
//
// Unicode data: `tokenizers` classifies characters with tables of an old Unicode version (8.0)
// and lowercases with Rust's (16.0); utf8proc 2.8 has 15.0. Taking utf8proc's categories made
// several hundred code points differ (characters added since 8.0 are not punctuation, marks or
// format characters there), so the classes come from runtime/bert_unicode_tables.inc, read off
// `tokenizers` by scripts/gen-bert-unicode-tables.py; utf8proc does NFD and lowercasing, with
// that file's few corrections.
//
// Normalization, in this order (each step optional):
//  1. clean_text: NUL, U+FFFD and "other" characters (categories Cc, Cf, Co, but not tab,
//     newline, carriage return) are dropped; whitespace (tab, newline, return and the Unicode
//     White_Space characters) becomes ' '. Vertical tab, form feed and NEL are controls, so
//     they are dropped, not turned into spaces (as in Hugging Face).
//  2. handle_chinese_chars: a space before and after each CJK ideograph (BERT's ranges).
//  3. strip_accents: canonical decomposition (NFD), then nonspacing marks (Mn) are dropped.
//  4. lowercase: Unicode's full lowercase mapping per character (Rust's char::to_lowercase):
//     the simple mapping except U+0130 (I with dot above) -> "i" U+0307.
// Pre-tokenization: whitespace separates words and is dropped; each punctuation character (the
// ASCII ranges !-/ :-@ [-` {-~, which include symbols such as $ + < = > ^ ` | ~, and Unicode
// categories Pc Pd Ps Pe Pi Pf Po) is a word of its own.
//
// Bytes that are not valid UTF-8 are read as U+FFFD, one per byte.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kestrel {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

// The normalized text of `text`, as code points.
std::u32string BertNormalize(std::string_view text, const BertNormalizerOptions& options);

// Appends the words of normalized text as [begin, end) code-point ranges, in order.
void BertPreTokenize(const std::u32string& text, std::vector<std::pair<size_t, size_t>>* words);

}  // namespace kestrel
