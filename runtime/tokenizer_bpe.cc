// Byte-level BPE over one fragment of raw text, as llama.cpp runs tokenizer.ggml.model "gpt2":
//  1. the fragment is read as llama.cpp reads it (SanitizeUtf8: a byte that is not UTF-8 becomes
//     U+FFFD) and the pre-tokenizer (runtime/pretokenizer.h) cuts it into words;
//  2. each word's bytes become characters of GPT-2's byte alphabet (printable bytes stand for
//     themselves, the others for U+0100 onwards: a space is "Ġ", a newline "Ċ");
//  3. starting from one symbol per byte, the adjacent pair with the lowest merge rank is merged
//     (ties: leftmost) until no adjacent pair has a merge; each symbol is then a token. With
//     the Llama 3 pre-tokenizer a word that is a token as a whole is taken as it is (llama.cpp's
//     ignore_merges).
//  4. a final symbol that is no token (a byte whose character the vocabulary lacks) is looked
//     up byte by byte of its UTF-8 in the alphabet, as llama.cpp does, and each byte that is no
//     token is dropped: never the unknown token, which is a control token in GPT-2-style
//     vocabularies (SmolLM2's id 0 is <|endoftext|>), so typed text never becomes one.
// Decoding maps the alphabet back to bytes.
#include <algorithm>

#include "runtime/symbol_merge.h"
#include "runtime/tokenizer.h"

