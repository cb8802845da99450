// The tokenizer and detokenizer of GGUF vocabularies, as llama.cpp runs them, of BERT's
// WordPiece vocabularies, as Hugging Face `tokenizers` runs them, and of SentencePiece Unigram
// models (XLM-RoBERTa), as SentencePiece runs them. Four algorithms share the vocabulary, the
// special tokens and decoding (this file and tokenizer.cc):
//   - SentencePiece-style BPE (tokenizer.ggml.model "llama": Gemma 3, Llama 2, Mistral; pieces
//     with scores, no merge list), in tokenizer_spm.cc;
//   - byte-level BPE (tokenizer.ggml.model "gpt2": SmolLM2, Llama 3, Qwen2; pieces in GPT-2's
//     byte alphabet with a ranked merge list and a pre-tokenizer), in tokenizer_bpe.cc;
//   - WordPiece (BERT: BertNormalizer, BertPreTokenizer, greedy longest-match-first pieces with
//     a continuation prefix), in tokenizer_wordpiece.cc and bert_normalizer.cc;
//   - Unigram (SentencePiece model_type unigram, llama.cpp's "UGM": XLM-RoBERTa, T5; the
//     model's precompiled charsmap normalizes, then a Viterbi search picks the pieces whose
//     scores sum highest), in tokenizer_unigram.cc and spm_normalizer.cc.
//
// Encoding, per call (SentencePiece; byte-level BPE and Unigram differ in step 2, see
// tokenizer_bpe.cc and tokenizer_unigram.cc):
//  1. Special tokens typed literally in the text are split out first, llama.cpp's way: longest
//     special piece first (ties: lower id), each of its non-overlapping occurrences inside text
//     not yet claimed becomes its id. User-defined tokens are always split out (Gemma 3's runs of
//     spaces, tabs and newlines, "<b>" ...); control and unknown tokens only with parse_special.
//  2. Each remaining text fragment (with a leading space when add_space_prefix and the fragment
//     starts the text or follows a special token) gets ' ' replaced by U+2581 and is split into
//     UTF-8 characters; the adjacent pair whose concatenation is a token with the highest score
//     is merged (ties: leftmost) until no pair is a token. A final symbol that is a token becomes
//     its id; any other (a character missing from the vocabulary, or bytes that are not
//     UTF-8: SentencePiece reads raw bytes) becomes per byte its <0xAB> token, else the piece
//     that is that byte alone (llama.cpp's byte_to_token); where a byte has neither, llama.cpp
//     aborts and the character becomes the unknown token.
//
// Deliberate difference from llama.cpp, shared with SentencePiece: control, unknown and byte
// tokens are never merge results, so plain text never turns into e.g. "<eos>" through merges
// when parse_special is false. (For Gemma 3 both rules give the same ids: none of its control
// or byte pieces is the concatenation of two other pieces.)
//
// Special tokens whose entry in TokenizerConfig::lstrip_ids / rstrip_ids is set also take the
// whitespace before / after them out of the text (Hugging Face's lstrip: Unicode White_Space;
// llama.cpp's rstrip: ASCII isspace).
//
// Decoding: U+2581 becomes ' ', a byte token its byte, control and unknown tokens nothing,
// user-defined tokens their piece verbatim, normal, undefined and unused tokens their piece.
// WordPiece decodes differently (see tokenizer_wordpiece.cc): a continuation piece is its text
// without the prefix, any other piece a space and its text. Unigram decodes as SentencePiece
// does, dropping the space its dummy prefix put in front of the text.
//
// Init copies everything it needs into a few flat arrays (pieces and texts concatenated, offset
// tables, open-addressing hash tables), each allocated once at its final size, so loading makes
// a small number of heap allocations whatever the vocabulary; afterwards the Tokenizer is
// immutable, safe to share across threads, and copyable (all internal references are indices,
// never pointers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/bert_normalizer.h"
#include "runtime/pretokenizer.h"
#include "runtime/spm_normalizer.h"
#include "runtime/status.h"

