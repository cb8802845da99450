#include "runtime/bert_normalizer.h"

#include <algorithm>

#include <utf8proc.h>

namespace kestrel {
namespace {

// Inclusive code-point ranges, sorted, for the tables below.
struct CodeRange {
  char32_t first, last;
};
struct CodePair {  // sorted by `from`
  char32_t from, to;
};
#include "runtime/bert_unicode_tables.inc"

template <size_t N>
bool InTable(const CodeRange (&table)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), c,
                                    [](char32_t v, const CodeRange& r) { return v < r.first; });
  return it != std::begin(table) && c <= it[-1].last;
}

constexpr char32_t kReplacement = 0xFFFD;  // what invalid UTF-8 reads as

std::u32string DecodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + i, text.size() - i, &cp);
    if (n <= 0) {
      out += kReplacement;
      ++i;
    } else {
      out += static_cast<char32_t>(cp);
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

// Rust's char::is_whitespace (Unicode White_Space), which Hugging Face uses for both steps.
bool IsWhitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The CJK Unified Ideographs blocks BERT's original tokenizer lists (not Hangul, kana or CJK
// punctuation), with Hugging Face's bounds.
bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsPunctuation(char32_t c) {
  // BERT counts all printable non-alphanumeric ASCII as punctuation, symbols included.
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  return c > 0x7F && InTable(kPunctuation, c);
}

std::u32string Clean(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (InTable(kCleanTextDrops, c)) continue;
    out += IsWhitespace(c) ? U' ' : c;
  }
  return out;
}

std::u32string SpaceChinese(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (IsChineseChar(c)) {
      out += U' ';
      out += c;
      out += U' ';
    } else {
      out += c;
    }
  }
  return out;
}

int CombiningClass(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// NFD (utf8proc's decompositions, less those Hugging Face's tables lack), marks put into
// canonical order, then without the nonspacing marks.
std::u32string StripAccents(const std::u32string& text) {
  std::u32string nfd;
  nfd.reserve(text.size() + 8);
  for (char32_t c : text) {
    utf8proc_int32_t parts[8];  // no canonical decomposition is longer than 4
    const utf8proc_ssize_t n =
        InTable(kNoDecomposition, c)
            ? -1
            : utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts, 8,
                                      static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), nullptr);
    if (n <= 0 || n > 8) {
      nfd += c;
      continue;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i) nfd += static_cast<char32_t>(parts[i]);
  }
  // Canonical ordering: each run of combining marks stably sorted by combining class.
  for (size_t i = 0; i < nfd.size();) {
    size_t end = i;
    while (end < nfd.size() && CombiningClass(nfd[end]) != 0) ++end;
    std::stable_sort(nfd.begin() + i, nfd.begin() + end,
                     [](char32_t a, char32_t b) { return CombiningClass(a) < CombiningClass(b); });
    i = end + 1;
  }
  std::u32string out;
  out.reserve(nfd.size());
  for (char32_t c : nfd) {
    if (!InTable(kNonspacingMarks, c)) out += c;
  }
  return out;
}

std::u32string Lowercase(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c == 0x130) {  // the one unconditional multi-character lowercase mapping
      out += U'i';
      out += char32_t{0x307};
      continue;
    }
    const auto* it =
        std::lower_bound(std::begin(kLowercaseOverrides), std::end(kLowercaseOverrides), c,
                         [](const CodePair& p, char32_t v) { return p.from < v; });
    out += it != std::end(kLowercaseOverrides) && it->from == c
               ? it->to
               : static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  }
  return out;
}

}  // namespace

std::u32string BertNormalize(std::string_view text, const BertNormalizerOptions& options) {
  std::u32string out = DecodeUtf8(text);
  if (options.clean_text) out = Clean(out);
  if (options.handle_chinese_chars) out = SpaceChinese(out);
  if (options.strip_accents) out = StripAccents(out);
  if (options.lowercase) out = Lowercase(out);
  return out;
}

void BertPreTokenize(const std::u32string& text, std::vector<std::pair<size_t, size_t>>* words) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool space = IsWhitespace(text[i]);
    if (!space && !IsPunctuation(text[i])) continue;
    if (i > start) words->emplace_back(start, i);
    if (!space) words->emplace_back(i, i + 1);
    start = i + 1;
  }
  if (text.size() > start) words->emplace_back(start, text.size());
}

}  // namespace kestrel