namespace kestrel {
namespace {

// GPT-2's bytes_to_unicode: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF are their own code
// point; the other 68 bytes, in order, are U+0100 onwards.
bool Printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

struct ByteAlphabet {
  uint32_t to_char[256];
  int16_t to_byte[0x144];  // -1: not a character of the alphabet
  ByteAlphabet() {
    for (int16_t& b : to_byte) b = -1;
    uint32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      to_char[b] = Printable(b) ? b : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else {  // the alphabet stays below U+0800
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void Tokenizer::AppendByteLevelText(std::string_view piece, std::string* out) {
  const ByteAlphabet& alphabet = Alphabet();
  for (size_t i = 0; i < piece.size();) {
    const unsigned char c = piece[i];
    if (c < 0x80) {
      const int16_t b = alphabet.to_byte[c];
      *out += b >= 0 ? static_cast<char>(b) : static_cast<char>(c);
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0 && i + 1 < piece.size()) {
      const uint32_t cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(piece[i + 1]) & 0x3Fu);
      if (cp < 0x144 && alphabet.to_byte[cp] >= 0) {
        *out += static_cast<char>(alphabet.to_byte[cp]);
        i += 2;
        continue;
      }
    }
    *out += static_cast<char>(c);  // outside the alphabet: the piece's own bytes
    ++i;
  }
}

namespace {

// Fibonacci hashing of a merge key: its high bits, which mix every bit of both ids.
size_t MergeHash(uint64_t key, unsigned shift) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
}

}  // namespace

Status Tokenizer::BuildMerges(size_t n_merges,
                              const std::function<std::string_view(size_t)>& merge) {
  KES_CHECK_OR_RETURN(n_merges == 0 || merge, "tokenizer: merges missing");
  KES_CHECK_OR_RETURN(n_merges < (size_t{1} << 31), "tokenizer: too many merges");
  merges_.clear();
  if (n_merges == 0) return OkStatus();
  unsigned bits = 1;
  while ((size_t{1} << bits) < 2 * n_merges) ++bits;  // load factor <= 1/2
  merges_.assign(size_t{1} << bits, MergeSlot{kNoMerge, Merge{-1, -1}});
  merge_shift_ = 64 - bits;
  const size_t mask = merges_.size() - 1;
  std::string joined;
  for (size_t rank = 0; rank < n_merges; ++rank) {
    const std::string_view m = merge(rank);
    // Only an error builds the message naming the merge.
    const auto where = [&] {
      return "tokenizer: merge " + std::to_string(rank) + " \"" + std::string(m.substr(0, 64)) +
             "\"";
    };
    const size_t space = m.find(' ');
    KES_CHECK_OR_RETURN(space != std::string_view::npos && space > 0 && space + 1 < m.size(),
                        where() + ": expected two pieces separated by a space");
    const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    joined.assign(left).append(right);
    const int32_t l = Find(left), r = Find(right), result = Find(joined);
    KES_CHECK_OR_RETURN(l >= 0 && r >= 0 && result >= 0,
                        where() +
                            ": expected both pieces and their concatenation in the "
                            "vocabulary, found " +
                            (l < 0   ? "no '" + std::string(left) + "'"
                             : r < 0 ? "no '" + std::string(right) + "'"
                                     : "no '" + joined + "'"));
    const uint64_t key = static_cast<uint64_t>(l) << 32 | static_cast<uint32_t>(r);
    for (size_t slot = MergeHash(key, merge_shift_);; slot = (slot + 1) & mask) {
      if (merges_[slot].key == kNoMerge) {
        merges_[slot] = {key, Merge{static_cast<int32_t>(rank), result}};
        break;
      }
      if (merges_[slot].key == key) break;  // a repeated merge keeps its first rank
    }
  }
  return OkStatus();
}

const Tokenizer::Merge* Tokenizer::FindMerge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0 || merges_.empty()) return nullptr;
  const uint64_t key = static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
  const size_t mask = merges_.size() - 1;
  for (size_t slot = MergeHash(key, merge_shift_);; slot = (slot + 1) & mask) {
    const MergeSlot& entry = merges_[slot];
    if (entry.key == key) return &entry.merge;
    if (entry.key == kNoMerge) return nullptr;
  }
}

// Doubly linked list of symbols over the word's text, each a vocabulary piece (id) or, for a
// byte the vocabulary lacks, id -1; a merged-away symbol keeps length 0. Candidates are merges
// of adjacent symbols in a binary heap (std::push_heap / pop_heap, as std::priority_queue runs
// them), lowest rank first.
struct Tokenizer::BpeScratch {
  struct Symbol {
    int32_t prev, next, id;
    uint32_t start, length;
  };
  struct Candidate {
    int32_t rank, left, right, result;
    int32_t left_id, right_id;  // a mismatch later means the pair went stale
  };
  std::string text;  // the word in the byte alphabet
  std::vector<Symbol> symbols;
  std::vector<Candidate> queue;
};

Status Tokenizer::EncodeBpe(std::string_view fragment, std::vector<int32_t>* out) const {
  const std::string text = SanitizeUtf8(fragment);
  std::vector<std::string_view> words;
  PreTokenize(config_.pre, text, &words);
  BpeScratch scratch;
  for (std::string_view word : words) KES_RETURN_IF_ERROR(EncodeBpeWord(word, &scratch, out));
  return OkStatus();
}

Status Tokenizer::EncodeBpeWord(std::string_view word, BpeScratch* scratch,
                                std::vector<int32_t>* out) const {
  using Symbol = BpeScratch::Symbol;
  using Candidate = BpeScratch::Candidate;
  std::string& text = scratch->text;
  text.clear();
  text.reserve(word.size() * 2);
  for (unsigned char b : word) AppendUtf8(Alphabet().to_char[b], &text);
  if (config_.pre == PreTokenizer::kLlama3) {
    const int32_t whole = Find(text);
    if (whole >= 0) {
      out->push_back(whole);
      return OkStatus();
    }
  }

  std::vector<Symbol>& symbols = scratch->symbols;
  symbols.clear();
  symbols.reserve(word.size());
  for (size_t offs = 0; offs < text.size();) {
    const size_t len = static_cast<unsigned char>(text[offs]) < 0x80 ? 1 : 2;
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, offs + len == text.size() ? -1 : index + 1,
                       Find(std::string_view(text.data() + offs, len)), static_cast<uint32_t>(offs),
                       static_cast<uint32_t>(len)});
    offs += len;
  }
  if (symbols.empty()) return OkStatus();

  // Lowest rank first; equal ranks (the same merge in two places): leftmost first.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::vector<Candidate>& queue = scratch->queue;
  queue.clear();
  // n - 1 pairs to start with, then at most two per merge: sized once.
  queue.reserve(3 * symbols.size());
  const auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Merge* m = FindMerge(symbols[left].id, symbols[right].id);
    if (m != nullptr) {
      queue.push_back({m->rank, left, right, m->result, symbols[left].id, symbols[right].id});
      std::push_heap(queue.begin(), queue.end(), later);
    }
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.length == 0 || right.length == 0 || left.next != top.right || left.id != top.left_id ||
        right.id != top.right_id) {
      continue;
    }
    left.id = top.result;  // before JoinSymbols: its new pairs look their merges up by id
    JoinSymbols(symbols, top.left, top.right, try_pair);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    if (symbols[i].id >= 0) {
      out->push_back(symbols[i].id);
      continue;
    }
    // Only a single character of the alphabet is left without an id (merges make tokens), so
    // its bytes alone are ASCII already tried or halves of a character, never tokens: this
    // drops it, the way llama.cpp gets there.
    for (uint32_t k = 0; k < symbols[i].length; ++k) {
      const int32_t id = Find(std::string_view(text.data() + symbols[i].start + k, 1));
      if (id >= 0) out->push_back(id);
    }
  }
  return OkStatus();
}

}  // namespace kestrel