namespace kestrel {

enum class TokenizerAlgorithm : uint8_t {
  kSentencePiece,  // merges by piece score
  kByteLevelBpe,   // merges by rank, after a pre-tokenizer, over GPT-2's byte alphabet
  kWordPiece,      // BERT: normalizer, pre-tokenizer, greedy longest pieces (no scores, merges)
  kUnigram,        // SentencePiece Unigram: charsmap normalizer, Viterbi over piece scores
};

struct TokenizerConfig {
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, eot_id = -1;  // -1: none
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  TokenizerAlgorithm algorithm = TokenizerAlgorithm::kSentencePiece;
  PreTokenizer pre = PreTokenizer::kGpt2;  // byte-level BPE only
  // WordPiece only: the normalizer's steps, the prefix of pieces that continue a word (not
  // empty), and the longest word in code points that is split (a longer one is unk_id, which
  // WordPiece requires).
  BertNormalizerOptions normalizer;
  std::string continuing_prefix = "##";
  uint32_t max_chars_per_word = 100;
  // Unigram only: SentencePiece's NormalizerSpec flags (the charsmap is Init's argument).
  // Unigram needs unk_id: a character no piece covers becomes it (runs of them one).
  SpmNormalizerOptions spm_normalizer;
  // Special tokens whose following whitespace (ASCII: space, \t, \n, \v, \f, \r) the text
  // loses when they are split out of it, as llama.cpp's rstrip attribute does (Phi-3's).
  std::vector<int32_t> rstrip_ids;
  // Special tokens whose preceding whitespace (Unicode White_Space) the text loses, as Hugging
  // Face's lstrip does (XLM-RoBERTa's "<mask>").
  std::vector<int32_t> lstrip_ids;
  // Tokens that end a generation besides eos_id and eot_id (Tokenizer.stop_ids of the .kes).
  std::vector<int32_t> stop_ids;
};

// Token types as GGUF stores them (tokenizer.ggml.token_type). llama.cpp's "undefined" (0) is
// accepted and treated as normal.
enum class TokenType : int8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  // piece(i) returns token i's UTF-8 piece (spaces as U+2581, byte tokens as "<0xAB>");
  // scores/types have n entries (types as in GGUF: 1 normal, 2 unknown, 3 control,
  // 4 user-defined, 5 unused, 6 byte; 0 undefined). Copies what it needs; may be called again to
  // reload (a failed Init leaves the tokenizer as it was).
  // Validates: 0 < n <= INT32_MAX, special ids in [-1, n), add_bos/add_eos have their id,
  // pieces are valid UTF-8, types are 0..6, scores are not NaN, byte tokens read "<0xAB>".
  // Byte-level BPE also takes merge(0..n_merges-1): "left right" in rank order, both sides and
  // their concatenation pieces of the vocabulary. WordPiece needs unk_id, a non-empty
  // continuing_prefix and max_chars_per_word > 0. Unigram needs unk_id and takes the model's
  // precompiled charsmap (runtime/spm_normalizer.h; empty: no normalization rules), which Init
  // checks and copies; other algorithms take none.
  Status Init(size_t n, const std::function<std::string_view(size_t)>& piece, const float* scores,
              const int8_t* types, const TokenizerConfig& config, size_t n_merges = 0,
              const std::function<std::string_view(size_t)>& merge = {},
              std::string_view precompiled_charsmap = {});

  // On success *out is replaced by the ids, in its own storage when that has room (encoding many
  // texts into one vector allocates for the ids once); on error it is left alone. add_special:
  // prepend BOS / append EOS per config. Fails only when a SentencePiece character needs byte
  // fallback and the vocabulary has neither its byte tokens nor an unknown token. Byte-level BPE
  // never uses the unknown token: a byte without a token is dropped (tokenizer_bpe.cc), as in
  // llama.cpp. (Hugging Face always splits special tokens out of WordPiece text: pass
  // parse_special = true for its ids.)
  Status Encode(std::string_view text, bool add_special, bool parse_special,
                std::vector<int32_t>* out) const;

