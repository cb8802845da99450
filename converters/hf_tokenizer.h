// The WordPiece tokenizer of a Hugging Face checkpoint folder (BERT and its sentence-embedding
// descendants such as all-MiniLM-L6-v2), for the .kes Tokenizer table.
#pragma once

#include <string>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

// Fills *out (kind WordPiece) from `folder`:
//  - tokenizer.json when present: model (type "WordPiece": vocab, unk_token,
//    continuing_subword_prefix, max_input_chars_per_word), normalizer (BertNormalizer),
//    pre_tokenizer (BertPreTokenizer), post_processor (TemplateProcessing "[CLS] $A [SEP]",
//    BertProcessing or null: bos/eos and add_bos/add_eos), added_tokens (special ones become
//    control tokens, the unknown token type 2, others user-defined), padding's pad token.
//    Truncation and padding lengths are the caller's business and are not read.
//  - otherwise vocab.txt (one piece per line, id = line number), with tokenizer_config.json
//    (do_lower_case, strip_accents, tokenize_chinese_chars) and special_tokens_map.json
//    (unk/cls/sep/pad/mask tokens) when present, BertTokenizer's defaults when not.
// Anything missing, malformed or unsupported is an error naming the file and field.
Status ReadHfTokenizer(const std::string& folder, fb::TokenizerT* out);

}  // namespace kestrel
