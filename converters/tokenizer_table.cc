#include "converters/tokenizer_table.h"

#include "runtime/model_tokenizer.h"

namespace kestrel {

Status TokenizerFromTable(const fb::TokenizerT& table, Tokenizer* out) {
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Tokenizer::Pack(builder, &table));
  flatbuffers::Verifier verifier(builder.GetBufferPointer(), builder.GetSize());
  KES_CHECK_OR_RETURN(verifier.VerifyBuffer<fb::Tokenizer>(nullptr),
                      "the packed tokenizer failed FlatBuffer verification");
  return InitTokenizer(flatbuffers::GetRoot<fb::Tokenizer>(builder.GetBufferPointer()),
                       table.pieces.size(), out);
}

}  // namespace kestrel