  // The bytes token `id` stands for when printed (see Decoding above). A view into storage built
  // at Init: no allocation, for the generation loop. Out-of-range id -> empty view.
  std::string_view TokenText(int32_t id) const;

  // Concatenated TokenText; with add_space_prefix the space Encode put in front of the text is
  // dropped again (one leading space of the result), so Decode(Encode(s)) == s. WordPiece drops
  // the leading space of its first word the same way (its text is normalized, so not s), and
  // so does Unigram with add_dummy_prefix (Hugging Face's Metaspace decoder).
  std::string Decode(const std::vector<int32_t>& ids) const;

  size_t vocab_size() const { return types_.size(); }
  const TokenizerConfig& config() const { return config_; }
  bool IsEndOfGeneration(int32_t id) const;  // eos, eot or one of the stop ids
  std::string_view Piece(int32_t id) const;  // raw piece; out-of-range id -> empty view
  TokenType Type(int32_t id) const;          // out-of-range id -> kUnused
  float Score(int32_t id) const;             // out-of-range id -> 0
  // The id whose piece is exactly `piece`, or -1 (lowest id when a piece repeats).
  int32_t Find(std::string_view piece) const;

 private:
  // A piece of the text to encode: raw text [offset, offset + length), or special token `id`.
  struct Fragment {
    size_t offset;
    size_t length;
    int32_t id;  // -1: raw text
  };
  // One node of the trie over special pieces: children are edges_[first_edge, +n_edges),
  // sorted by byte.
  struct TrieNode {
    int32_t rank = -1;  // index into specials_ when a special piece ends here
    uint32_t first_edge = 0;
    uint32_t n_edges = 0;
  };
  struct TrieEdge {
    uint8_t byte;
    uint32_t child;
  };
  struct IndexSlot {
    int32_t id;      // -1: empty
    uint32_t check;  // high half of the piece's hash
  };

  static constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  // FNV-1a, the hash of the piece index (Unigram extends it byte by byte along the text).
  static constexpr uint64_t kHashSeed = 14695981039346656037ull;
  static constexpr uint64_t kHashPrime = 1099511628211ull;
  static uint64_t HashStep(uint64_t hash, unsigned char c) { return (hash ^ c) * kHashPrime; }
  static uint64_t HashBytes(std::string_view s);

  // Appends the bytes a byte-level piece stands for (GPT-2's alphabet mapped back to bytes;
  // characters outside the alphabet as they are).
  static void AppendByteLevelText(std::string_view piece, std::string* out);

  // A merge of two adjacent pieces (by id) into the piece `result`; lower rank merges first.
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // One slot of the merge table: key is left id << 32 | right id, kNoMerge when empty.
  struct MergeSlot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kNoMerge = ~uint64_t{0};  // ids are never -1

