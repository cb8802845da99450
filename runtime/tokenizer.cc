#include "runtime/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <utility>

namespace kestrel {
namespace {

// isspace in the C locale, which llama.cpp's rstrip uses.
bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    }
  }
  return out + "\"";
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0, n; i < s.size(); i += n) {
    n = ValidUtf8Length(s.substr(i));
    if (n == 0) return false;
  }
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xAB>" -> 0xAB; -1 when the piece is not of that form.
int ParseBytePiece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = HexDigit(piece[3]), lo = HexDigit(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Unicode White_Space (what Rust's char::is_whitespace tests, which Hugging Face's lstrip uses)
// ending just before byte `end` of `s`: its length in bytes, or 0.
size_t WhiteSpaceBefore(std::string_view s, size_t end) {
  if (end == 0) return 0;
  const unsigned char last = s[end - 1];
  if (last < 0x80) return IsAsciiSpace(static_cast<char>(last)) ? 1 : 0;
  static constexpr std::string_view kWide[] = {
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
      "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
      "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
      "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  for (std::string_view w : kWide) {
    if (end >= w.size() && s.substr(end - w.size(), w.size()) == w) return w.size();
  }
  return 0;
}

}  // namespace

uint64_t Tokenizer::HashBytes(std::string_view s) {
  uint64_t h = kHashSeed;
  for (unsigned char c : s) h = HashStep(h, c);
  return h;
}

Status Tokenizer::Init(size_t n, const std::function<std::string_view(size_t)>& piece,
                       const float* scores, const int8_t* types, const TokenizerConfig& config,
                       size_t n_merges, const std::function<std::string_view(size_t)>& merge,
                       std::string_view precompiled_charsmap) {
  KES_CHECK_OR_RETURN(n > 0, "tokenizer: expected a vocabulary of at least 1 token, found 0");
  KES_CHECK_OR_RETURN(
      n <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
      "tokenizer: vocabulary of " + std::to_string(n) + " tokens exceeds the int32 id range");
  KES_CHECK_OR_RETURN(piece && scores != nullptr && types != nullptr,
                      "tokenizer: pieces, scores and types are required");
  const std::pair<const char*, int32_t> ids[] = {{"bos", config.bos_id},
                                                 {"eos", config.eos_id},
                                                 {"unk", config.unk_id},
                                                 {"pad", config.pad_id},
                                                 {"eot", config.eot_id}};
  for (const auto& [name, id] : ids) {
    KES_CHECK_OR_RETURN(id >= -1 && id < static_cast<int64_t>(n),
                        std::string("tokenizer: ") + name + " id expected in [-1, " +
                            std::to_string(n) + "), found " + std::to_string(id));
  }
  KES_CHECK_OR_RETURN(!config.add_bos || config.bos_id >= 0,
                      "tokenizer: add_bos is set but there is no bos id");
  KES_CHECK_OR_RETURN(!config.add_eos || config.eos_id >= 0,
                      "tokenizer: add_eos is set but there is no eos id");
  for (const auto& [what, list] :
       {std::pair<const char*, const std::vector<int32_t>*>{"rstrip", &config.rstrip_ids},
        {"lstrip", &config.lstrip_ids},
        {"stop", &config.stop_ids}}) {
    for (int32_t id : *list) {
      KES_CHECK_OR_RETURN(id >= 0 && id < static_cast<int64_t>(n),
                          std::string("tokenizer: ") + what + " id expected in [0, " +
                              std::to_string(n) + "), found " + std::to_string(id));
    }
  }

  // Built aside and moved in at the end, so a failed Init leaves *this as it was.
  Tokenizer fresh;
  fresh.config_ = config;
  fresh.scores_.assign(scores, scores + n);
  fresh.types_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    KES_CHECK_OR_RETURN(types[i] >= 0 && types[i] <= 6, "tokenizer: token " + std::to_string(i) +
                                                            " type expected 0..6, found " +
                                                            std::to_string(types[i]));
    KES_CHECK_OR_RETURN(!std::isnan(scores[i]),
                        "tokenizer: token " + std::to_string(i) + " score is NaN");
    fresh.types_[i] = static_cast<TokenType>(types[i]);
  }
  KES_RETURN_IF_ERROR(fresh.BuildPieces(n, piece));
  fresh.BuildIndex();
  fresh.BuildSpecialTrie();
  fresh.rstrip_.assign(n, false);
  for (int32_t id : config.rstrip_ids) fresh.rstrip_[id] = true;
  fresh.lstrip_.assign(n, false);
  for (int32_t id : config.lstrip_ids) fresh.lstrip_[id] = true;
  fresh.stop_.assign(n, false);
  for (int32_t id : config.stop_ids) fresh.stop_[id] = true;
  if (config.algorithm == TokenizerAlgorithm::kByteLevelBpe) {
    KES_RETURN_IF_ERROR(fresh.BuildMerges(n_merges, merge));
  } else {
    KES_CHECK_OR_RETURN(n_merges == 0,
                        "tokenizer: merges given to a vocabulary that is not byte-level BPE");
  }
  if (config.algorithm == TokenizerAlgorithm::kWordPiece) {
    KES_RETURN_IF_ERROR(fresh.CheckWordPieceConfig());
  }
  if (config.algorithm == TokenizerAlgorithm::kUnigram) {
    KES_RETURN_IF_ERROR(fresh.BuildUnigram(precompiled_charsmap));
  } else {
    KES_CHECK_OR_RETURN(precompiled_charsmap.empty(),
                        "tokenizer: a precompiled charsmap given to a vocabulary that is not "
                        "Unigram");
  }
  *this = std::move(fresh);
  return OkStatus();
}

