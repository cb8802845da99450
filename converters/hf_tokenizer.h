// The tokenizer of a Hugging Face checkpoint folder, for the .kes Tokenizer table: WordPiece
// (BERT and its sentence-embedding descendants such as all-MiniLM-L6-v2) or Unigram
// (XLM-RoBERTa: bge-m3, multilingual-e5, bge-reranker).
#pragma once

#include <string>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

// Fills *out (kind WordPiece or Unigram) from `folder`:
//  - tokenizer.json of model type "Unigram": see converters/hf_tokenizer_unigram.cc for the
//    shapes read (SentencePiece's charsmap normalizer, Metaspace, the [piece, score] vocabulary);
//    post_processor, added_tokens and padding as below;
//  - tokenizer.json of model type "WordPiece": model (vocab, unk_token,
//    continuing_subword_prefix, max_input_chars_per_word), normalizer (BertNormalizer),
//    pre_tokenizer (BertPreTokenizer), post_processor (TemplateProcessing "[CLS] $A [SEP]",
//    BertProcessing, RobertaProcessing or null: bos/eos and add_bos/add_eos), added_tokens
//    (special ones become control tokens, the unknown token type 2, others user-defined; lstrip
//    ones take the whitespace before them), padding's pad token.
//    Truncation and padding lengths are the caller's business and are not read.
//  - otherwise vocab.txt (one piece per line, id = line number), with tokenizer_config.json
//    (do_lower_case, strip_accents, tokenize_chinese_chars) and special_tokens_map.json
//    (unk/cls/sep/pad/mask tokens) when present, BertTokenizer's defaults when not.
// Anything missing, malformed or unsupported is an error naming the file and field.
Status ReadHfTokenizer(const std::string& folder, fb::TokenizerT* out);

}  // namespace kestrel
