// A SentencePiece tokenizer.model as the tokenizer.ggml.* keys convert_hf_to_gguf.py's
// _create_vocab_sentencepiece writes (Gemma, Llama 2, Mistral 7B, Phi-3), so that the GGUF
// tokenizer import reads the folder as it reads the GGUF made from it.
#include <fstream>

#include "converters/hf/decoder_gguf.h"
#include "converters/hf/sentencepiece_model.h"

namespace kestrel {
namespace {

using hf::JsonNode;
using nlohmann::json;
using Spm = SentencePieceModel;

std::string Num(uint64_t v) { return std::to_string(v); }

struct Vocabulary {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

// added_tokens.json ({"piece": id, ...}): user-defined tokens with score -1000.
Status ReadAddedTokensJson(const std::string& folder, Vocabulary* v) {
  json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(hf::OpenOptionalJsonObject(folder + "/added_tokens.json", &storage, &root));
  if (!root.present()) return OkStatus();
  for (const auto& entry : root.value->items()) {
    uint64_t id = 0;
    KES_RETURN_IF_ERROR(hf::GetUint(root.Child(entry.key()), &id));
    if (id >= v->pieces.size()) continue;  // as llama.cpp: ignored
    v->pieces[id] = entry.key();
    v->scores[id] = -1000.0f;
    v->types[id] = Spm::kUserDefined;
  }
  return OkStatus();
}

// An added token of id `id` (in range): score -1000, control or user-defined as `added` says.
void SetAddedToken(uint64_t id, std::string content, bool special, SentencePieceAddedTokens added,
                   Vocabulary* v) {
  if (added == SentencePieceAddedTokens::kPhi3) {
    v->types[id] = special ? Spm::kControl : Spm::kUserDefined;
  } else if (special || LooksLikeSpecialToken(content)) {
    v->types[id] = Spm::kControl;
  } else {
    v->types[id] = Spm::kUserDefined;
    content = SpacesForU2581(content);
  }
  v->pieces[id] = content;
  v->scores[id] = -1000.0f;
}

// tokenizer_config.json's added_tokens_decoder ({"id": {"content": ..., "special": ...}}).
Status ReadAddedTokensDecoder(const std::string& folder, SentencePieceAddedTokens added,
                              Vocabulary* v) {
  json storage;
  JsonNode root;
  KES_RETURN_IF_ERROR(
      hf::OpenOptionalJsonObject(folder + "/tokenizer_config.json", &storage, &root));
  const JsonNode decoder = root.Child("added_tokens_decoder");
  if (decoder.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(hf::ExpectType(decoder, json::value_t::object));
  for (const auto& entry : decoder.value->items()) {
    const JsonNode token = decoder.Child(entry.key());
    const std::string& key = entry.key();
    KES_CHECK_OR_RETURN(!key.empty() && key.size() <= 10 &&
                            key.find_first_not_of("0123456789") == std::string::npos,
                        token.Where() + ": expected a token id as the key");
    const uint64_t id = std::stoull(key);
    std::string content;
    KES_RETURN_IF_ERROR(hf::GetString(token.Child("content"), &content));
    if (id >= v->pieces.size()) continue;  // as llama.cpp: ignored
    const JsonNode special = token.Child("special");
    const bool is_special =
        special.present() && special.value->is_boolean() && special.value->get<bool>();
    SetAddedToken(id, content, is_special, added, v);
  }
  return OkStatus();
}

}  // namespace

Status AddHfSentencePieceTokenizer(const std::string& folder, uint32_t vocab_size,
                                   const std::string& config_path, SentencePieceAddedTokens added,
                                   gguf::Builder* out) {
  const std::string path = folder + "/tokenizer.model";
  Spm model;
  KES_RETURN_IF_ERROR(ReadSentencePieceModel(path, &model));
  KES_CHECK_OR_RETURN(model.model_type == Spm::kBpe,
                      "'" + path + "': trainer_spec.model_type is " + Num(model.model_type) +
                          ": expected 2 (BPE); Unigram SentencePiece models (T5, XLM-R) are not "
                          "supported for decoders");
  Vocabulary v;
  v.pieces.resize(vocab_size);
  v.scores.assign(vocab_size, -10000.0f);
  v.types.assign(vocab_size, Spm::kUnused);
  for (uint32_t i = 0; i < vocab_size; ++i) v.pieces[i] = "[PAD" + Num(i) + "]";
  for (size_t id = 0; id < model.pieces.size() && id < vocab_size; ++id) {
    const Spm::Piece& p = model.pieces[id];
    v.pieces[id] = p.piece;
    v.scores[id] = p.score;
    // _create_vocab_sentencepiece asks IsUnknown, IsControl, IsUnused and IsByte: a
    // user-defined piece of the model stays normal unless the folder's added tokens say more.
    v.types[id] = p.type == Spm::kUserDefined ? Spm::kNormal : p.type;
  }
  KES_RETURN_IF_ERROR(ReadAddedTokensJson(folder, &v));
  KES_RETURN_IF_ERROR(ReadAddedTokensDecoder(folder, added, &v));

  json storage;
  JsonNode tokenizer_json;
  const bool has_json = std::ifstream(folder + "/tokenizer.json").good();
  if (has_json) {
    KES_RETURN_IF_ERROR(hf::OpenJsonObject(folder + "/tokenizer.json", &storage, &tokenizer_json));
  }
  if (has_json && added == SentencePieceAddedTokens::kPhi3 &&
      !tokenizer_json.Child("added_tokens").is_null()) {
    KES_RETURN_IF_ERROR(hf::ForEachAddedToken(
        tokenizer_json,
        [&](const JsonNode&, uint64_t id, const std::string& content, bool special) {
          if (id < vocab_size) SetAddedToken(id, content, special, added, &v);
          return OkStatus();
        }));
  }
  out->SetString("tokenizer.ggml.model", "llama");
  out->SetString("tokenizer.ggml.pre", "default");
  out->SetStringArray("tokenizer.ggml.tokens", v.pieces);
  out->SetFloat32Array("tokenizer.ggml.scores", v.scores);
  out->SetInt32Array("tokenizer.ggml.token_type", v.types);
  return AddHfSpecialTokens(folder, has_json ? &tokenizer_json : nullptr, vocab_size, config_path,
                            out);
}

}  // namespace kestrel