Status Tokenizer::BuildPieces(size_t n, const std::function<std::string_view(size_t)>& piece) {
  // Sized once from the pieces' total, so loading makes a few allocations whatever the
  // vocabulary: a token's text is at most its piece plus WordPiece's leading space.
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) total += piece(i).size();
  KES_CHECK_OR_RETURN(total <= std::numeric_limits<uint32_t>::max(),
                      "tokenizer: pieces exceed 4 GiB in total");
  pieces_.clear();
  texts_.clear();
  pieces_.reserve(total);
  texts_.reserve(std::min<uint64_t>(total + n, std::numeric_limits<uint32_t>::max()));
  piece_offsets_.reserve(n + 1);
  text_offsets_.reserve(n + 1);
  piece_offsets_.assign(1, 0);
  text_offsets_.assign(1, 0);
  byte_to_id_.fill(-1);
  // Only an error builds the message naming the token.
  const auto where = [](size_t i) { return "tokenizer: token " + std::to_string(i) + " "; };
  for (size_t i = 0; i < n; ++i) {
    const std::string_view p = piece(i);
    KES_CHECK_OR_RETURN(IsValidUtf8(p), where(i) + "piece is not valid UTF-8: " + Quoted(p));
    pieces_.append(p);
    piece_offsets_.push_back(static_cast<uint32_t>(pieces_.size()));

    switch (types_[i]) {
      case TokenType::kByte: {
        const int byte = ParseBytePiece(p);
        KES_CHECK_OR_RETURN(byte >= 0, where(i) +
                                           "is a byte token, expected a piece like "
                                           "\"<0xAB>\", found " +
                                           Quoted(p));
        if (byte_to_id_[byte] < 0) byte_to_id_[byte] = static_cast<int32_t>(i);
        texts_ += static_cast<char>(byte);
        break;
      }
      case TokenType::kControl:
      case TokenType::kUnknown: break;
      case TokenType::kUserDefined:
        if (config_.algorithm == TokenizerAlgorithm::kWordPiece) {
          AppendWordPieceText(static_cast<int32_t>(i), &texts_);
        } else {
          texts_.append(p);
        }
        break;
      case TokenType::kUndefined:
      case TokenType::kNormal:
      case TokenType::kUnused:
        if (config_.algorithm == TokenizerAlgorithm::kWordPiece) {
          AppendWordPieceText(static_cast<int32_t>(i), &texts_);
          break;
        }
        if (config_.algorithm == TokenizerAlgorithm::kByteLevelBpe) {
          AppendByteLevelText(p, &texts_);
          break;
        }
        for (size_t k = 0; k < p.size();) {
          if (p.substr(k, kSpaceMark.size()) == kSpaceMark) {
            texts_ += ' ';
            k += kSpaceMark.size();
          } else {
            texts_ += p[k++];
          }
        }
        break;
    }
    KES_CHECK_OR_RETURN(texts_.size() <= std::numeric_limits<uint32_t>::max(),
                        "tokenizer: token texts exceed 4 GiB in total");
    text_offsets_.push_back(static_cast<uint32_t>(texts_.size()));
  }
  return OkStatus();
}

