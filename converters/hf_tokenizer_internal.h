// Shared by the two readers behind ReadHfTokenizer (converters/hf_tokenizer.h): tokenizer.json
// (hf_tokenizer_json.cc) and vocab.txt with its config files (hf_tokenizer.cc).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel::hf {

// A WordPiece vocabulary being filled in: the table and an index of its pieces.
struct WordPieceVocab {
  fb::TokenizerT* table;
  std::unordered_map<std::string, int32_t> ids;

  // The id of `piece`, or -1.
  int32_t Find(const std::string& piece) const;
};

// Starts *vocab->table as kind WordPiece over `pieces` (id = index; normal tokens, zero
// scores). A repeated piece is an error naming `where` and both ids (Hugging Face would keep
// the later id, the runtime the earlier: refuse rather than disagree).
Status StartWordPiece(std::vector<std::string> pieces, const std::string& where,
                      WordPieceVocab* vocab);

// Marks token `id` as a special token split out of raw text: the unknown token as type 2,
// others as control (3).
void MarkSpecial(int32_t id, WordPieceVocab* vocab);

// Reads a tokenizer.json of model type WordPiece.
Status ReadTokenizerJson(const std::string& path, fb::TokenizerT* out);

}  // namespace kestrel::hf
