// What a sentence-transformers folder says about turning token states into one vector per text:
// modules.json lists the modules in order (Transformer, Pooling, optionally Normalize), the
// Pooling module's config.json the pooling mode, sentence_bert_config.json the longest input.
#pragma once

#include <cstdint>
#include <string>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

struct SentenceEmbeddingConfig {
  bool found = false;                         // modules.json exists; otherwise the defaults below
  fb::PoolMode pooling = fb::PoolMode::Mean;  // sentence-transformers' default for a plain model
  bool normalize = false;
  uint32_t max_seq_length = 0;  // 0: not given
};

// Reads the files when modules.json exists; a folder without it gets the defaults. Unsupported
// modules or pooling modes are errors naming them.
Status ReadSentenceEmbeddingConfig(const std::string& folder, SentenceEmbeddingConfig* out);

}  // namespace kestrel
