// Unigram over one fragment of raw text (no special tokens in it), as SentencePiece's unigram
// model encodes (unigram_model.cc, EncodeOptimized) and llama.cpp's UGM tokenizer:
//  1. the fragment is normalized (runtime/spm_normalizer.h: the precompiled charsmap, spaces as
//     U+2581, the dummy prefix); a fragment that normalizes to nothing has no ids;
//  2. a Viterbi search over the normalized bytes: from each character boundary, every piece the
//     text there starts with (normal and user-defined pieces; never control, unknown, unused or
//     byte ones) extends the best segmentation so far by its score (user-defined pieces score 0,
//     as in llama.cpp); where no piece is exactly the next character, the unknown token covers
//     that character with the lowest normal score - 10. Sums are doubles, as in llama.cpp and
//     Hugging Face; ties keep the first candidate found (shorter pieces, earlier starts);
//  3. the best segmentation of the whole text, with runs of unknown tokens fused into one, as
//     SentencePiece, Hugging Face (fuse_unk) and llama.cpp do.
// The pieces starting at a position are found with the piece index, hashing the text there one
// byte longer at a time, until the prefix filter (Tokenizer::piece_prefixes_) says no piece
// starts with it: no allocation and a few probes per byte.
#include <algorithm>
#include <limits>

#include "runtime/tokenizer.h"

namespace kestrel {
namespace {

// Length of the UTF-8 sequence a lead byte starts, as llama.cpp and SentencePiece step through
// the normalized text (a stray continuation byte counts as one character).
size_t Utf8SequenceLength(unsigned char lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

constexpr double kUnknownPenalty = 10.0;  // SentencePiece's kUnkPenalty

// The bit of the prefix filter for `hash`, mixing its high half in (FNV-1a's low bits alone
// vary little for texts that differ in their last byte only).
uint64_t PrefixBit(uint64_t hash, uint64_t mask) { return (hash ^ (hash >> 29)) & mask; }

}  // namespace

bool Tokenizer::IsUnigramPiece(int32_t id) const {
  const TokenType t = types_[id];
  return t == TokenType::kNormal || t == TokenType::kUndefined || t == TokenType::kUserDefined;
}

bool Tokenizer::MayStartPiece(uint64_t prefix_hash) const {
  const uint64_t bit = PrefixBit(prefix_hash, piece_prefix_mask_);
  return (piece_prefixes_[bit >> 6] >> (bit & 63)) & 1;
}

Status Tokenizer::BuildUnigram(std::string_view precompiled_charsmap) {
  KES_CHECK_OR_RETURN(config_.unk_id >= 0,
                      "tokenizer: Unigram expected an unknown token (unk_id), found none");
  KES_RETURN_IF_ERROR(charsmap_.Init(precompiled_charsmap).WithContext("tokenizer"));
  // Eight bits per prefix: about one lookup in eight of a text no piece starts with gets past
  // the filter to the index.
  uint64_t prefixes = 0;
  double lowest = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < types_.size(); ++id) {
    if (!IsUnigramPiece(static_cast<int32_t>(id))) continue;
    prefixes += Piece(static_cast<int32_t>(id)).size();
    if (types_[id] != TokenType::kUserDefined) lowest = std::min<double>(lowest, scores_[id]);
  }
  unknown_score_ =
      (lowest == std::numeric_limits<double>::infinity() ? 0.0 : lowest) - kUnknownPenalty;
  uint64_t bits = 64;
  while (bits < 8 * prefixes) bits *= 2;
  piece_prefixes_.assign(bits / 64, 0);
  piece_prefix_mask_ = bits - 1;
  for (size_t id = 0; id < types_.size(); ++id) {
    if (!IsUnigramPiece(static_cast<int32_t>(id))) continue;
    uint64_t hash = kHashSeed;
    for (unsigned char c : Piece(static_cast<int32_t>(id))) {
      hash = HashStep(hash, c);
      const uint64_t bit = PrefixBit(hash, piece_prefix_mask_);
      piece_prefixes_[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
  }
  return OkStatus();
}

Status Tokenizer::EncodeUnigram(std::string_view fragment, UnigramScratch* scratch,
                                std::vector<int32_t>* out) const {
  std::string& text = scratch->normalized;
  NormalizeSpm(charsmap_, config_.spm_normalizer, fragment, &text);
  if (text.empty()) return OkStatus();
  KES_CHECK_OR_RETURN(text.size() < std::numeric_limits<uint32_t>::max(),
                      "tokenizer: text of " + std::to_string(fragment.size()) +
                          " bytes is too long to encode in one call");
  using Best = UnigramScratch::Best;
  std::vector<Best>& best = scratch->best;
  best.assign(text.size() + 1, Best{-std::numeric_limits<double>::infinity(), -1, 0});
  best[0].score = 0;
  const auto offer = [&best](size_t end, double score, int32_t id, size_t start) {
    if (score > best[end].score) best[end] = {score, id, static_cast<uint32_t>(start)};
  };
  for (size_t start = 0; start < text.size();) {
    const size_t char_length =
        std::min(Utf8SequenceLength(static_cast<unsigned char>(text[start])), text.size() - start);
    const double here = best[start].score;
    bool covers_character = false;
    uint64_t hash = kHashSeed;
    for (size_t end = start; end < text.size();) {
      hash = HashStep(hash, static_cast<unsigned char>(text[end++]));
      if (!MayStartPiece(hash)) break;
      const int32_t id = FindHashed(std::string_view(text).substr(start, end - start), hash);
      if (id < 0 || !IsUnigramPiece(id)) continue;
      covers_character |= end - start == char_length;
      offer(end, here + (types_[id] == TokenType::kUserDefined ? 0.0 : scores_[id]), id, start);
    }
    if (!covers_character) {
      offer(start + char_length, here + unknown_score_, config_.unk_id, start);
    }
    start += char_length;
  }

  // Back from the end: the pieces in reverse, a run of unknown tokens as one.
  const size_t first = out->size();
  for (size_t end = text.size(); end > 0; end = best[end].start) {
    const int32_t id = best[end].id;
    if (id != config_.unk_id || out->size() == first || out->back() != id) out->push_back(id);
  }
  std::reverse(out->begin() + static_cast<std::ptrdiff_t>(first), out->end());
  return OkStatus();
}

}  // namespace kestrel
