// WordPiece over one fragment of raw text (no special tokens in it), as Hugging Face
// `tokenizers` runs BERT's tokenizer.json (model WordPiece, BertNormalizer, BertPreTokenizer):
//  1. the fragment is normalized and cut into words (runtime/bert_normalizer.h);
//  2. a word longer than max_chars_per_word code points is the unknown token;
//  3. otherwise, from the start of the word, the longest prefix that is a piece of the
//     vocabulary is taken, then the longest piece continuing_prefix + rest-prefix from where it
//     ended, and so on; when no piece matches at some point the whole word is the unknown
//     token (not just the rest: that is what BERT does).
// Decoding: a piece that starts with continuing_prefix is the rest of the previous word, its
// text the piece without the prefix; any other piece starts a word, its text ' ' + piece.
// ".", ",", "?" and "!" join the previous word, as Hugging Face's decoder cleanup does; its
// other cleanups (" n't", " 's", ...) depend on the neighbours and are not done.
#include "runtime/tokenizer.h"

#include <utf8proc.h>

namespace kestrel {
namespace {

void AppendUtf8(const std::u32string& text, size_t begin, size_t end, std::string* out) {
  for (size_t i = begin; i < end; ++i) {
    utf8proc_uint8_t buf[4];
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(text[i]), buf);
    out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
}

// Start of the UTF-8 character that ends just before byte `end` of `s` (end > 0).
size_t PreviousCharStart(std::string_view s, size_t end) {
  do {
    --end;
  } while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80);
  return end;
}

// utf8proc measures the decomposition without writing it (no buffer), failing on invalid UTF-8.
bool IsUtf8(std::string_view s) {
  return utf8proc_decompose(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                            static_cast<utf8proc_ssize_t>(s.size()), nullptr, 0,
                            static_cast<utf8proc_option_t>(0)) >= 0;
}

}  // namespace

Status Tokenizer::CheckWordPieceConfig() const {
  KES_CHECK_OR_RETURN(config_.unk_id >= 0,
                      "tokenizer: WordPiece expected an unknown token (unk_id), found none");
  KES_CHECK_OR_RETURN(!config_.continuing_prefix.empty(),
                      "tokenizer: WordPiece expected a non-empty continuing prefix (\"##\"), "
                      "found an empty one");
  KES_CHECK_OR_RETURN(IsUtf8(config_.continuing_prefix),
                      "tokenizer: WordPiece continuing prefix is not valid UTF-8");
  KES_CHECK_OR_RETURN(config_.max_chars_per_word > 0,
                      "tokenizer: WordPiece expected max_chars_per_word > 0, found 0");
  return OkStatus();
}

void Tokenizer::AppendWordPieceText(int32_t id, std::string* out) const {
  const std::string_view piece = Piece(id);
  const std::string_view prefix = config_.continuing_prefix;
  if (piece.size() >= prefix.size() && piece.substr(0, prefix.size()) == prefix) {
    out->append(piece.substr(prefix.size()));
  } else if (piece == "." || piece == "," || piece == "?" || piece == "!") {
    out->append(piece);
  } else {
    *out += ' ';
    out->append(piece);
  }
}

Status Tokenizer::EncodeWordPiece(std::string_view fragment, std::vector<int32_t>* out) const {
  const std::u32string text = BertNormalize(fragment, config_.normalizer);
  std::vector<std::pair<size_t, size_t>> words;
  BertPreTokenize(text, &words);
  std::string word;
  for (const auto& [begin, end] : words) {
    word.clear();
    AppendUtf8(text, begin, end, &word);
    EncodeWordPieceWord(word, end - begin, out);
  }
  return OkStatus();
}

void Tokenizer::EncodeWordPieceWord(std::string_view word, size_t chars,
                                    std::vector<int32_t>* out) const {
  if (chars > config_.max_chars_per_word) {
    out->push_back(config_.unk_id);
    return;
  }
  const size_t first = out->size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    int32_t id = -1;
    size_t end = word.size();
    for (; end > start; end = PreviousCharStart(word, end)) {
      candidate.assign(start > 0 ? config_.continuing_prefix : std::string());
      candidate.append(word.substr(start, end - start));
      id = Find(candidate);
      if (id >= 0) break;
    }
    if (id < 0) {
      out->resize(first);  // the whole word becomes the unknown token
      out->push_back(config_.unk_id);
      return;
    }
    out->push_back(id);
    start = end;
  }
}

}  // namespace kestrel
