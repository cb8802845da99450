#include "runtime/model_tokenizer.h"

#include <functional>
#include <string>

namespace kestrel {
namespace {

using StringList = flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>;

std::string Num(uint64_t v) { return std::to_string(v); }

std::function<std::string_view(size_t)> Strings(const StringList* list) {
  return [list](size_t i) { return list->Get(static_cast<uint32_t>(i))->string_view(); };
}

Status CheckNoneMissing(const StringList* list, const char* what) {
  for (uint32_t i = 0; i < list->size(); ++i) {
    KES_CHECK_OR_RETURN(list->Get(i) != nullptr,
                        std::string("tokenizer: ") + what + " " + Num(i) + " is missing");
  }
  return OkStatus();
}

Status ReadByteLevelBpe(const fb::Tokenizer* tok, TokenizerConfig* config) {
  config->algorithm = TokenizerAlgorithm::kByteLevelBpe;
  KES_CHECK_OR_RETURN(tok->pre() != nullptr, "tokenizer: byte-level BPE without a pre-tokenizer");
  KES_RETURN_IF_ERROR(ParsePreTokenizer(tok->pre()->string_view(), &config->pre));
  KES_CHECK_OR_RETURN(tok->merges() != nullptr, "tokenizer: byte-level BPE without merges");
  return CheckNoneMissing(tok->merges(), "merge");
}

Status ReadWordPiece(const fb::Tokenizer* tok, TokenizerConfig* config) {
  config->algorithm = TokenizerAlgorithm::kWordPiece;
  const fb::WordPiece* wp = tok->wordpiece();
  KES_CHECK_OR_RETURN(wp != nullptr,
                      "tokenizer: kind WordPiece expected a wordpiece table, "
                      "found none");
  KES_CHECK_OR_RETURN(
      tok->merges() == nullptr || tok->merges()->size() == 0,
      "tokenizer: kind WordPiece expected no merges, found " + Num(tok->merges()->size()));
  KES_CHECK_OR_RETURN(wp->continuing_prefix() != nullptr && wp->continuing_prefix()->size() > 0,
                      "tokenizer: WordPiece expected a non-empty continuing_prefix (\"##\"), "
                      "found none");
  config->normalizer.lowercase = wp->lowercase();
  config->normalizer.strip_accents = wp->strip_accents();
  config->normalizer.handle_chinese_chars = wp->handle_chinese_chars();
  config->normalizer.clean_text = wp->clean_text();
  config->continuing_prefix = wp->continuing_prefix()->str();
  config->max_chars_per_word = wp->max_chars_per_word();
  return OkStatus();  // Tokenizer::Init checks the values
}

Status ReadUnigram(const fb::Tokenizer* tok, TokenizerConfig* config) {
  config->algorithm = TokenizerAlgorithm::kUnigram;
  const fb::Unigram* unigram = tok->unigram();
  KES_CHECK_OR_RETURN(unigram != nullptr,
                      "tokenizer: kind Unigram expected a unigram table, found none");
  KES_CHECK_OR_RETURN(
      tok->merges() == nullptr || tok->merges()->size() == 0,
      "tokenizer: kind Unigram expected no merges, found " + Num(tok->merges()->size()));
  config->spm_normalizer.add_dummy_prefix = unigram->add_dummy_prefix();
  config->spm_normalizer.remove_extra_whitespaces = unigram->remove_extra_whitespaces();
  config->spm_normalizer.escape_whitespaces = unigram->escape_whitespaces();
  return OkStatus();  // Tokenizer::Init checks unk_id and the charsmap
}

// The charsmap of a Unigram table, or none.
std::string_view Charsmap(const fb::Tokenizer* tok) {
  const fb::Unigram* unigram = tok->unigram();
  if (unigram == nullptr || unigram->precompiled_charsmap() == nullptr) return {};
  const auto* blob = unigram->precompiled_charsmap();
  return std::string_view(reinterpret_cast<const char*>(blob->data()), blob->size());
}

}  // namespace

Status InitTokenizer(const fb::Tokenizer* tok, size_t vocab, Tokenizer* out) {
  KES_CHECK_OR_RETURN(tok != nullptr, "model has no tokenizer");
  const fb::TokenizerKind kind = tok->kind();
  KES_CHECK_OR_RETURN(
      kind == fb::TokenizerKind::SentencePieceBpe || kind == fb::TokenizerKind::ByteLevelBpe ||
          kind == fb::TokenizerKind::WordPiece || kind == fb::TokenizerKind::Unigram,
      "tokenizer: expected kind SentencePieceBpe (0), ByteLevelBpe (1), "
      "WordPiece (2) or Unigram (3), found " +
          Num(static_cast<uint64_t>(kind)));
  KES_CHECK_OR_RETURN(kind == fb::TokenizerKind::WordPiece || tok->wordpiece() == nullptr,
                      std::string("tokenizer: a wordpiece table given to kind ") +
                          fb::EnumNameTokenizerKind(kind) + " (only WordPiece reads it)");
  KES_CHECK_OR_RETURN(kind == fb::TokenizerKind::Unigram || tok->unigram() == nullptr,
                      std::string("tokenizer: a unigram table given to kind ") +
                          fb::EnumNameTokenizerKind(kind) + " (only Unigram reads it)");
  const auto* pieces = tok->pieces();
  const auto* scores = tok->scores();
  const auto* types = tok->types();
  KES_CHECK_OR_RETURN(pieces && scores && types, "tokenizer: pieces, scores or types missing");
  KES_CHECK_OR_RETURN(pieces->size() == vocab && scores->size() == vocab && types->size() == vocab,
                      "tokenizer: expected " + Num(vocab) + " pieces, scores and types, found " +
                          Num(pieces->size()) + ", " + Num(scores->size()) + ", " +
                          Num(types->size()));
  KES_RETURN_IF_ERROR(CheckNoneMissing(pieces, "piece"));
  TokenizerConfig config;
  config.bos_id = tok->bos_id();
  config.eos_id = tok->eos_id();
  config.unk_id = tok->unk_id();
  config.pad_id = tok->pad_id();
  config.eot_id = tok->eot_id();
  config.add_bos = tok->add_bos();
  config.add_eos = tok->add_eos();
  config.add_space_prefix = tok->add_space_prefix();
  if (tok->rstrip_ids() != nullptr) {
    config.rstrip_ids.assign(tok->rstrip_ids()->begin(), tok->rstrip_ids()->end());
  }
  if (tok->stop_ids() != nullptr) {
    config.stop_ids.assign(tok->stop_ids()->begin(), tok->stop_ids()->end());
  }
  if (tok->lstrip_ids() != nullptr) {
    config.lstrip_ids.assign(tok->lstrip_ids()->begin(), tok->lstrip_ids()->end());
  }
  const bool bpe = kind == fb::TokenizerKind::ByteLevelBpe;
  if (bpe) KES_RETURN_IF_ERROR(ReadByteLevelBpe(tok, &config));
  if (kind == fb::TokenizerKind::WordPiece) KES_RETURN_IF_ERROR(ReadWordPiece(tok, &config));
  if (kind == fb::TokenizerKind::Unigram) KES_RETURN_IF_ERROR(ReadUnigram(tok, &config));
  return out
      ->Init(vocab, Strings(pieces), scores->data(), types->data(), config,
             bpe ? tok->merges()->size() : 0,
             bpe ? Strings(tok->merges()) : std::function<std::string_view(size_t)>(),
             Charsmap(tok))
      .WithContext("tokenizer");
}

}  // namespace kestrel
