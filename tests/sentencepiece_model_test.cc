// The tokenizer.model reader (converters/hf/sentencepiece_model.h) on protobuf bytes built here:
// pieces with scores and types, the trainer's model type, fields it does not know skipped, and
// malformed bytes refused with the offset where they go wrong.
#include "converters/hf/sentencepiece_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kestrel {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Varint(uint64_t v) {
  Bytes out;
  do {
    out.push_back(static_cast<uint8_t>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
  return out;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes Tag(uint32_t field, uint32_t wire) { return Varint(field << 3 | wire); }
Bytes Length(uint32_t field, const Bytes& payload) {
  return Cat({Tag(field, 2), Varint(payload.size()), payload});
}
Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes Float(float f) {
  Bytes out(4);
  std::memcpy(out.data(), &f, 4);
  return out;
}

Bytes Piece(const std::string& text, float score, uint32_t type) {
  return Length(1, Cat({Length(1, Text(text)), Tag(2, 5), Float(score), Tag(3, 0), Varint(type)}));
}

Status Parse(const Bytes& bytes, SentencePieceModel* out) {
  return ParseSentencePieceModel(bytes.data(), bytes.size(), "tokenizer.model", out);
}

TEST(SentencePieceModel, ReadsPiecesAndTheTrainersModelType) {
  // A piece with an unknown string field (4), an unknown fixed64 field of the model (9) and an
  // unknown varint of the trainer spec (1): skipped.
  const Bytes unknown_piece_field = Length(1, Cat({Length(1, Text("\xe2\x96\x81the")), Tag(2, 5),
                                                   Float(-3.5f), Length(4, Text("ignored"))}));
  const Bytes model =
      Cat({Piece("<unk>", 0, 2), Piece("<s>", 0, 3), unknown_piece_field, Tag(9, 1), Bytes(8, 7),
           Length(2, Cat({Tag(1, 0), Varint(300), Tag(3, 0), Varint(2)})), Piece("<0x0A>", 0, 6)});
  SentencePieceModel m;
  const Status s = Parse(model, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.pieces.size(), 4u);
  EXPECT_EQ(m.pieces[0].piece, "<unk>");
  EXPECT_EQ(m.pieces[0].type, SentencePieceModel::kUnknown);
  EXPECT_EQ(m.pieces[1].type, SentencePieceModel::kControl);
  EXPECT_EQ(m.pieces[2].piece, "\xe2\x96\x81the");
  EXPECT_EQ(m.pieces[2].score, -3.5f);
  EXPECT_EQ(m.pieces[2].type, SentencePieceModel::kNormal);  // protobuf's default
  EXPECT_EQ(m.pieces[3].type, SentencePieceModel::kByte);
  EXPECT_EQ(m.model_type, SentencePieceModel::kBpe);
}

TEST(SentencePieceModel, WithoutATrainerSpecIsUnigram) {
  SentencePieceModel m;
  ASSERT_TRUE(Parse(Piece("a", 0, 1), &m).ok());
  EXPECT_EQ(m.model_type, SentencePieceModel::kUnigram);
}

TEST(SentencePieceModel, RefusesMalformedBytes) {
  struct Case {
    const char* what;
    Bytes bytes;
    const char* message;
  };
  const Bytes piece = Piece("abc", 1, 1);
  const std::vector<Case> cases = {
      {"empty", {}, "no pieces"},
      {"truncated piece", Bytes(piece.begin(), piece.end() - 3), "runs past the end"},
      {"a group", Cat({piece, Tag(7, 3)}), "wire type 3"},
      {"an endless number", Cat({piece, Tag(7, 0), Bytes(11, 0xff)}), "longer than 10 bytes"},
      {"a piece type of 9", Piece("abc", 1, 9), "piece type 9 (expected 1 to 6)"},
      {"a piece without text", Length(1, Cat({Tag(2, 5), Float(1)})), "without its text"},
      {"field 0", Cat({piece, Tag(0, 0), Varint(1)}), "field number 0"},
      {"a short float", Length(1, Cat({Length(1, Text("a")), Tag(2, 5), Bytes(2, 0)})),
       "a 4-byte field runs past"},
  };
  for (const Case& c : cases) {
    SentencePieceModel m;
    const Status s = Parse(c.bytes, &m);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.message();
    EXPECT_NE(s.message().find("'tokenizer.model'"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace kestrel
