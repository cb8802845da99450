// Shared by the readers behind ReadHfTokenizer (converters/hf_tokenizer.h): tokenizer.json
// (hf_tokenizer_json.cc; its Unigram models in hf_tokenizer_unigram.cc) and vocab.txt with its
// config files (hf_tokenizer.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "converters/hf_json_fields.h"
#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel::hf {

// A vocabulary being filled in: the table and an index of its pieces.
struct VocabIndex {
  fb::TokenizerT* table;
  std::unordered_map<std::string, int32_t> ids;

  // The id of `piece`, or -1.
  int32_t Find(const std::string& piece) const;
};

// Fills *vocab->table's pieces with `pieces` (id = index; normal tokens, zero scores) and
// indexes them. A repeated piece is an error naming `where` and both ids (Hugging Face would
// keep the later id, the runtime the earlier: refuse rather than disagree).
Status StartVocab(std::vector<std::string> pieces, const std::string& where, VocabIndex* vocab);

// StartVocab, then kind WordPiece with an empty WordPiece table.
Status StartWordPiece(std::vector<std::string> pieces, const std::string& where, VocabIndex* vocab);

// Marks token `id` as a special token split out of raw text: the unknown token as type 2,
// others as control (3).
void MarkSpecial(int32_t id, VocabIndex* vocab);

// Reads a tokenizer.json of model type WordPiece or Unigram.
Status ReadTokenizerJson(const std::string& path, fb::TokenizerT* out);

// The parts of tokenizer.json both models share (hf_tokenizer_json.cc):
// node.type must be `expected`.
Status ExpectTypeName(const JsonNode& node, const std::string& expected);
// model.vocab into *node: a JSON value of type `type` with 1 to 2^31-1 pieces (ids are int32),
// their count in *n.
Status ModelVocab(const JsonNode& model, nlohmann::json::value_t type, JsonNode* node, size_t* n);
// post_processor: TemplateProcessing, BertProcessing, RobertaProcessing or null; sets bos/eos
// and add_bos/add_eos.
Status ReadPostProcessor(const JsonNode& root, VocabIndex* vocab);
// added_tokens: special ones control (the unknown token: unknown), others user-defined; lstrip
// ones into lstrip_ids; rstrip and single_word refused.
Status ReadAddedTokens(const JsonNode& root, VocabIndex* vocab);
// padding's pad token, when there is padding.
Status ReadPadding(const JsonNode& root, VocabIndex* vocab);

// A tokenizer.json whose model.type is "Unigram" (hf_tokenizer_unigram.cc).
Status ReadUnigramJson(const JsonNode& root, VocabIndex* vocab);
// A tokenizer.json whose model.type is "BPE", byte-level (hf_tokenizer_bpe.cc: RoBERTa).
Status ReadByteLevelBpeJson(const JsonNode& root, VocabIndex* vocab);

}  // namespace kestrel::hf
