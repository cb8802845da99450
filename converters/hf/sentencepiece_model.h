// SentencePiece's tokenizer.model (a ModelProto in protobuf's wire format), read without
// protobuf: the pieces with their scores and types, and the trainer's model type. The file is
// untrusted input: every varint, length and field is bounds-checked, and anything malformed is an
// error naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kestrel {

struct SentencePieceModel {
  // SentencePiece's piece types; GGUF's token types number them the same way.
  enum Type : int32_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
  };
  // TrainerSpec.model_type.
  enum ModelType : int32_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

  struct Piece {
    std::string piece;
    float score = 0;
    int32_t type = kNormal;
  };
  std::vector<Piece> pieces;
  int32_t model_type = kUnigram;  // protobuf's default when the trainer spec does not say
};

Status ReadSentencePieceModel(const std::string& path, SentencePieceModel* out);
// The same from bytes already in memory; `name` is what errors call them.
Status ParseSentencePieceModel(const uint8_t* data, size_t size, const std::string& name,
                               SentencePieceModel* out);

}  // namespace kestrel
