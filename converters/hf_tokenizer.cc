// ReadHfTokenizer: tokenizer.json when the folder has one (hf_tokenizer_json.cc), else the older
// layout BertTokenizer reads: vocab.txt, tokenizer_config.json, special_tokens_map.json.
#include "converters/hf_tokenizer.h"
#include "converters/tokenizer_table.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <tuple>
#include <utility>

#include "converters/hf_json_fields.h"
#include "converters/hf_tokenizer_internal.h"

namespace kestrel {
namespace hf {

int32_t VocabIndex::Find(const std::string& piece) const {
  const auto it = ids.find(piece);
  return it == ids.end() ? -1 : it->second;
}

Status StartVocab(std::vector<std::string> pieces, const std::string& where, VocabIndex* vocab) {
  fb::TokenizerT* t = vocab->table;
  vocab->ids.clear();
  vocab->ids.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto [it, fresh] = vocab->ids.emplace(pieces[i], static_cast<int32_t>(i));
    KES_CHECK_OR_RETURN(fresh, where + ": piece \"" + pieces[i] + "\" appears twice, as ids " +
                                   std::to_string(it->second) + " and " + std::to_string(i));
  }
  t->types.assign(pieces.size(), static_cast<int8_t>(1));  // normal
  t->scores.assign(pieces.size(), 0.0f);
  t->pieces = std::move(pieces);
  return OkStatus();
}

Status StartWordPiece(std::vector<std::string> pieces, const std::string& where,
                      VocabIndex* vocab) {
  KES_RETURN_IF_ERROR(StartVocab(std::move(pieces), where, vocab));
  vocab->table->kind = fb::TokenizerKind::WordPiece;
  vocab->table->wordpiece = std::make_unique<fb::WordPieceT>();
  return OkStatus();
}

void MarkSpecial(int32_t id, VocabIndex* vocab) {
  fb::TokenizerT* t = vocab->table;
  t->types[id] = static_cast<int8_t>(id == t->unk_id ? 2 : 3);  // unknown : control
}

}  // namespace hf

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// One piece per line, trailing whitespace dropped (as `tokenizers` reads vocab.txt).
Status ReadVocabTxt(const std::string& path, std::vector<std::string>* pieces) {
  std::ifstream in(path, std::ios::binary);
  KES_CHECK_OR_RETURN(in.good(), "'" + path +
                                     "': cannot open (a folder without tokenizer.json "
                                     "needs vocab.txt)");
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || (line.back() >= '\t' && line.back() <= '\r'))) {
      line.pop_back();
    }
    pieces->push_back(std::move(line));
  }
  KES_CHECK_OR_RETURN(!pieces->empty(), "'" + path + "': expected one piece per line, found none");
  return OkStatus();
}

// A boolean option of tokenizer_config.json; `fallback` when the file or the field is absent
// or null.
Status ConfigBool(const hf::JsonNode& config, const char* key, bool fallback, bool* out) {
  const hf::JsonNode node = config.Child(key);
  *out = fallback;
  return node.is_null() ? OkStatus() : hf::GetBool(node, out);
}

// A special token's text: special_tokens_map.json, then tokenizer_config.json, then BERT's
// default. Either file may write it as "[UNK]" or as {"content": "[UNK]", ...}.
Status SpecialText(const hf::JsonNode& map, const hf::JsonNode& config, const char* key,
                   const char* fallback, std::string* out) {
  for (const hf::JsonNode* file : {&map, &config}) {
    const hf::JsonNode node = file->Child(key);
    if (node.is_null()) continue;
    return node.value->is_object() ? hf::GetString(node.Child("content"), out)
                                   : hf::GetString(node, out);
  }
  *out = fallback;
  return OkStatus();
}

Status ReadVocabFolder(const std::string& folder, fb::TokenizerT* out) {
  std::vector<std::string> pieces;
  const std::string vocab_path = folder + "/vocab.txt";
  KES_RETURN_IF_ERROR(ReadVocabTxt(vocab_path, &pieces));
  hf::VocabIndex vocab{out, {}};
  KES_RETURN_IF_ERROR(hf::StartWordPiece(std::move(pieces), "'" + vocab_path + "'", &vocab));

  nlohmann::json config_storage, map_storage;
  hf::JsonNode config, map;  // absent files read as empty: every field takes its default
  for (auto [name, storage, node] :
       {std::make_tuple("tokenizer_config.json", &config_storage, &config),
        std::make_tuple("special_tokens_map.json", &map_storage, &map)}) {
    const std::string path = folder + "/" + name;
    if (Exists(path)) KES_RETURN_IF_ERROR(hf::OpenJsonObject(path, storage, node));
  }
  fb::WordPieceT* wp = out->wordpiece.get();
  KES_RETURN_IF_ERROR(ConfigBool(config, "do_lower_case", true, &wp->lowercase));
  KES_RETURN_IF_ERROR(ConfigBool(config, "strip_accents", wp->lowercase, &wp->strip_accents));
  KES_RETURN_IF_ERROR(
      ConfigBool(config, "tokenize_chinese_chars", true, &wp->handle_chinese_chars));
  wp->clean_text = true;
  wp->continuing_prefix = "##";
  wp->max_chars_per_word = 100;

  struct Special {
    const char* key;
    const char* fallback;
    int32_t* id;  // where the id goes, if anywhere
  };
  int32_t mask_id = -1;
  const Special specials[] = {{"unk_token", "[UNK]", &out->unk_id},
                              {"cls_token", "[CLS]", &out->bos_id},
                              {"sep_token", "[SEP]", &out->eos_id},
                              {"pad_token", "[PAD]", &out->pad_id},
                              {"mask_token", "[MASK]", &mask_id}};
  for (const Special& s : specials) {
    std::string text;
    KES_RETURN_IF_ERROR(SpecialText(map, config, s.key, s.fallback, &text));
    *s.id = vocab.Find(text);
    KES_CHECK_OR_RETURN(*s.id >= 0 || s.id != &out->unk_id,
                        "'" + vocab_path + "': the unknown token \"" + text +
                            "\" (unk_token) is not in the vocabulary");
  }
  for (const Special& s : specials) {
    if (*s.id >= 0) hf::MarkSpecial(*s.id, &vocab);
  }
  out->add_bos = out->bos_id >= 0;  // BertTokenizer: [CLS] text [SEP]
  out->add_eos = out->eos_id >= 0;
  return OkStatus();
}

}  // namespace

Status ReadHfTokenizer(const std::string& folder, fb::TokenizerT* out) {
  const std::string json_path = folder + "/tokenizer.json";
  fb::TokenizerT fresh;  // filled aside, so a failure leaves *out alone
  KES_RETURN_IF_ERROR(Exists(json_path) ? hf::ReadTokenizerJson(json_path, &fresh)
                                        : ReadVocabFolder(folder, &fresh));
  Tokenizer check;
  KES_RETURN_IF_ERROR(TokenizerFromTable(fresh, &check));
  *out = std::move(fresh);
  return OkStatus();
}

}  // namespace kestrel
