#include "runtime/spm_normalizer.h"

#include <utility>

namespace kestrel {
namespace {

// A darts-clone unit: a node's label (the byte leading to it; bit 31 set on value units, so a
// value never matches a label), whether it has a value (a key ends there), the offset whose XOR
// with the node's index gives the base of its children, and a value unit's value.
bool HasLeaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t Value(uint32_t u) { return u & 0x7FFFFFFFu; }
uint32_t Label(uint32_t u) { return u & (0x80000000u | 0xFFu); }
uint32_t Offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

uint32_t LittleEndian32(const char* bytes) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes);
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string Num(uint64_t v) { return std::to_string(v); }

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";             // U+2581

}  // namespace

size_t ValidUtf8Length(std::string_view s) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = s[k];
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

Status PrecompiledCharsmap::Init(std::string_view blob) {
  PrecompiledCharsmap fresh;
  if (!blob.empty()) {
    KES_CHECK_OR_RETURN(blob.size() >= 4,
                        "precompiled charsmap: expected at least 4 bytes (the "
                        "trie's size), found " +
                            Num(blob.size()));
    const uint32_t trie_bytes = LittleEndian32(blob.data());
    // Whole 256-unit blocks, as darts-clone writes them: every child index of a node whose
    // base is in the array is then in the array too (base ^ byte stays in base's block).
    KES_CHECK_OR_RETURN(trie_bytes > 0 && trie_bytes % 1024 == 0 && trie_bytes <= blob.size() - 4,
                        "precompiled charsmap: expected a trie of whole 1024-byte blocks within "
                        "the blob's " +
                            Num(blob.size() - 4) + " bytes after its size, found a size of " +
                            Num(trie_bytes));
    fresh.units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < fresh.units_.size(); ++i) {
      fresh.units_[i] = LittleEndian32(blob.data() + 4 + 4 * i);
    }
    fresh.strings_.assign(blob.substr(4 + trie_bytes));
    KES_CHECK_OR_RETURN(
        !fresh.strings_.empty() && fresh.strings_.back() == '\0',
        "precompiled charsmap: expected the replacements after the trie to end with NUL, found " +
            (fresh.strings_.empty()
                 ? std::string("none")
                 : "a last byte of " + Num(static_cast<unsigned char>(fresh.strings_.back()))));
    KES_RETURN_IF_ERROR(fresh.CheckReachable());
  }
  *this = std::move(fresh);
  return OkStatus();
}

Status PrecompiledCharsmap::CheckReachable() const {
  // Every node's children lie at base ^ byte; each base reachable from the root is visited once
  // (darts-clone shares bases between nodes with equal subtrees), so a cyclic array ends too.
  const size_t n = units_.size();
  std::vector<bool> visited(n, false);
  std::vector<uint32_t> bases;
  const auto visit = [&](uint32_t base, uint64_t from) -> Status {
    KES_CHECK_OR_RETURN((base | 0xFFu) < n, "precompiled charsmap: unit " + Num(from) +
                                                " expected children within the " + Num(n) +
                                                " units, found them at " + Num(base) + " and on");
    if (!visited[base]) {
      visited[base] = true;
      bases.push_back(base);
    }
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(visit(Offset(units_[0]), 0));
  while (!bases.empty()) {
    const uint32_t base = bases.back();
    bases.pop_back();
    for (uint32_t c = 1; c < 256; ++c) {  // NUL ends a lookup, so label 0 is never followed
      const uint32_t index = base ^ c;
      const uint32_t u = units_[index];
      if (Label(u) != c) continue;
      const uint32_t child = index ^ Offset(u);
      KES_RETURN_IF_ERROR(visit(child, index));
      KES_CHECK_OR_RETURN(!HasLeaf(u) || Value(units_[child]) < strings_.size(),
                          "precompiled charsmap: unit " + Num(child) +
                              " expected a replacement offset below " + Num(strings_.size()) +
                              ", found " + Num(Value(units_[child])));
    }
  }
  return OkStatus();
}

size_t PrecompiledCharsmap::LongestRule(std::string_view input, uint32_t* value) const {
  if (units_.empty()) return 0;
  size_t longest = 0;
  uint32_t pos = Offset(units_[0]);
  for (size_t i = 0; i < input.size(); ++i) {
    const uint32_t c = static_cast<unsigned char>(input[i]);
    if (c == 0) break;  // keys are C strings
    pos ^= c;
    const uint32_t u = units_[pos];
    if (Label(u) != c) break;
    pos ^= Offset(u);
    if (HasLeaf(u)) {
      longest = i + 1;
      *value = Value(units_[pos]);
    }
  }
  return longest;
}

PrecompiledCharsmap::Match PrecompiledCharsmap::NormalizePrefix(std::string_view input) const {
  uint32_t value = 0;
  const size_t rule = LongestRule(input, &value);
  if (rule > 0) return {std::string_view(strings_.data() + value), rule};
  const size_t length = ValidUtf8Length(input);
  if (length == 0) return {kReplacementCharacter, 1};
  return {input.substr(0, length), length};
}

void NormalizeSpm(const PrecompiledCharsmap& charsmap, const SpmNormalizerOptions& options,
                  std::string_view input, std::string* out) {
  out->clear();
  if (options.remove_extra_whitespaces) {
    while (!input.empty()) {
      const PrecompiledCharsmap::Match m = charsmap.NormalizePrefix(input);
      if (m.replacement != " ") break;
      input.remove_prefix(m.consumed);
    }
  }
  if (input.empty()) return;
  const std::string_view space = options.escape_whitespaces ? kSpaceMark : " ";
  if (options.add_dummy_prefix) out->append(space);
  bool previous_space = options.remove_extra_whitespaces;
  while (!input.empty()) {
    const PrecompiledCharsmap::Match m = charsmap.NormalizePrefix(input);
    std::string_view piece = m.replacement;
    while (previous_space && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    if (!piece.empty()) {
      for (char c : piece) {
        if (c == ' ') {
          out->append(space);
        } else {
          *out += c;
        }
      }
      previous_space = piece.back() == ' ';
    }
    input.remove_prefix(m.consumed);
    if (!options.remove_extra_whitespaces) previous_space = false;
  }
  if (options.remove_extra_whitespaces) {
    while (out->size() >= space.size() &&
           std::string_view(*out).substr(out->size() - space.size()) == space) {
      out->resize(out->size() - space.size());
    }
  }
}

}  // namespace kestrel