void Tokenizer::BuildIndex() {
  const size_t n = types_.size();
  size_t slots = 1;
  while (slots < 2 * n) slots *= 2;  // load factor <= 1/2 keeps probe chains short
  index_.assign(slots, IndexSlot{-1, 0});
  for (size_t i = 0; i < n; ++i) {
    const std::string_view p = Piece(static_cast<int32_t>(i));
    if (p.empty()) continue;
    const uint64_t hash = HashBytes(p);
    for (size_t slot = hash & (slots - 1);; slot = (slot + 1) & (slots - 1)) {
      if (index_[slot].id < 0) {
        index_[slot] = {static_cast<int32_t>(i), static_cast<uint32_t>(hash >> 32)};
        break;
      }
      if (Piece(index_[slot].id) == p) break;  // repeated piece: the lower id keeps it
    }
  }
}

int32_t Tokenizer::Find(std::string_view piece) const {
  return FindHashed(piece, HashBytes(piece));
}

int32_t Tokenizer::FindHashed(std::string_view piece, uint64_t hash) const {
  if (index_.empty() || piece.empty()) return -1;
  const uint32_t check = static_cast<uint32_t>(hash >> 32);
  const size_t mask = index_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const IndexSlot& entry = index_[slot];
    if (entry.id < 0) return -1;
    if (entry.check != check) continue;  // cheap reject before comparing bytes
    const uint32_t begin = piece_offsets_[entry.id], end = piece_offsets_[entry.id + 1];
    if (end - begin == piece.size() &&
        std::string_view(pieces_.data() + begin, piece.size()) == piece) {
      return entry.id;
    }
  }
}

void Tokenizer::BuildSpecialTrie() {
  for (size_t i = 0; i < types_.size(); ++i) {
    const TokenType t = types_[i];
    const bool special =
        t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined;
    if (special && !Piece(static_cast<int32_t>(i)).empty()) {
      specials_.push_back(static_cast<int32_t>(i));
    }
  }
  // Longest first, as llama.cpp tries them; equal lengths by id so the order is deterministic.
  std::sort(specials_.begin(), specials_.end(), [this](int32_t a, int32_t b) {
    const size_t la = Piece(a).size(), lb = Piece(b).size();
    return la != lb ? la > lb : a < b;
  });

  // The trie is built from the pieces in byte order: each node's children are then made in
  // ascending byte order, so one counting pass lays every node's edges out sorted, with a few
  // allocations however many special tokens there are.
  std::vector<int32_t> by_bytes(specials_.size());
  for (size_t rank = 0; rank < by_bytes.size(); ++rank) by_bytes[rank] = static_cast<int32_t>(rank);
  std::sort(by_bytes.begin(), by_bytes.end(), [this](int32_t a, int32_t b) {
    const std::string_view pa = Piece(specials_[a]), pb = Piece(specials_[b]);
    return pa != pb ? pa < pb : a < b;  // a repeated piece: its first rank first
  });
  struct Node {
    uint32_t parent;
    uint8_t byte;
    int32_t rank;
  };
  size_t bytes = 0;
  for (int32_t id : specials_) bytes += Piece(id).size();
  std::vector<Node> nodes;
  nodes.reserve(bytes + 1);
  nodes.push_back({0, 0, -1});
  std::vector<uint32_t> path(1, 0);  // path[d]: the node of the previous piece's first d bytes
  std::string_view previous;
  for (const int32_t rank : by_bytes) {
    const std::string_view p = Piece(specials_[rank]);
    size_t common = 0;
    while (common < p.size() && common < previous.size() && p[common] == previous[common]) {
      ++common;
    }
    path.resize(common + 1);
    for (size_t d = common; d < p.size(); ++d) {
      nodes.push_back({path[d], static_cast<uint8_t>(p[d]), -1});
      path.push_back(static_cast<uint32_t>(nodes.size() - 1));
    }
    if (nodes[path[p.size()]].rank < 0) nodes[path[p.size()]].rank = rank;
    previous = p;
  }
  trie_.assign(nodes.size(), TrieNode{});
  for (size_t node = 1; node < nodes.size(); ++node) ++trie_[nodes[node].parent].n_edges;
  uint32_t first = 0;
  for (size_t node = 0; node < nodes.size(); ++node) {
    trie_[node].rank = nodes[node].rank;
    trie_[node].first_edge = first;
    first += trie_[node].n_edges;
  }
  edges_.resize(nodes.size() - 1);
  std::vector<uint32_t> filled(nodes.size(), 0);
  for (size_t node = 1; node < nodes.size(); ++node) {
    const uint32_t parent = nodes[node].parent;
    edges_[trie_[parent].first_edge + filled[parent]++] = {nodes[node].byte,
                                                           static_cast<uint32_t>(node)};
  }
}

