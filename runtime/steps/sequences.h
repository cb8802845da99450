// The sequence table of an encoder step (plan input role Sequences): rows (start, length), one
// per sequence, in order, tiling the step's tokens. The runtime writes it (runtime/encoder.cc),
// so ops trust it; rows after the one that reaches the step's last token are stale.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel {

struct SequenceSpan {
  size_t start;
  size_t length;
};

inline SequenceSpan SequenceAt(const int32_t* table, size_t i) {
  return {static_cast<size_t>(table[2 * i]), static_cast<size_t>(table[2 * i + 1])};
}

// How many rows of the table cover the step's n_tokens tokens.
inline size_t CountSequences(const int32_t* table, size_t table_rows, size_t n_tokens) {
  size_t covered = 0, i = 0;
  while (i < table_rows && covered < n_tokens) covered += SequenceAt(table, i++).length;
  return i;
}

}  // namespace kestrel
