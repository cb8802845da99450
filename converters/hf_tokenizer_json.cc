// tokenizer.json of a WordPiece model, as Hugging Face `tokenizers` serializes it, and the parts
// Unigram models share (hf_tokenizer_unigram.cc reads the rest of those). Only what BERT uses is
// accepted (BertNormalizer, BertPreTokenizer); anything else is an error naming it, so a model
// never runs with a tokenizer that silently differs from its own.
#include <limits>

#include "converters/hf_json_fields.h"
#include "converters/hf_tokenizer_internal.h"

namespace kestrel::hf {
namespace {

using nlohmann::json;

// model.vocab: {"piece": id, ...} with ids 0..n-1, each once.
Status ReadVocab(const JsonNode& model, VocabIndex* vocab) {
  JsonNode node;
  size_t n = 0;
  KES_RETURN_IF_ERROR(ModelVocab(model, json::value_t::object, &node, &n));
  std::vector<std::string> pieces(n);
  std::vector<bool> seen(n, false);
  for (const auto& [piece, value] : node.value->items()) {
    uint64_t id = 0;
    KES_RETURN_IF_ERROR(GetUint(node.Child(piece), &id));
    KES_CHECK_OR_RETURN(id < n && !seen[id], node.Where() + ": expected ids 0.." +
                                                 std::to_string(n - 1) + ", each once; \"" + piece +
                                                 "\" has " + (id < n ? "repeated id " : "id ") +
                                                 std::to_string(id));
    seen[id] = true;
    pieces[id] = piece;
  }
  return StartWordPiece(std::move(pieces), node.Where(), vocab);
}

Status ReadModel(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(ReadVocab(model, vocab));
  fb::TokenizerT* t = vocab->table;
  std::string unk;
  KES_RETURN_IF_ERROR(GetString(model.Child("unk_token"), &unk));
  t->unk_id = vocab->Find(unk);
  KES_CHECK_OR_RETURN(t->unk_id >= 0,
                      model.Where() + ".unk_token: \"" + unk + "\" is not in the vocabulary");
  KES_RETURN_IF_ERROR(
      GetString(model.Child("continuing_subword_prefix"), &t->wordpiece->continuing_prefix));
  KES_CHECK_OR_RETURN(!t->wordpiece->continuing_prefix.empty(),
                      model.Where() + ".continuing_subword_prefix: expected a non-empty prefix");
  uint64_t max_chars = 0;
  KES_RETURN_IF_ERROR(GetUint(model.Child("max_input_chars_per_word"), &max_chars));
  KES_CHECK_OR_RETURN(max_chars > 0 && max_chars <= std::numeric_limits<uint32_t>::max(),
                      model.Where() + ".max_input_chars_per_word: expected 1 to 2^32-1, found " +
                          std::to_string(max_chars));
  t->wordpiece->max_chars_per_word = static_cast<uint32_t>(max_chars);
  return OkStatus();
}

Status ReadNormalizer(const JsonNode& root, fb::WordPieceT* wp) {
  const JsonNode node = root.Child("normalizer");
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectTypeName(node, "BertNormalizer"));
  KES_RETURN_IF_ERROR(GetBool(node.Child("clean_text"), &wp->clean_text));
  KES_RETURN_IF_ERROR(GetBool(node.Child("handle_chinese_chars"), &wp->handle_chinese_chars));
  KES_RETURN_IF_ERROR(GetBool(node.Child("lowercase"), &wp->lowercase));
  const JsonNode strip = node.Child("strip_accents");
  wp->strip_accents = wp->lowercase;  // null: follow lowercase, as BertNormalizer does
  if (!strip.is_null()) KES_RETURN_IF_ERROR(GetBool(strip, &wp->strip_accents));
  return OkStatus();
}

// The id of a post-processor's special token; `node` is its [content, id] pair (BertProcessing,
// RobertaProcessing) or its entry in TemplateProcessing's special_tokens.
Status SpecialId(const JsonNode& node, const std::string& content, const VocabIndex& vocab,
                 int32_t* id) {
  *id = vocab.Find(content);
  KES_CHECK_OR_RETURN(*id >= 0, node.Where() + ": \"" + content + "\" is not in the vocabulary");
  return OkStatus();
}

// TemplateProcessing's single-sequence template: [SpecialToken] Sequence [SpecialToken].
Status ReadTemplate(const JsonNode& node, VocabIndex* vocab) {
  const JsonNode single = node.Child("single");
  KES_RETURN_IF_ERROR(ExpectType(single, json::value_t::array));
  fb::TokenizerT* t = vocab->table;
  bool sequence_seen = false;
  int before = 0, after = 0;
  for (size_t i = 0; i < single.value->size(); ++i) {
    const JsonNode item{&(*single.value)[i], single.file,
                        single.path + "[" + std::to_string(i) + "]"};
    if (item.Child("Sequence").present()) {
      KES_CHECK_OR_RETURN(!sequence_seen, item.Where() + ": expected one Sequence, found two");
      sequence_seen = true;
      continue;
    }
    std::string content;
    KES_RETURN_IF_ERROR(GetString(item.Child("SpecialToken").Child("id"), &content));
    // The runtime adds one token before the text (bos) and one after (eos), no more.
    KES_CHECK_OR_RETURN(++(sequence_seen ? after : before) == 1,
                        item.Where() + ": expected at most one special token " +
                            (sequence_seen ? "after" : "before") + " the sequence, found more");
    KES_RETURN_IF_ERROR(SpecialId(item, content, *vocab, sequence_seen ? &t->eos_id : &t->bos_id));
    (sequence_seen ? t->add_eos : t->add_bos) = true;
  }
  KES_CHECK_OR_RETURN(sequence_seen, single.Where() + ": expected a Sequence item, found none");
  return OkStatus();
}

}  // namespace