uint32_t Tokenizer::TrieChild(uint32_t node, uint8_t byte) const {
  const auto first = edges_.begin() + trie_[node].first_edge;
  const auto last = first + trie_[node].n_edges;
  const auto it =
      std::lower_bound(first, last, byte, [](const TrieEdge& e, uint8_t b) { return e.byte < b; });
  return it != last && it->byte == byte ? it->child : 0;
}

bool Tokenizer::IsSpecialAllowed(int32_t id, bool parse_special) const {
  return types_[id] == TokenType::kUserDefined || parse_special;
}

bool Tokenizer::IsMergeTarget(int32_t id) const {
  const TokenType t = types_[id];
  return t == TokenType::kNormal || t == TokenType::kUndefined || t == TokenType::kUserDefined ||
         t == TokenType::kUnused;
}

bool Tokenizer::SplitSpecial(std::string_view text, bool parse_special,
                             std::vector<Fragment>* fragments) const {
  // llama.cpp walks the special tokens longest first and, for each, claims its occurrences left
  // to right inside text no longer token has claimed. Collecting every occurrence with the trie
  // and visiting them in (rank, position) order gives the same result in one pass over the text.
  struct Occurrence {
    int32_t rank;
    size_t pos;
  };
  std::vector<Occurrence> found;
  if (trie_.size() > 1) {
    for (size_t pos = 0; pos < text.size(); ++pos) {
      uint32_t node = 0;
      for (size_t i = pos; i < text.size(); ++i) {
        node = TrieChild(node, static_cast<uint8_t>(text[i]));
        if (node == 0) break;
        const int32_t rank = trie_[node].rank;
        if (rank >= 0 && IsSpecialAllowed(specials_[rank], parse_special)) {
          found.push_back({rank, pos});
        }
      }
    }
  }
  fragments->clear();
  if (found.empty()) return false;
  // Into (rank, position) order: a counting sort by rank keeps the positions ascending.
  std::vector<uint32_t> rank_start(specials_.size() + 1, 0);
  for (const Occurrence& o : found) ++rank_start[o.rank + 1];
  for (size_t r = 1; r < rank_start.size(); ++r) rank_start[r] += rank_start[r - 1];
  std::vector<Occurrence> ordered(found.size());
  for (const Occurrence& o : found) ordered[rank_start[o.rank]++] = o;

  std::vector<bool> claimed(text.size(), false);
  std::vector<Fragment> specials;
  for (const Occurrence& o : ordered) {
    const int32_t id = specials_[o.rank];
    const size_t len = Piece(id).size();
    // Every span claimed before is at least as long as this one, so it overlaps this one only
    // if it covers one of this one's ends.
    if (claimed[o.pos] || claimed[o.pos + len - 1]) continue;
    std::fill(claimed.begin() + o.pos, claimed.begin() + o.pos + len, true);
    specials.push_back({o.pos, len, id});
  }
  std::sort(specials.begin(), specials.end(),
            [](const Fragment& a, const Fragment& b) { return a.offset < b.offset; });

  size_t pos = 0;
  for (size_t i = 0; i < specials.size(); ++i) {
    const Fragment& s = specials[i];
    size_t text_end = s.offset;
    if (lstrip_[s.id]) {
      const std::string_view before = text.substr(pos, s.offset - pos);
      for (size_t w; (w = WhiteSpaceBefore(before, text_end - pos)) > 0;) text_end -= w;
    }
    if (text_end > pos) fragments->push_back({pos, text_end - pos, -1});
    fragments->push_back(s);
    pos = s.offset + s.length;
    if (rstrip_[s.id]) {
      const size_t next = i + 1 < specials.size() ? specials[i + 1].offset : text.size();
      while (pos < next && IsAsciiSpace(text[pos])) ++pos;
    }
  }
  if (pos < text.size()) fragments->push_back({pos, text.size() - pos, -1});
  return true;
}

