// tokenizer.json of a byte-level BPE model in an encoder folder (RoBERTa: GPT-2's vocabulary and
// pre-tokenizer, "<s> $A </s>"): the pieces, merges and pre-tokenizer as the decoder folders'
// reader takes them (converters/hf/decoder_gguf.h), the special tokens and template as the
// WordPiece and Unigram readers do (hf_tokenizer_json.cc).
#include "converters/hf/decoder_gguf.h"
#include "converters/hf_tokenizer_internal.h"

namespace kestrel::hf {
namespace {

using nlohmann::json;

// A BPE option Kestrel's byte-level BPE has no counterpart for: absent, null or `neutral`.
Status ExpectNeutral(const JsonNode& model, const char* key, const json& neutral) {
  const JsonNode node = model.Child(key);
  KES_CHECK_OR_RETURN(!node.present() || node.value->is_null() || *node.value == neutral,
                      node.Where() + ": expected " + neutral.dump() + " or null, found " +
                          node.value->dump().substr(0, 100));
  return OkStatus();
}

}  // namespace

Status ReadByteLevelBpeJson(const JsonNode& root, VocabIndex* vocab) {
  const JsonNode model = root.Child("model");
  KES_RETURN_IF_ERROR(ExpectNeutral(model, "dropout", 0.0));
  KES_RETURN_IF_ERROR(ExpectNeutral(model, "continuing_subword_prefix", ""));
  KES_RETURN_IF_ERROR(ExpectNeutral(model, "end_of_word_suffix", ""));
  KES_RETURN_IF_ERROR(ExpectNeutral(model, "byte_fallback", false));
  const JsonNode normalizer = root.Child("normalizer");
  KES_CHECK_OR_RETURN(normalizer.is_null(), normalizer.Where() +
                                                ": expected null (a byte-level "
                                                "BPE reads bytes as they are), "
                                                "found " +
                                                normalizer.value->dump().substr(0, 200));
  std::string pre;
  KES_RETURN_IF_ERROR(HfBpePreTokenizerName(root, &pre));

  // Ids 0..n-1, each once: added tokens outside model.vocab (RoBERTa's <mask> in some files)
  // take their own ids.
  std::vector<std::string> pieces;
  std::vector<bool> named;
  const auto name = [&](const JsonNode& where, uint64_t id, const std::string& piece) {
    KES_CHECK_OR_RETURN(id < (uint64_t{1} << 24),
                        where.Where() + ": id " + std::to_string(id) + " is past 2^24 tokens");
    if (id >= pieces.size()) pieces.resize(id + 1), named.resize(id + 1, false);
    KES_CHECK_OR_RETURN(!named[id] || pieces[id] == piece,
                        where.Where() + ": \"" + piece + "\" has id " + std::to_string(id) +
                            ", which \"" + pieces[id] + "\" has too");
    pieces[id] = piece;
    named[id] = true;
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(
      ForEachVocabEntry(root, [&](const JsonNode& node, uint64_t id, const std::string& piece) {
        return name(node, id, piece);
      }));
  if (!root.Child("added_tokens").is_null()) {
    KES_RETURN_IF_ERROR(
        ForEachAddedToken(root, [&](const JsonNode& node, uint64_t id, const std::string& content,
                                    bool) { return name(node, id, content); }));
  }
  for (size_t id = 0; id < named.size(); ++id) {
    KES_CHECK_OR_RETURN(named[id], model.Child("vocab").Where() + ": no token has id " +
                                       std::to_string(id) + " (expected ids 0.." +
                                       std::to_string(named.size() - 1) + ", each once)");
  }
  KES_RETURN_IF_ERROR(StartVocab(std::move(pieces), model.Child("vocab").Where(), vocab));
  fb::TokenizerT* t = vocab->table;
  t->kind = fb::TokenizerKind::ByteLevelBpe;
  t->pre = pre;
  KES_RETURN_IF_ERROR(ReadHfBpeMerges(model, &t->merges));
  const JsonNode unk = model.Child("unk_token");
  if (unk.present() && !unk.value->is_null()) {
    std::string piece;
    KES_RETURN_IF_ERROR(GetString(unk, &piece));
    t->unk_id = vocab->Find(piece);
    KES_CHECK_OR_RETURN(t->unk_id >= 0,
                        unk.Where() + ": \"" + piece + "\" is not in the vocabulary");
  }
  KES_RETURN_IF_ERROR(ReadPostProcessor(root, vocab));
  KES_RETURN_IF_ERROR(ReadAddedTokens(root, vocab));
  return ReadPadding(root, vocab);
}

}  // namespace kestrel::hf
