// The tokenizer of a GGUF file, for the .kes Tokenizer table.
#pragma once

#include "converters/gguf/gguf_file.h"
#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

// Reads tokenizer.ggml.*: "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE with merges and
// a supported tokenizer.ggml.pre); special ids, add_bos/eos/space-prefix flags (llama.cpp's
// defaults when absent) and the chat template. Counts, ids, token types and the pre-tokenizer are
// checked; an unsupported kind or pre-tokenizer is an error naming it and the supported ones.
Status ImportTokenizer(const gguf::File& file, fb::TokenizerT* out);

}  // namespace kestrel
