// The tokenizer of a .kes file: the Tokenizer table, checked and turned into a runtime Tokenizer.
// Model::Verify calls it at load; tools that build a Tokenizer table themselves (the Hugging
// Face tokenizer comparison) pack it and call it too, so they test exactly what a model loads.
#pragma once

#include <cstddef>

#include "kestrel_generated.h"
#include "runtime/status.h"
#include "runtime/tokenizer.h"

namespace kestrel {

// Checks `tok` (kind, one piece, score and type per token of `vocab`, the options its kind
// needs and only those) and initializes *out from it. Errors name what was expected and found.
Status InitTokenizer(const fb::Tokenizer* tok, size_t vocab, Tokenizer* out);

}  // namespace kestrel
