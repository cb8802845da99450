// The tokenizer from GGUF metadata: SentencePiece-style vocabularies (tokenizer.ggml.model
// "llama": pieces, scores, types) and byte-level BPE (tokenizer.ggml.model "gpt2": pieces,
// types, ranked merges, the pre-tokenizer named by tokenizer.ggml.pre).
#include "converters/gguf_tokenizer.h"

#include "converters/tokenizer_table.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "runtime/pretokenizer.h"

namespace kestrel {
namespace {

// Merges and pre-tokenizer of a byte-level vocabulary; its pieces have no scores (zeros).
Status ImportBpeParts(const gguf::File& file, fb::TokenizerT* out) {
  KES_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.merges", &out->merges));
  out->pre = "gpt2";  // llama.cpp's choice when the file names none
  if (file.Has("tokenizer.ggml.pre")) {
    KES_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.pre", &out->pre));
  }
  PreTokenizer pre;
  KES_RETURN_IF_ERROR(ParsePreTokenizer(out->pre, &pre).WithContext("tokenizer.ggml.pre"));
  out->scores.assign(out->pieces.size(), 0.0f);
  return OkStatus();
}

// llama.cpp gives the special tokens (control, user-defined, unknown) of a model whose
// general.name contains "phi-3" or "phi3" its rstrip attribute, </s> too, and takes it back from
// <unk>, <s> and <|endoftext|>: whitespace after them in a prompt is dropped. Phi-3 GGUFs say
// nothing of it themselves, so the rule is llama.cpp's, by name.
Status ImportRightStrip(const gguf::File& file, fb::TokenizerT* out) {
  if (!file.Has("general.name")) return OkStatus();
  std::string name;
  KES_RETURN_IF_ERROR(file.GetString("general.name", &name));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) {
    return OkStatus();
  }
  for (size_t i = 0; i < out->pieces.size(); ++i) {
    const std::string& piece = out->pieces[i];
    const int8_t type = i < out->types.size() ? out->types[i] : 1;
    const bool special = type == 2 || type == 3 || type == 4;  // unknown, control, user-defined
    if ((special || piece == "</s>") && piece != "<unk>" && piece != "<s>" &&
        piece != "<|endoftext|>") {
      out->rstrip_ids.push_back(static_cast<int32_t>(i));
    }
  }
  return OkStatus();
}

void AddStopId(int32_t id, fb::TokenizerT* out) {
  if (std::find(out->stop_ids.begin(), out->stop_ids.end(), id) == out->stop_ids.end()) {
    out->stop_ids.push_back(id);
  }
}

// llama.cpp ends a generation at every token its load-time list names by text, besides the
// file's eos and eot, and makes each a control token (llama_vocab::impl::load, 0.3.36): the
// list as it stands there, less the entries for models Kestrel does not run.
void ImportEndOfGeneration(fb::TokenizerT* out) {
  static const char* const kEndOfGeneration[] = {"<|eot_id|>",
                                                 "<|im_end|>",
                                                 "<|end|>",
                                                 "<end_of_turn>",
                                                 "<|endoftext|>",
                                                 "</s>",
                                                 "<|eom_id|>",
                                                 "<EOT>",
                                                 "_<EOT>",
                                                 "[EOT]",
                                                 "[EOS]",
                                                 "<|end_of_text|>",
                                                 "<end_of_utterance>",
                                                 "<eos>",
                                                 "<|return|>",
                                                 "<|call|>"};
  for (size_t i = 0; i < out->pieces.size(); ++i) {
    for (const char* text : kEndOfGeneration) {
      if (out->pieces[i] != text) continue;
      AddStopId(static_cast<int32_t>(i), out);
      if (i < out->types.size()) out->types[i] = 3;  // control
    }
  }
}

// The fill-in-the-middle tokens llama.cpp finds by text where the file names none by key, and
// makes control tokens (llama_vocab::impl::load); it ends a generation at the padding, repo and
// file-separator ones, found either way. Kinds in its order, each with its key (and the
// deprecated one for the first three) and its texts.
Status ImportFillInTheMiddle(const gguf::File& file, fb::TokenizerT* out) {
  struct Kind {
    const char* key;
    const char* old_key;
    bool ends_generation;
    std::vector<const char*> texts;
  };
  static const Kind kKinds[] = {
      {"tokenizer.ggml.fim_pre_token_id",
       "tokenizer.ggml.prefix_token_id",
       false,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
        "<|code_prefix|>", "<|prefix|>"}},
      {"tokenizer.ggml.fim_suf_token_id",
       "tokenizer.ggml.suffix_token_id",
       false,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
        "<|code_suffix|>", "<|suffix|>"}},
      {"tokenizer.ggml.fim_mid_token_id",
       "tokenizer.ggml.middle_token_id",
       false,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
        "<|code_middle|>", "<|middle|>"}},
      {"tokenizer.ggml.fim_pad_token_id",
       nullptr,
       true,
       {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {"tokenizer.ggml.fim_rep_token_id",
       nullptr,
       true,
       {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {"tokenizer.ggml.fim_sep_token_id", nullptr, true, {"<|file_sep|>"}},
  };
  const size_t n = out->pieces.size();
  for (const Kind& kind : kKinds) {
    int64_t id = -1;
    for (const char* key : {kind.key, kind.old_key}) {
      if (key == nullptr || !file.Has(key)) continue;
      KES_RETURN_IF_ERROR(file.GetInt(key, &id));
      // llama.cpp warns about an id outside the vocabulary and looks for the text instead.
      if (id < 0 || static_cast<uint64_t>(id) >= n) id = -1;
    }
    for (size_t i = 0; id < 0 && i < n; ++i) {
      for (const char* text : kind.texts) {
        if (out->pieces[i] != text) continue;
        id = static_cast<int64_t>(i);
        if (i < out->types.size()) out->types[i] = 3;  // control
        break;
      }
    }
    if (id >= 0 && kind.ends_generation) AddStopId(static_cast<int32_t>(id), out);
  }
  return OkStatus();
}

}  // namespace

Status ImportTokenizer(const gguf::File& file, fb::TokenizerT* out) {
  std::string kind;
  KES_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.model", &kind));
  KES_CHECK_OR_RETURN(kind == "llama" || kind == "gpt2",
                      "tokenizer.ggml.model: expected \"llama\" (SentencePiece BPE) or \"gpt2\" "
                      "(byte-level BPE), found \"" +
                          kind + "\"");
  const bool bpe = kind == "gpt2";
  out->kind = bpe ? fb::TokenizerKind::ByteLevelBpe : fb::TokenizerKind::SentencePieceBpe;
  KES_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.tokens", &out->pieces));
  if (bpe) {
    KES_RETURN_IF_ERROR(ImportBpeParts(file, out));
  } else {
    KES_RETURN_IF_ERROR(file.GetFloatArray("tokenizer.ggml.scores", &out->scores));
  }
  std::vector<int64_t> types;
  KES_RETURN_IF_ERROR(file.GetIntArray("tokenizer.ggml.token_type", &types));
  const size_t n = out->pieces.size();
  KES_CHECK_OR_RETURN(out->scores.size() == n && types.size() == n,
                      "tokenizer: " + std::to_string(n) + " tokens but " +
                          std::to_string(out->scores.size()) + " scores and " +
                          std::to_string(types.size()) + " token types");
  out->types.resize(n);
  for (size_t i = 0; i < n; ++i) {
    KES_CHECK_OR_RETURN(
        types[i] >= 0 && types[i] <= 6,
        "token " + std::to_string(i) + ": unknown token type " + std::to_string(types[i]));
    out->types[i] = static_cast<int8_t>(types[i]);
  }
  const auto id_or_none = [&](const char* key, int32_t* id) -> Status {
    *id = -1;
    if (!file.Has(key)) return OkStatus();
    int64_t v;
    KES_RETURN_IF_ERROR(file.GetInt(key, &v));
    KES_CHECK_OR_RETURN(v >= 0 && static_cast<uint64_t>(v) < n,
                        std::string(key) + ": id " + std::to_string(v) + " is outside the " +
                            std::to_string(n) + "-token vocabulary");
    *id = static_cast<int32_t>(v);
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(id_or_none("tokenizer.ggml.bos_token_id", &out->bos_id));
  KES_RETURN_IF_ERROR(id_or_none("tokenizer.ggml.eos_token_id", &out->eos_id));
  KES_RETURN_IF_ERROR(id_or_none("tokenizer.ggml.unknown_token_id", &out->unk_id));
  KES_RETURN_IF_ERROR(id_or_none("tokenizer.ggml.padding_token_id", &out->pad_id));
  KES_RETURN_IF_ERROR(id_or_none("tokenizer.ggml.eot_token_id", &out->eot_id));
  KES_RETURN_IF_ERROR(ImportFillInTheMiddle(file, out));
  ImportEndOfGeneration(out);
  if (out->eot_id < 0) {
    // Instruction-tuned models end a turn with one of these control tokens even when no key
    // names it: Gemma's, ChatML's (SmolLM2, Qwen2), Llama 3's.
    for (size_t i = 0; i < n && out->eot_id < 0; ++i) {
      for (const char* end_of_turn : {"<end_of_turn>", "<|im_end|>", "<|eot_id|>"}) {
        if (out->pieces[i] == end_of_turn && out->types[i] == 3) {
          out->eot_id = static_cast<int32_t>(i);
        }
      }
    }
  }
  const auto flag = [&](const char* key, bool fallback, bool* value) -> Status {
    *value = fallback;
    return file.Has(key) ? file.GetBool(key, value) : OkStatus();
  };
  // llama.cpp's defaults: SentencePiece vocabularies add BOS and a space prefix, byte-level
  // ones neither, unless the file says.
  KES_RETURN_IF_ERROR(flag("tokenizer.ggml.add_bos_token", !bpe, &out->add_bos));
  KES_RETURN_IF_ERROR(flag("tokenizer.ggml.add_eos_token", false, &out->add_eos));
  KES_RETURN_IF_ERROR(flag("tokenizer.ggml.add_space_prefix", !bpe, &out->add_space_prefix));
  if (file.Has("tokenizer.chat_template")) {
    KES_RETURN_IF_ERROR(file.GetString("tokenizer.chat_template", &out->chat_template));
  }
  KES_RETURN_IF_ERROR(ImportRightStrip(file, out));
  Tokenizer check;
  return TokenizerFromTable(*out, &check);
}

}  // namespace kestrel
