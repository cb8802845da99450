#include "runtime/pretokenizer.h"

#include <string>

#include <utf8proc.h>

namespace kestrel {
namespace {

struct NamedPre {
  const char* name;
  PreTokenizer pre;
};
constexpr NamedPre kNames[] = {
    {"gpt2", PreTokenizer::kGpt2},        {"smollm", PreTokenizer::kSmolLm},
    {"llama-bpe", PreTokenizer::kLlama3}, {"llama3", PreTokenizer::kLlama3},
    {"qwen2", PreTokenizer::kQwen2},      {"gpt-4o", PreTokenizer::kGpt4o},
};

// One code point of the text: where it starts and its categories. Past the end, everything is
// false and cp is kEnd, so the matchers can look ahead without bounds checks.
constexpr int32_t kEnd = -1;
constexpr int32_t kInvalidByte = -2;  // a byte that does not start valid UTF-8

struct CodePoint {
  int32_t cp = kEnd;
  size_t offset = 0;
  bool letter = false, number = false, space = false;
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kReplacement = 0xFFFD;

// One code point at text[i] the way llama.cpp's unicode_cpt_from_utf8 reads it: the lead byte's
// high bits give the length, the continuation bytes must be 10xxxxxx, nothing else is checked.
// Returns the length, or 0 when no sequence starts at i.
size_t ReadCodePoint(std::string_view text, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  size_t len;
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    len = 2, *cp = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3, *cp = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4, *cp = lead & 0x07u;
  } else {
    return 0;  // a continuation byte, or F8..FF
  }
  if (text.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (byte(k) & 0x3Fu);
  }
  return len;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<CodePoint> Decode(std::string_view text) {
  std::vector<CodePoint> cps;
  cps.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    CodePoint c;
    c.offset = i;
    uint32_t cp = 0;
    const size_t n = ReadCodePoint(text, i, &cp);
    if (n == 0 || cp > kMaxCodePoint) {
      c.cp = kInvalidByte;
      i += 1;
    } else {
      c.cp = static_cast<int32_t>(cp);
      i += n;
      const utf8proc_category_t cat = utf8proc_category(c.cp);
      c.letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
      c.number = cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
      // \s as in Unicode's White_Space: separators, and the C0/C1 controls tab..return and NEL.
      c.space = (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cat == UTF8PROC_CATEGORY_ZS ||
                cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
    }
    cps.push_back(c);
  }
  CodePoint end;
  end.offset = text.size();
  cps.push_back(end);  // the sentinel
  return cps;
}

bool IsCrOrLf(int32_t cp) { return cp == '\r' || cp == '\n'; }

int32_t Lower(int32_t cp) { return cp >= 0 ? utf8proc_tolower(cp) : cp; }

// 's 't 're 've 'm 'll 'd at p: the contraction's length in code points, or 0.
size_t Contraction(const std::vector<CodePoint>& c, size_t p, bool any_case) {
  if (c[p].cp != '\'') return 0;
  const auto at = [&](size_t k) { return any_case ? Lower(c[p + k].cp) : c[p + k].cp; };
  const int32_t a = at(1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (a == kEnd) return 0;
  const int32_t b = at(2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// [^\s\p{L}\p{N}]: anything else in the text, unassigned code points and invalid bytes included
// (llama.cpp reads an invalid byte as U+FFFD, a symbol; we keep the byte itself).
bool OtherChar(const CodePoint& c) { return c.cp != kEnd && !c.space && !c.letter && !c.number; }

// Cuts code points [begin, end) of c the gpt2 way; calls cut(k) with the end of each word.
template <typename Cut>
void SplitGpt2(const std::vector<CodePoint>& c, size_t begin, size_t end, Cut cut) {
  const auto at = [&](size_t k) -> const CodePoint& { return k < end ? c[k] : c.back(); };
  for (size_t p = begin; p < end;) {
    if (const size_t n = Contraction(c, p, false); n > 0 && p + n <= end) {
      cut(p += n);
      continue;
    }
    const bool space_first = c[p].cp == ' ';
    const CodePoint& lead = space_first ? at(p + 1) : c[p];
    if (lead.letter || lead.number || OtherChar(lead)) {
      // ( ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+): a run of lead's class, after one space.
      const auto same = [&](const CodePoint& x) {
        return lead.letter ? x.letter : lead.number ? x.number : OtherChar(x);
      };
      p += space_first ? 1 : 0;
      while (p < end && same(c[p])) ++p;
      cut(p);
      continue;
    }
    size_t spaces = 0;
    while (p + spaces < end && c[p + spaces].space) ++spaces;
    if (spaces > 1 && p + spaces < end) {
      cut(p += spaces - 1);  // \s+(?!\S): the last space goes with the next word
    } else if (spaces > 0) {
      cut(p += spaces);
    } else {
      cut(++p);  // unreachable: every code point is a letter, number, space or other
    }
  }
}

// The last alternatives llama-bpe, qwen2 and gpt-4o share, at p where no letter or number
// word starts: ' ?[^\s\p{L}\p{N}]+[\r\n]*' (gpt-4o: [\r\n/]*), \s*[\r\n]+, \s+(?!\S), \s+.
// Returns the end of the word.
size_t PunctuationOrSpaceEnd(const std::vector<CodePoint>& c, size_t p, size_t end,
                             bool slash_after) {
  const CodePoint& lead = c[p].cp == ' ' && p + 1 < end ? c[p + 1] : c[p];
  if (OtherChar(lead)) {
    p += c[p].cp == ' ' ? 1 : 0;
    while (p < end && OtherChar(c[p])) ++p;
    while (p < end && (IsCrOrLf(c[p].cp) || (slash_after && c[p].cp == '/'))) ++p;
    return p;
  }
  size_t spaces = 0, after_last_newline = 0;
  while (p + spaces < end && c[p + spaces].space) {
    if (IsCrOrLf(c[p + spaces].cp)) after_last_newline = spaces + 1;
    ++spaces;
  }
  if (after_last_newline > 0) return p + after_last_newline;  // \s*[\r\n]+
  if (spaces > 1 && p + spaces < end) return p + spaces - 1;  // \s+(?!\S)
  if (spaces > 0) return p + spaces;                          // \s+
  return p + 1;
}

// The llama-bpe (max_digits 3) and qwen2 (max_digits 1) expressions.
template <typename Cut>
void SplitLlama3(const std::vector<CodePoint>& c, size_t begin, size_t end, size_t max_digits,
                 Cut cut) {
  const auto at = [&](size_t k) -> const CodePoint& { return k < end ? c[k] : c.back(); };
  for (size_t p = begin; p < end;) {
    if (const size_t n = Contraction(c, p, true); n > 0 && p + n <= end) {
      cut(p += n);
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!IsCrOrLf(c[p].cp) && !c[p].number && (c[p].letter || at(p + 1).letter)) {
      ++p;
      while (p < end && c[p].letter) ++p;
      cut(p);
      continue;
    }
    // \p{N}{1,max_digits}
    if (c[p].number) {
      size_t run = 0;
      while (p < end && c[p].number) {
        ++p;
        if (++run == max_digits) {
          cut(p);
          run = 0;
        }
      }
      if (run > 0) cut(p);
      continue;
    }
    cut(p = PunctuationOrSpaceEnd(c, p, end, /*slash_after=*/false));
  }
}

// GPT-4o's expression as llama.cpp 0.3.36 runs it: "upper" is a letter but a-z, "lower" a
// letter but A-Z (so a letter outside ASCII is both), marks are not letters:
//   [^\r\n\p{L}\p{N}]?U*L+('s|...)? | [^\r\n\p{L}\p{N}]?U+L*('s|...)? | \p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// with the regex's leftmost-alternative, greedy-with-backtracking choices worked out.
template <typename Cut>
void SplitGpt4o(const std::vector<CodePoint>& c, size_t begin, size_t end, Cut cut) {
  const auto at = [&](size_t k) -> const CodePoint& { return k < end ? c[k] : c.back(); };
  const auto upper = [&](size_t k) {
    return k < end && c[k].letter && !(c[k].cp >= 'a' && c[k].cp <= 'z');
  };
  const auto lower = [&](size_t k) {
    return k < end && c[k].letter && !(c[k].cp >= 'A' && c[k].cp <= 'Z');
  };
  // The end of U*L+ from q, or 0 when it does not match: U* takes as many as it can and gives
  // them back one at a time until an L follows.
  const auto upper_then_lower = [&](size_t q) -> size_t {
    size_t u = q;
    while (upper(u)) ++u;
    for (size_t l = u + 1; l-- > q;) {
      if (!lower(l)) continue;
      size_t e = l;
      while (lower(e)) ++e;
      return e;
    }
    return 0;
  };
  const auto with_contraction = [&](size_t e) {
    const size_t n = Contraction(c, e, true);
    return n > 0 && e + n <= end ? e + n : e;
  };
  for (size_t p = begin; p < end;) {
    // The two word alternatives, with their optional lead character.
    const bool lead =
        !IsCrOrLf(c[p].cp) && !c[p].letter && !c[p].number && c[p].cp != kEnd && at(p + 1).letter;
    const size_t q = lead ? p + 1 : p;
    if (c[q].letter && q < end) {
      size_t e = upper_then_lower(q);
      if (e == 0) {  // U+L*: the letters at q are upper ones only
        e = q;
        while (upper(e)) ++e;
        while (lower(e)) ++e;
      }
      cut(p = with_contraction(e));
      continue;
    }
    // \p{N}{1,3}
    if (c[p].number) {
      size_t run = 0;
      while (p < end && c[p].number && run < 3) ++p, ++run;
      cut(p);
      continue;
    }
    cut(p = PunctuationOrSpaceEnd(c, p, end, /*slash_after=*/true));
  }
}

}  // namespace

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = ReadCodePoint(text, i, &cp);
    if (n == 0) {
      AppendUtf8(kReplacement, &out);
      i += 1;
      continue;
    }
    AppendUtf8(cp > kMaxCodePoint ? kReplacement : cp, &out);
    i += n;
  }
  return out;
}

Status ParsePreTokenizer(std::string_view name, PreTokenizer* out) {
  for (const NamedPre& n : kNames) {
    if (name == n.name) {
      *out = n.pre;
      return OkStatus();
    }
  }
  return Status::Error("unsupported byte-level BPE pre-tokenizer '" + std::string(name) +
                       "' (supported: gpt2, smollm, llama-bpe, qwen2, gpt-4o)");
}

const char* PreTokenizerName(PreTokenizer pre) {
  for (const NamedPre& n : kNames) {
    if (n.pre == pre) return n.name;
  }
  return "unknown";
}

void PreTokenize(PreTokenizer pre, std::string_view text, std::vector<std::string_view>* words) {
  if (text.empty()) return;
  const std::vector<CodePoint> c = Decode(text);
  const size_t n = c.size() - 1;  // without the sentinel
  size_t word_start = 0;
  const auto cut = [&](size_t end) {
    if (end > word_start) {
      words->push_back(text.substr(c[word_start].offset, c[end].offset - c[word_start].offset));
    }
    word_start = end;
  };
  switch (pre) {
    case PreTokenizer::kGpt2: SplitGpt2(c, 0, n, cut); break;
    case PreTokenizer::kSmolLm:
      // \p{N} first: every number character is a piece; gpt2 runs inside the pieces between.
      for (size_t p = 0; p < n;) {
        if (c[p].number) {
          cut(++p);
          continue;
        }
        size_t q = p;
        while (q < n && !c[q].number) ++q;
        SplitGpt2(c, p, q, cut);
        p = q;
      }
      break;
    case PreTokenizer::kLlama3: SplitLlama3(c, 0, n, 3, cut); break;
    case PreTokenizer::kQwen2: SplitLlama3(c, 0, n, 1, cut); break;
    case PreTokenizer::kGpt4o: SplitGpt4o(c, 0, n, cut); break;
  }
}

}  // namespace kestrel