Status Tokenizer::AppendPieceOrFallback(std::string_view piece, std::vector<int32_t>* out) const {
  const int32_t id = Find(piece);
  if (id >= 0) {
    out->push_back(id);
    return OkStatus();
  }
  // A character the vocabulary lacks: per byte its <0xAB> token, else the piece that is the byte
  // alone (llama.cpp's byte_to_token). Where a byte has neither, llama.cpp throws; the unknown
  // token stands for the whole character then, as in SentencePiece without byte fallback.
  const size_t first = out->size();
  for (unsigned char c : piece) {
    const int32_t id = byte_to_id_[c] >= 0 ? byte_to_id_[c]
                                           : Find(std::string_view(reinterpret_cast<char*>(&c), 1));
    if (id < 0) {
      out->resize(first);
      KES_CHECK_OR_RETURN(config_.unk_id >= 0,
                          "tokenizer: " + Quoted(piece) +
                              " is not in the vocabulary, which has neither its byte tokens nor "
                              "an unknown token");
      out->push_back(config_.unk_id);
      return OkStatus();
    }
    out->push_back(id);
  }
  return OkStatus();
}

Status Tokenizer::Encode(std::string_view text, bool add_special, bool parse_special,
                         std::vector<int32_t>* out) const {
  KES_CHECK_OR_RETURN(out != nullptr, "tokenizer: Encode needs an output vector");
  KES_CHECK_OR_RETURN(!types_.empty(), "tokenizer: Encode called before a successful Init");
  // The ids are appended after what *out holds, then moved to its front: its storage is reused
  // (a caller encoding many texts into one vector allocates once), and on error the ids are cut
  // off again, leaving *out as it was.
  std::vector<int32_t>& ids = *out;
  const size_t previous = ids.size();
  ids.reserve(previous + text.size() / 3 + 4);
  if (add_special && config_.add_bos) ids.push_back(config_.bos_id);
  std::vector<Fragment> fragments;
  const Fragment whole{0, text.size(), -1};
  const Fragment* begin = fragments.data();
  const Fragment* end = begin;
  if (SplitSpecial(text, parse_special, &fragments)) {
    begin = fragments.data();
    end = begin + fragments.size();
  } else if (!text.empty()) {
    begin = &whole;
    end = begin + 1;
  }
  bool after_special = true;  // the start of the text counts as following a special token
  UnigramScratch unigram;     // allocates at the first Unigram fragment
  for (const Fragment* fragment = begin; fragment != end; ++fragment) {
    const Fragment& f = *fragment;
    if (f.id >= 0) {
      ids.push_back(f.id);
      after_special = true;
      continue;
    }
    const std::string_view raw = text.substr(f.offset, f.length);
    Status s;
    switch (config_.algorithm) {
      case TokenizerAlgorithm::kSentencePiece:
        s = EncodeSpm(raw, config_.add_space_prefix && after_special, &ids);
        break;
      case TokenizerAlgorithm::kByteLevelBpe: s = EncodeBpe(raw, &ids); break;
      case TokenizerAlgorithm::kWordPiece: s = EncodeWordPiece(raw, &ids); break;
      case TokenizerAlgorithm::kUnigram: s = EncodeUnigram(raw, &unigram, &ids); break;
    }
    if (!s.ok()) {
      ids.resize(previous);
      return s;
    }
    after_special = false;
  }
  if (add_special && config_.add_eos) ids.push_back(config_.eos_id);
  ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(previous));
  return OkStatus();
}

std::string_view Tokenizer::Piece(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= types_.size()) return {};
  return std::string_view(pieces_).substr(piece_offsets_[id],
                                          piece_offsets_[id + 1] - piece_offsets_[id]);
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= types_.size()) return {};
  return std::string_view(texts_).substr(text_offsets_[id],
                                         text_offsets_[id + 1] - text_offsets_[id]);
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) text.append(TokenText(id));
  const bool spaced = config_.add_space_prefix ||
                      config_.algorithm == TokenizerAlgorithm::kWordPiece ||
                      (config_.algorithm == TokenizerAlgorithm::kUnigram &&
                       config_.spm_normalizer.add_dummy_prefix);
  if (spaced && !text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

TokenType Tokenizer::Type(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= types_.size()) return TokenType::kUnused;
  return types_[id];
}

float Tokenizer::Score(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= scores_.size()) return 0.0f;
  return scores_[id];
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return id >= 0 && (id == config_.eos_id || id == config_.eot_id ||
                     (static_cast<size_t>(id) < stop_.size() && stop_[id]));
}

}  // namespace kestrel
