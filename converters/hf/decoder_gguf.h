// Hugging Face decoder folders (model_type llama, mistral, qwen2, qwen3, smollm3, gemma2,
// gemma3_text, gemma3 or phi3) rewritten as the GGUF file llama.cpp's convert_hf_to_gguf.py makes
// of them: the same hyper-parameter keys, tensor names, Q/K row permutation (llama, mistral and
// smollm3), RoPE factor tensors and tokenizer keys. The GGUF converters (converters/arch/) then
// read it like any GGUF file, so a folder and the GGUF made from it convert into the same plans,
// with every --weights choice the GGUF route has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/gguf/gguf_builder.h"
#include "converters/hf_json_fields.h"
#include "runtime/status.h"

namespace kestrel {

// Whether `folder`'s config.json names a decoder model_type BuildHfDecoderGguf reads. False when
// there is no readable config.json or it names anything else (BERT, Whisper: their own readers).
bool IsHfDecoderFolder(const std::string& folder);

// The GGUF bytes of the decoder in `folder`: config.json, model.safetensors or its shards,
// tokenizer.json, tokenizer_config.json (special tokens, chat template). Weight matrices keep the
// checkpoint's F32, F16 or BF16; vectors (norms, biases) become F32, as llama.cpp's converter
// stores them. Anything missing, malformed or unsupported is an error naming the file and field.
Status BuildHfDecoderGguf(const std::string& folder, std::vector<uint8_t>* out);
// The same bytes through `sink`, in order, never all in memory at once (the weights go from the
// checkpoint's mapping to the sink tensor by tensor).
Status WriteHfDecoderGguf(const std::string& folder, const gguf::Builder::Sink& sink);

// The byte-level BPE tokenizer of `folder` (tokenizer.json and, when present,
// tokenizer_config.json and chat_template.jinja) as the tokenizer.ggml.* keys
// convert_hf_to_gguf.py writes for `vocab_size` token ids; config.json's special token ids
// (`config`'s bos/eos/pad_token_id) fill in what tokenizer_config.json does not name.
Status AddHfBpeTokenizer(const std::string& folder, uint32_t vocab_size,
                         const std::string& config_path, gguf::Builder* out);

// The llama.cpp pre-tokenizer name ("gpt2", "smollm", "llama-bpe", "qwen2", "gpt-4o") of
// tokenizer.json's byte-level pre_tokenizer, identified by its expression; anything else is an
// error naming it.
Status HfBpePreTokenizerName(const hf::JsonNode& root, std::string* out);
// model.merges as "left right" strings in rank order (a [left, right] pair joined as gguf-py
// joins it).
Status ReadHfBpeMerges(const hf::JsonNode& model, std::vector<std::string>* out);

// The ids generation_config.json's eos_token_id names (a number or a list), when the folder has
// one: Llama 3.1 Instruct stops at <|end_of_text|>, <|eom_id|> and <|eot_id|>. Ids outside
// `vocab_size` are an error naming the file and the id.
Status ReadGenerationStopIds(const std::string& folder, size_t vocab_size,
                             std::vector<int32_t>* out);

// The SentencePiece tokenizer of `folder` (tokenizer.model, added_tokens.json,
// tokenizer_config.json's added_tokens_decoder) as _set_vocab_sentencepiece writes it
// (tokenizer.ggml.model "llama"), for `vocab_size` ids, with the special tokens as
// AddHfSpecialTokens reads them. Only BPE models: a Unigram model (T5, XLM-R) is refused.
// How the folder's added tokens are typed: kGeneric as _create_vocab_sentencepiece does
// (control when special or looking special, else user-defined with U+2581 as spaces); kPhi3 as
// Phi3MiniModel.set_vocab does (control when special, else user-defined, unchanged, and
// tokenizer.json's added tokens too).
enum class SentencePieceAddedTokens { kGeneric, kPhi3 };
Status AddHfSentencePieceTokenizer(const std::string& folder, uint32_t vocab_size,
                                   const std::string& config_path, SentencePieceAddedTokens added,
                                   gguf::Builder* out);

// convert_hf_to_gguf.py's does_token_look_special: an added token it makes a control token even
// when the folder does not mark it special (<|...|>, <pad>, <unused...>, ...).
bool LooksLikeSpecialToken(const std::string& token);
// A user-defined token as llama.cpp stores it: SentencePiece's U+2581 spelt as spaces.
std::string SpacesForU2581(std::string token);

// The special tokens as gguf-py's SpecialVocab writes them (ids, add_bos/add_eos, the chat
// template); `tokenizer_json` is the folder's parsed tokenizer.json, or null when it has none.
Status AddHfSpecialTokens(const std::string& folder, const hf::JsonNode* tokenizer_json,
                          uint32_t vocab_size, const std::string& config_path, gguf::Builder* out);

}  // namespace kestrel
