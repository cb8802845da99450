// The merge step both BPE encoders share (tokenizer_bpe.cc, byte-level; tokenizer_spm.cc,
// SentencePiece): their symbols form a doubly linked list over the text, and merging an adjacent
// pair joins the right symbol into the left one, which then pairs anew with its neighbours.
#pragma once

#include <cstdint>
#include <vector>

namespace kestrel {

// Joins symbols[right] into symbols[left], its previous symbol: the left one spans both, the
// right one keeps length 0 (merged away) and leaves the list; then offers try_pair(left, right)
// the two pairs the joined symbol now forms. Symbol has int32_t prev and next (-1: none) and a
// length.
template <class Symbol, class TryPair>
void JoinSymbols(std::vector<Symbol>& symbols, int32_t left, int32_t right,
                 const TryPair& try_pair) {
  Symbol& l = symbols[left];
  Symbol& r = symbols[right];
  l.length += r.length;
  r.length = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[r.next].prev = left;
  try_pair(l.prev, left);
  try_pair(left, l.next);
}

}  // namespace kestrel