Status ModelVocab(const JsonNode& model, json::value_t type, JsonNode* node, size_t* n) {
  *node = model.Child("vocab");
  KES_RETURN_IF_ERROR(ExpectType(*node, type));
  *n = node->value->size();
  KES_CHECK_OR_RETURN(*n > 0 && *n <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
                      node->Where() + ": expected 1 to 2^31-1 pieces, found " + std::to_string(*n));
  return OkStatus();
}

Status ExpectTypeName(const JsonNode& node, const std::string& expected) {
  std::string type;
  KES_RETURN_IF_ERROR(GetString(node.Child("type"), &type));
  KES_CHECK_OR_RETURN(type == expected, node.Where() + ".type: expected \"" + expected +
                                            "\", found \"" + type + "\"");
  return OkStatus();
}

Status ReadPostProcessor(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode node = root.Child("post_processor");
  if (node.is_null()) return OkStatus();  // no [CLS]/[SEP] added
  KES_RETURN_IF_ERROR(ExpectType(node, json::value_t::object));
  std::string type;
  KES_RETURN_IF_ERROR(GetString(node.Child("type"), &type));
  if (type == "TemplateProcessing") return ReadTemplate(node, vocab);
  // RobertaProcessing's trim_offsets and add_prefix_space concern offsets only.
  KES_CHECK_OR_RETURN(type == "BertProcessing" || type == "RobertaProcessing",
                      node.Where() +
                          ".type: expected \"TemplateProcessing\", \"BertProcessing\", "
                          "\"RobertaProcessing\" or null, found \"" +
                          type + "\"");
  fb::TokenizerT* t = vocab->table;
  for (const char* key : {"cls", "sep"}) {
    const JsonNode pair = node.Child(key);
    KES_RETURN_IF_ERROR(ExpectType(pair, json::value_t::array));
    KES_CHECK_OR_RETURN(pair.value->size() == 2 && (*pair.value)[0].is_string(),
                        pair.Where() + ": expected [\"token\", id]");
    const bool cls = key[0] == 'c';
    KES_RETURN_IF_ERROR(SpecialId(pair, (*pair.value)[0].get<std::string>(), *vocab,
                                  cls ? &t->bos_id : &t->eos_id));
    (cls ? t->add_bos : t->add_eos) = true;
  }
  return OkStatus();
}

