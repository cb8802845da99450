// SentencePiece-style BPE over one fragment of raw text (tokenizer.h, "Encoding").
#include <algorithm>
#include <limits>
#include <queue>

#include "runtime/symbol_merge.h"
#include "runtime/tokenizer.h"

namespace kestrel {
namespace {

// Length of the UTF-8 sequence a lead byte starts, as llama.cpp splits text into symbols: a
// stray continuation byte counts as one character, so any byte string splits somehow.
size_t Utf8SequenceLength(unsigned char lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

}  // namespace

Status Tokenizer::EncodeSpm(std::string_view fragment, bool space_prefix,
                            std::vector<int32_t>* out) const {
  std::string text;  // the fragment with spaces as U+2581
  text.reserve(fragment.size() + 8);
  if (space_prefix) text.append(kSpaceMark);
  for (char c : fragment) {
    if (c == ' ') {
      text.append(kSpaceMark);
    } else {
      text += c;
    }
  }
  KES_CHECK_OR_RETURN(text.size() < std::numeric_limits<uint32_t>::max() / 2,
                      "tokenizer: text of " + std::to_string(fragment.size()) +
                          " bytes is too long to encode in one call");

  // Doubly linked list of symbols over `text`; a merged-away symbol keeps length 0.
  struct Symbol {
    int32_t prev, next;
    uint32_t start, length;
  };
  std::vector<Symbol> symbols;
  for (size_t offs = 0; offs < text.size();) {
    const size_t len = std::min(Utf8SequenceLength(text[offs]), text.size() - offs);
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, offs + len == text.size() ? -1 : index + 1,
                       static_cast<uint32_t>(offs), static_cast<uint32_t>(len)});
    offs += len;
  }
  if (symbols.empty()) return OkStatus();

  struct Bigram {
    float score;
    int32_t left, right;
    uint32_t length;  // of the merged piece; a mismatch later means the pair went stale
  };
  // Highest score first; equal scores: leftmost first.
  const auto lower_priority = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower_priority)> queue(lower_priority);
  const auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged(text.data() + symbols[left].start,
                                  symbols[left].length + symbols[right].length);
    const int32_t id = Find(merged);
    if (id < 0 || !IsMergeTarget(id)) return;
    queue.push({scores_[id], left, right, static_cast<uint32_t>(merged.size())});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != top.length) {
      continue;
    }
    JoinSymbols(symbols, top.left, top.right, try_pair);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    KES_RETURN_IF_ERROR(AppendPieceOrFallback(
        std::string_view(text.data() + symbols[i].start, symbols[i].length), out));
  }
  return OkStatus();
}

}  // namespace kestrel