  Status BuildPieces(size_t n, const std::function<std::string_view(size_t)>& piece);
  Status BuildMerges(size_t n_merges, const std::function<std::string_view(size_t)>& merge);
  // The merge of pieces left and right, or nullptr.
  const Merge* FindMerge(int32_t left, int32_t right) const;
  void BuildIndex();
  // Find, given HashBytes(piece).
  int32_t FindHashed(std::string_view piece, uint64_t hash) const;
  void BuildSpecialTrie();
  bool IsSpecialAllowed(int32_t id, bool parse_special) const;
  bool IsMergeTarget(int32_t id) const;
  uint32_t TrieChild(uint32_t node, uint8_t byte) const;  // 0 when there is none
  // Cuts text into raw fragments and special tokens; false (fragments left empty) when the
  // text holds no special token, the common case, which then costs no allocation.
  bool SplitSpecial(std::string_view text, bool parse_special,
                    std::vector<Fragment>* fragments) const;
  // Appends the ids of raw text (no special tokens in it) with the config's algorithm.
  Status EncodeSpm(std::string_view fragment, bool space_prefix, std::vector<int32_t>* out) const;
  Status EncodeBpe(std::string_view fragment, std::vector<int32_t>* out) const;
  // The buffers of EncodeBpeWord, reused across the words of one Encode (tokenizer_bpe.cc).
  struct BpeScratch;
  Status EncodeBpeWord(std::string_view word, BpeScratch* scratch, std::vector<int32_t>* out) const;
  Status EncodeWordPiece(std::string_view fragment, std::vector<int32_t>* out) const;
  // Appends the pieces of one normalized word (UTF-8, `chars` code points), or unk_id.
  void EncodeWordPieceWord(std::string_view word, size_t chars, std::vector<int32_t>* out) const;
  // What a WordPiece token prints as (see Decoding above).
  void AppendWordPieceText(int32_t id, std::string* out) const;
  Status CheckWordPieceConfig() const;
  // Unigram (tokenizer_unigram.cc): the charsmap, the unknown token's score and the prefix
  // filter, built at Init; the buffers of EncodeUnigram, reused across the fragments of one
  // Encode; the ids of one fragment.
  Status BuildUnigram(std::string_view precompiled_charsmap);
  bool IsUnigramPiece(int32_t id) const;
  bool MayStartPiece(uint64_t prefix_hash) const;
  struct UnigramScratch {
    std::string normalized;
    struct Best {      // the best segmentation of normalized's bytes [0, end)
      double score;    // summed piece scores; -infinity: none yet
      int32_t id;      // its last piece
      uint32_t start;  // where that piece starts
    };
    std::vector<Best> best;  // [normalized.size() + 1], by end
  };
  Status EncodeUnigram(std::string_view fragment, UnigramScratch* scratch,
                       std::vector<int32_t>* out) const;
  // The id of a piece, or its byte tokens / the unknown token when it is not in the vocabulary.
  Status AppendPieceOrFallback(std::string_view piece, std::vector<int32_t>* out) const;

  TokenizerConfig config_;
  std::string pieces_;                     // every piece, concatenated
  std::vector<uint32_t> piece_offsets_;    // [n + 1]: piece i is [offsets[i], offsets[i + 1])
  std::string texts_;                      // every TokenText, concatenated
  std::vector<uint32_t> text_offsets_;     // [n + 1]
  std::vector<float> scores_;              // [n]
  std::vector<TokenType> types_;           // [n]
  std::vector<IndexSlot> index_;           // open-addressing hash table of ids by piece
  std::array<int32_t, 256> byte_to_id_{};  // byte token per byte value, -1 if absent
  std::vector<int32_t> specials_;          // control/unknown/user-defined ids, longest piece first
  std::vector<bool> rstrip_;               // per id: TokenizerConfig::rstrip_ids
  std::vector<bool> lstrip_;               // per id: TokenizerConfig::lstrip_ids
  std::vector<bool> stop_;                 // per id: TokenizerConfig::stop_ids
  std::vector<TrieNode> trie_;             // trie_[0] is the root
  std::vector<TrieEdge> edges_;
  // Open-addressing hash table of merges by (left, right), sized once at Init; empty for
  // algorithms without merges.
  std::vector<MergeSlot> merges_;
  unsigned merge_shift_ = 64;  // 64 - log2(merges_.size()): MergeHash keeps the high bits
  // Unigram only. A bit per hash slot, set for the hash of every prefix of every piece the
  // Viterbi search may use: a clear bit means no piece starts with that text, which ends the
  // search at one text position early (a set bit may be a collision; the index then decides).
  PrecompiledCharsmap charsmap_;
  std::vector<uint64_t> piece_prefixes_;
  uint64_t piece_prefix_mask_ = 0;  // bits in piece_prefixes_ - 1
  double unknown_score_ = 0;        // the lowest normal piece score - 10, as in SentencePiece
};

}  // namespace kestrel
