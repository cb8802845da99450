#include "converters/hf/sentencepiece_model.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace kestrel {
namespace {

// Field numbers of sentencepiece_model.proto.
constexpr uint32_t kModelPieces = 1, kModelTrainerSpec = 2;
constexpr uint32_t kPiecePiece = 1, kPieceScore = 2, kPieceType = 3;
constexpr uint32_t kTrainerModelType = 3;
// Wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// A message's bytes being walked field by field.
class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end, const uint8_t* file, const std::string& name)
      : p_(begin), end_(end), file_(file), name_(&name) {}

  bool done() const { return p_ == end_; }

  Status Error(const std::string& what) const {
    return Status::Error("'" + *name_ + "': byte " + std::to_string(p_ - file_) + ": " + what +
                         " (expected a SentencePiece tokenizer.model)");
  }

  Status Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Error("a number runs past the end of its message");
      const uint8_t b = *p_++;
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return OkStatus();
      }
    }
    return Error("a number longer than 10 bytes");
  }

  // The next field's number and wire type.
  Status Tag(uint32_t* field, uint32_t* wire) {
    uint64_t tag = 0;
    KES_RETURN_IF_ERROR(Varint(&tag));
    *field = static_cast<uint32_t>(tag >> 3);
    *wire = static_cast<uint32_t>(tag & 7);
    if (*field == 0) return Error("field number 0");
    return OkStatus();
  }

  // A length-delimited field's bytes, as a reader of their own.
  Status Sub(Reader* out) {
    uint64_t n = 0;
    KES_RETURN_IF_ERROR(Varint(&n));
    if (n > static_cast<uint64_t>(end_ - p_)) {
      return Error("a field of " + std::to_string(n) + " bytes runs past the end of its message");
    }
    *out = Reader(p_, p_ + n, file_, *name_);
    p_ += n;
    return OkStatus();
  }

  Status Fixed32(uint32_t* out) {
    if (end_ - p_ < 4) return Error("a 4-byte field runs past the end of its message");
    *out = uint32_t{p_[0]} | uint32_t{p_[1]} << 8 | uint32_t{p_[2]} << 16 | uint32_t{p_[3]} << 24;
    p_ += 4;
    return OkStatus();
  }

  Status Skip(uint32_t wire) {
    uint64_t ignored = 0;
    uint32_t ignored32 = 0;
    Reader sub = *this;
    switch (wire) {
      case kVarint: return Varint(&ignored);
      case kFixed64: KES_RETURN_IF_ERROR(Fixed32(&ignored32)); return Fixed32(&ignored32);
      case kLengthDelimited: return Sub(&sub);
      case kFixed32: return Fixed32(&ignored32);
      default: return Error("wire type " + std::to_string(wire) + " (groups are not used)");
    }
  }

  std::string Text() const { return std::string(reinterpret_cast<const char*>(p_), end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* file_;
  const std::string* name_;
};

Status ReadPiece(Reader r, SentencePieceModel::Piece* out) {
  bool has_piece = false;
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    KES_RETURN_IF_ERROR(r.Tag(&field, &wire));
    if (field == kPiecePiece && wire == kLengthDelimited) {
      Reader text = r;
      KES_RETURN_IF_ERROR(r.Sub(&text));
      out->piece = text.Text();
      has_piece = true;
    } else if (field == kPieceScore && wire == kFixed32) {
      uint32_t bits = 0;
      KES_RETURN_IF_ERROR(r.Fixed32(&bits));
      std::memcpy(&out->score, &bits, 4);
    } else if (field == kPieceType && wire == kVarint) {
      uint64_t type = 0;
      KES_RETURN_IF_ERROR(r.Varint(&type));
      if (type < SentencePieceModel::kNormal || type > SentencePieceModel::kByte) {
        return r.Error("piece type " + std::to_string(type) + " (expected 1 to 6)");
      }
      out->type = static_cast<int32_t>(type);
    } else {
      KES_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  if (!has_piece) return r.Error("a piece without its text");
  return OkStatus();
}

Status ReadTrainerSpec(Reader r, SentencePieceModel* out) {
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    KES_RETURN_IF_ERROR(r.Tag(&field, &wire));
    if (field == kTrainerModelType && wire == kVarint) {
      uint64_t type = 0;
      KES_RETURN_IF_ERROR(r.Varint(&type));
      out->model_type = static_cast<int32_t>(type > 100 ? 0 : type);
    } else {
      KES_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  return OkStatus();
}

}  // namespace

Status ParseSentencePieceModel(const uint8_t* data, size_t size, const std::string& name,
                               SentencePieceModel* out) {
  *out = SentencePieceModel();
  Reader r(data, data + size, data, name);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    KES_RETURN_IF_ERROR(r.Tag(&field, &wire));
    Reader sub = r;
    if (field == kModelPieces && wire == kLengthDelimited) {
      KES_RETURN_IF_ERROR(r.Sub(&sub));
      out->pieces.emplace_back();
      KES_RETURN_IF_ERROR(ReadPiece(sub, &out->pieces.back()));
    } else if (field == kModelTrainerSpec && wire == kLengthDelimited) {
      KES_RETURN_IF_ERROR(r.Sub(&sub));
      KES_RETURN_IF_ERROR(ReadTrainerSpec(sub, out));
    } else {
      KES_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  KES_CHECK_OR_RETURN(!out->pieces.empty(), "'" + name +
                                                "': no pieces (expected a SentencePiece "
                                                "tokenizer.model)");
  return OkStatus();
}

Status ReadSentencePieceModel(const std::string& path, SentencePieceModel* out) {
  std::ifstream in(path, std::ios::binary);
  KES_CHECK_OR_RETURN(in.good(), "'" + path + "': cannot be read");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  return ParseSentencePieceModel(bytes.data(), bytes.size(), path, out);
}

}  // namespace kestrel
