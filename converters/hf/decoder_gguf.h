// Hugging Face decoder folders (model_type llama, mistral, qwen2, qwen3 or smollm3) rewritten as
// the GGUF file llama.cpp's convert_hf_to_gguf.py makes of them: the same hyper-parameter keys,
// tensor names, Q/K row permutation (llama, mistral and smollm3), Llama 3 RoPE frequency factors
// and byte-level BPE tokenizer keys. The GGUF converters (converters/arch/) then read it like any
// GGUF file, so a folder and the GGUF made from it convert into the same plans, with every
// --weights choice the GGUF route has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/gguf/gguf_builder.h"
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

// The byte-level BPE tokenizer of `folder` (tokenizer.json and, when present,
// tokenizer_config.json and chat_template.jinja) as the tokenizer.ggml.* keys
// convert_hf_to_gguf.py writes for `vocab_size` token ids; config.json's special token ids
// (`config`'s bos/eos/pad_token_id) fill in what tokenizer_config.json does not name.
Status AddHfBpeTokenizer(const std::string& folder, uint32_t vocab_size,
                         const std::string& config_path, gguf::Builder* out);

}  // namespace kestrel
