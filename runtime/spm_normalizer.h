// SentencePiece's normalizer (normalizer.cc, Normalizer::Normalize), which the Unigram tokenizer
// (runtime/tokenizer_unigram.cc) runs before its Viterbi search, as SentencePiece and llama.cpp's
// UGM tokenizer do:
//  1. At each position the longest rule of the precompiled charsmap that matches the text there
//     gives the replacement (possibly empty); where none matches, one UTF-8 character stays as
//     it is, and a byte that does not start a valid UTF-8 character becomes U+FFFD (1 byte read).
//  2. remove_extra_whitespaces: replacements that are exactly " " at the start are dropped, a
//     replacement's leading spaces are dropped while the output so far ends with a space (runs
//     of spaces become one), and trailing spaces are dropped at the end.
//  3. add_dummy_prefix: a space goes in front of a non-empty result ("world" and "hello world"
//     both give "_world").
//  4. escape_whitespaces: every ' ' of the output is U+2581.
//
// The precompiled charsmap (NormalizerSpec.precompiled_charsmap, Hugging Face's "Precompiled"
// normalizer) is: a little-endian uint32 n, n bytes of a darts-clone double-array trie (uint32
// units, little-endian) whose keys are the texts to replace and whose values are offsets into
// the rest of the blob, the replacements, each ending with NUL. Init checks every unit the trie
// can reach (a hostile .kes must not make a lookup read outside it), so lookups do not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kestrel {

struct SpmNormalizerOptions {
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

class PrecompiledCharsmap {
 public:
  // Parses and checks `blob`, copying it; an empty blob means no rules. On error (which names
  // what was expected and found) the map is left as it was. Loading makes two allocations.
  Status Init(std::string_view blob);

  // What the longest rule matching a prefix of `input` (not empty) replaces it with, and the
  // bytes of input it consumes; without a rule, input's first UTF-8 character (or U+FFFD for
  // one byte that starts none). The view points into the map, into `input` or at a constant.
  struct Match {
    std::string_view replacement;
    size_t consumed;
  };
  Match NormalizePrefix(std::string_view input) const;

  bool empty() const { return units_.empty(); }

 private:
  // The longest rule matching a prefix of input: its length (0: none) and replacement offset.
  size_t LongestRule(std::string_view input, uint32_t* value) const;
  Status CheckReachable() const;

  std::vector<uint32_t> units_;  // the double array; empty when there are no rules
  std::string strings_;          // the replacements, each ending with NUL; ends with NUL
};

// The length of the valid UTF-8 character that starts `s` (not empty), or 0 when it starts none
// (overlong, surrogate, above U+10FFFF, truncated, a stray continuation byte), as
// SentencePiece's DecodeUTF8 (string_util.cc) decides.
size_t ValidUtf8Length(std::string_view s);

// Writes the normalized `input` to *out (replacing what it held, reusing its storage).
void NormalizeSpm(const PrecompiledCharsmap& charsmap, const SpmNormalizerOptions& options,
                  std::string_view input, std::string* out);

}  // namespace kestrel
