// The tokenizer of a CTranslate2 Whisper folder (faster-whisper's layout), for the .kes
// Tokenizer table: GPT-2's byte-level BPE with Whisper's special tokens.
#pragma once

#include <string>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel::ct2 {

// Fills *out (kind ByteLevelBpe, GPT-2's pre-tokenizer) from `folder`:
//  - vocabulary.txt: one piece per line, id = line number, the whole vocabulary including
//    Whisper's special and timestamp tokens ("<|0.00|>" ...), which become control tokens;
//  - tokenizer.json (Hugging Face `tokenizers`, what faster-whisper encodes and decodes with):
//    model (type "BPE", byte-level, no unknown token, no dropout, no affixes) whose vocab must
//    name the same piece as vocabulary.txt for every id, its merges (as "a b" strings or
//    [a, b] pairs), pre_tokenizer ByteLevel (GPT-2's expression, no prefix space), decoder
//    ByteLevel, and added_tokens, which must match vocabulary.txt; special ones are control
//    tokens.
// `vocab_rows` is the model's vocabulary (its embedding rows): vocabulary.txt must have exactly
// that many lines. A Hugging Face Whisper folder has no vocabulary.txt: then tokenizer.json's
// vocab and added_tokens must name a piece for every id. End of text is "<|endoftext|>"; nothing is
// added around an encoded text. Anything missing, malformed or unsupported is an error naming the
// file and field.
Status ReadWhisperTokenizer(const std::string& folder, size_t vocab_rows, fb::TokenizerT* out);

}  // namespace kestrel::ct2
