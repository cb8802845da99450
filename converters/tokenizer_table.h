// A converter's tokenizer table, checked the way the runtime will check it.
#pragma once

#include "kestrel_generated.h"
#include "runtime/status.h"
#include "runtime/tokenizer.h"

namespace kestrel {

// Packs `table` into a FlatBuffer and initializes *out from it with InitTokenizer, exactly as
// Model::Open does with a .kes file's table. The importers call it on what they read, so a
// vocabulary the runtime would refuse (a malformed byte piece, invalid UTF-8, a merge of unknown
// pieces) fails the conversion with the runtime's message instead of producing a file that
// cannot be loaded; tools that test a tokenizer without a model use it too.
Status TokenizerFromTable(const fb::TokenizerT& table, Tokenizer* out);

}  // namespace kestrel