// added_tokens: split out of raw text before normalization (special tokens are never
// normalized in Hugging Face either). Options the runtime does not implement are refused.
// lstrip (XLM-RoBERTa's "<mask>") takes the whitespace before the token out of the text.
Status ReadAddedTokens(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode list = root.Child("added_tokens");
  if (list.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(ExpectType(list, json::value_t::array));
  fb::TokenizerT* t = vocab->table;
  for (size_t i = 0; i < list.value->size(); ++i) {
    const JsonNode item{&(*list.value)[i], list.file, list.path + "[" + std::to_string(i) + "]"};
    std::string content;
    uint64_t id = 0;
    bool special = false;
    KES_RETURN_IF_ERROR(GetString(item.Child("content"), &content));
    KES_RETURN_IF_ERROR(GetUint(item.Child("id"), &id));
    KES_RETURN_IF_ERROR(GetBool(item.Child("special"), &special));
    bool lstrip = false;
    KES_RETURN_IF_ERROR(GetBool(item.Child("lstrip"), &lstrip));
    for (const char* option : {"rstrip", "single_word"}) {
      bool on = false;
      KES_RETURN_IF_ERROR(GetBool(item.Child(option), &on));
      KES_CHECK_OR_RETURN(!on, item.Where() + "." + option +
                                   ": expected false (not supported), "
                                   "found true");
    }
    KES_CHECK_OR_RETURN(id < t->pieces.size() && t->pieces[id] == content,
                        item.Where() + ": expected \"" + content + "\" at id " +
                            std::to_string(id) + " of the vocabulary, found " +
                            (id < t->pieces.size() ? "\"" + t->pieces[id] + "\"" : "no such id"));
    if (special) {
      MarkSpecial(static_cast<int32_t>(id), vocab);
    } else {
      t->types[id] = static_cast<int8_t>(4);  // user-defined: split out of raw text
    }
    if (lstrip) t->lstrip_ids.push_back(static_cast<int32_t>(id));
  }
  return OkStatus();
}

Status ReadPadding(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode padding = root.Child("padding");
  if (padding.is_null()) return OkStatus();
  std::string pad;
  KES_RETURN_IF_ERROR(GetString(padding.Child("pad_token"), &pad));
  vocab->table->pad_id = vocab->Find(pad);
  KES_CHECK_OR_RETURN(vocab->table->pad_id >= 0,
                      padding.Where() + ".pad_token: \"" + pad + "\" is not in the vocabulary");
  return OkStatus();
}

Status ReadTokenizerJson(const std::string& path, fb::TokenizerT* out) {
  json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(OpenJsonObject(path, &storage, &root));
  VocabIndex vocab{out, {}};
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(ExpectType(model, json::value_t::object));
  std::string type;
  KES_RETURN_IF_ERROR(GetString(model.Child("type"), &type));
  if (type == "Unigram") return ReadUnigramJson(root, &vocab);
  if (type == "BPE") return ReadByteLevelBpeJson(root, &vocab);
  KES_CHECK_OR_RETURN(type == "WordPiece", model.Where() +
                                               ".type: expected \"WordPiece\", \"Unigram\" or "
                                               "\"BPE\" "
                                               "(the Hugging Face models Kestrel reads from "
                                               "tokenizer.json), found \"" +
                                               type + "\"");
  KES_RETURN_IF_ERROR(ReadModel(root, &vocab));
  KES_RETURN_IF_ERROR(ReadNormalizer(root, out->wordpiece.get()));
  const JsonNode pre = root.Child("pre_tokenizer");
  KES_RETURN_IF_ERROR(ExpectType(pre, json::value_t::object));
  KES_RETURN_IF_ERROR(ExpectTypeName(pre, "BertPreTokenizer"));
  KES_RETURN_IF_ERROR(ReadPostProcessor(root, &vocab));
  // Only added tokens are split out of text: a tokenizer.json whose added_tokens lack "[UNK]"
  // reads "[UNK]" in text as "[", "unk", "]", and so does the runtime then.
  KES_RETURN_IF_ERROR(ReadAddedTokens(root, &vocab));
  return ReadPadding(root, &vocab);
}

}  // namespace kestrel::hf
