// The CTranslate2 model.bin reader on files written here byte by byte (so the tests run under
// qemu on every target): a good file reads back exactly, aliases resolve, and every damaged one
// (each field truncated, wrong counts, bad strings, duplicates, bad aliases, trailing bytes)
// fails with a message naming the problem, never a crash. The real Whisper-tiny file is read in
// model_whisper_ct2_test.cc.
#include "converters/ct2/ct2_file.h"
#include "converters/ct2/whisper_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace kestrel::ct2 {
namespace {

// Builds a model.bin in the layout ct2_file.h describes.
class Writer {
 public:
  explicit Writer(uint32_t version = 6, const std::string& spec = "WhisperSpec",
                  uint32_t revision = 3) {
    U32(version);
    String(spec);
    U32(revision);
  }
  Writer& U8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  Writer& U16(uint16_t v) { return U8(v & 0xFF).U8(static_cast<uint8_t>(v >> 8)); }
  Writer& U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Writer& String(const std::string& s) {
    U16(static_cast<uint16_t>(s.size() + 1));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return U8(0);
  }
  Writer& Raw(const std::vector<uint8_t>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  // One variable: name, shape, dtype id, the byte count and bytes given.
  Writer& Variable(const std::string& name, const std::vector<uint32_t>& shape, uint8_t dtype,
                   const std::vector<uint8_t>& data) {
    String(name);
    U8(static_cast<uint8_t>(shape.size()));
    for (uint32_t d : shape) U32(d);
    U8(dtype);
    U32(static_cast<uint32_t>(data.size()));
    return Raw(data);
  }
  std::vector<uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

std::vector<uint8_t> F32Bytes(const std::vector<float>& values) {
  std::vector<uint8_t> b(values.size() * 4);
  std::memcpy(b.data(), values.data(), b.size());  // the tests run little-endian
  return b;
}

// A small valid file: a float32 matrix, a float16 vector, an int8 scalar and an alias.
std::vector<uint8_t> GoodFile() {
  return Writer()
      .U32(3)
      .Variable("decoder/embeddings/weight", {2, 3}, 0, F32Bytes({1, -2, 3.5f, 0, 1e-3f, -7}))
      .Variable("encoder/conv1/bias", {2}, 4, {0x00, 0x3C, 0x00, 0xC0})  // 1.0, -2.0
      .Variable("decoder/activation", {}, 1, {0xFE})                     // -2
      .U32(1)
      .String("decoder/projection/weight")
      .String("decoder/embeddings/weight")
      .bytes();
}

// Opens a heap copy of exactly `bytes` so AddressSanitizer catches any read past the end.
Status OpenCopy(const std::vector<uint8_t>& bytes, std::unique_ptr<File>* out,
                std::vector<uint8_t>* storage) {
  *storage = bytes;
  storage->shrink_to_fit();
  return File::OpenFromMemory(storage->data(), storage->size(), "model.bin", out);
}

void ExpectRejected(const std::vector<uint8_t>& bytes, const std::vector<std::string>& words) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(bytes, &file, &storage);
  ASSERT_FALSE(s.ok()) << "expected an error with '" << words[0] << "'";
  for (const std::string& w : words) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << "message lacks '" << w << "': " << s.message();
  }
}

TEST(Ct2File, ReadsVariablesScalarsAndAliases) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(GoodFile(), &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->binary_version(), 6u);
  EXPECT_EQ(file->spec(), "WhisperSpec");
  EXPECT_EQ(file->spec_revision(), 3u);
  ASSERT_EQ(file->variables().size(), 3u);

  const Variable* embed = file->Find("decoder/embeddings/weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(embed->n_elements, 6u);
  std::vector<float> values;
  ASSERT_TRUE(file->ReadF32(*embed, &values).ok());
  EXPECT_EQ(values, (std::vector<float>{1, -2, 3.5f, 0, 1e-3f, -7}));
  EXPECT_EQ(file->Find("decoder/projection/weight"), embed);  // the alias shares it
  EXPECT_EQ(file->Find("decoder/nothing"), nullptr);

  ASSERT_TRUE(file->ReadF32(*file->Find("encoder/conv1/bias"), &values).ok());
  EXPECT_EQ(values, (std::vector<float>{1.0f, -2.0f}));

  int64_t activation = 0;
  const Variable* scalar = file->Find("decoder/activation");
  ASSERT_TRUE(file->ReadScalarInt(*scalar, &activation).ok());
  EXPECT_EQ(activation, -2);
  const Status as_float = file->ReadF32(*scalar, &values);
  ASSERT_FALSE(as_float.ok());
  EXPECT_NE(as_float.message().find("cannot read int8"), std::string::npos) << as_float.message();
  const Status not_scalar = file->ReadScalarInt(*embed, &activation);
  ASSERT_FALSE(not_scalar.ok());
  EXPECT_NE(not_scalar.message().find("shape [2, 3] (expected a scalar)"), std::string::npos)
      << not_scalar.message();
  const Variable stranger = *embed;  // same fields, not the file's own
  EXPECT_FALSE(file->ReadF32(stranger, &values).ok());
}

TEST(Ct2File, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> good = GoodFile();
  for (size_t n = 0; n < good.size(); ++n) {
    SCOPED_TRACE("first " + std::to_string(n) + " bytes");
    std::unique_ptr<File> file;
    std::vector<uint8_t> storage;
    const Status s =
        OpenCopy(std::vector<uint8_t>(good.begin(), good.begin() + n), &file, &storage);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("model.bin"), std::string::npos) << s.message();
  }
}

TEST(Ct2File, RejectsBadHeaders) {
  ExpectRejected(Writer(3).U32(0).U32(0).bytes(), {"binary version 3", "expected 4 to 6"});
  ExpectRejected(Writer(7).U32(0).U32(0).bytes(), {"binary version 7"});
  ExpectRejected(Writer(6, "").U32(0).U32(0).bytes(), {"empty model specification"});
  ExpectRejected(Writer(6, "x").bytes(), {"variable count at byte 12", "needs 4 bytes"});
  // A string whose length leaves out the NUL, one with a NUL inside, one of length 0.
  const std::vector<uint8_t> no_nul = {6, 0, 0, 0, 2, 0, 'A', 'B', 3, 0,
                                       0, 0, 0, 0, 0, 0, 0,   0,   0, 0};
  ExpectRejected(no_nul, {"model specification", "does not end with a NUL"});
  const std::vector<uint8_t> inner_nul = {6, 0, 0, 0, 3, 0, 'A', 0, 0, 3, 0,
                                          0, 0, 0, 0, 0, 0, 0,   0, 0, 0};
  ExpectRejected(inner_nul, {"NUL byte at 1 of 3"});
  const std::vector<uint8_t> zero_length = {6, 0, 0, 0, 0, 0};
  ExpectRejected(zero_length, {"length 0"});
}

TEST(Ct2File, RejectsBadVariables) {
  ExpectRejected(Writer().U32(1000000).bytes(), {"1000000 variables cannot fit"});
  ExpectRejected(Writer().U32(1).Variable("w", {2}, 0, F32Bytes({1})).U32(0).bytes(),
                 {"variable 0 of 1 'w'", "4 bytes (expected 8 for shape [2] of float32)"});
  ExpectRejected(Writer().U32(1).Variable("w", {2}, 9, F32Bytes({1, 2})).U32(0).bytes(),
                 {"dtype id 9"});
  ExpectRejected(
      Writer().U32(1).Variable("w", {1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, F32Bytes({1})).U32(0).bytes(),
      {"rank 9 (expected at most 8)"});
  // Dimensions whose product overflows 64 bits must not wrap to a small byte count.
  ExpectRejected(Writer()
                     .U32(1)
                     .Variable("w", {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, 1, {1, 2, 3})
                     .U32(0)
                     .bytes(),
                 {"has 2^40 elements or more"});
  ExpectRejected(Writer().U32(1).Variable("", {}, 1, {0}).U32(0).bytes(), {"empty name"});
  ExpectRejected(Writer()
                     .U32(2)
                     .Variable("w", {1}, 0, F32Bytes({1}))
                     .Variable("w", {1}, 0, F32Bytes({2}))
                     .U32(0)
                     .bytes(),
                 {"variable 1 of 2 'w'", "duplicate name"});
  // A byte count that runs past the end of the file.
  ExpectRejected(Writer().U32(1).String("w").U8(1).U32(100).U8(1).U32(100).U32(0).bytes(),
                 {"data at byte", "needs 100 bytes"});
  // Empty tensors are fine.
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s =
      OpenCopy(Writer().U32(1).Variable("w", {0, 5}, 0, {}).U32(0).bytes(), &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->Find("w")->n_elements, 0u);
}

TEST(Ct2File, RejectsBadAliasesAndTrailingBytes) {
  const auto one = [] { return Writer().U32(1).Variable("w", {1}, 0, F32Bytes({1})); };
  ExpectRejected(one().U32(1).String("a").String("missing").bytes(),
                 {"alias 0 of 1 'a'", "names 'missing', which is not a variable"});
  ExpectRejected(one().U32(1).String("w").String("w").bytes(),
                 {"a variable already has this name"});
  ExpectRejected(one().U32(2).String("a").String("w").String("a").String("w").bytes(),
                 {"alias 1 of 2 'a'", "duplicate alias"});
  ExpectRejected(one().U32(500).bytes(), {"500 aliases cannot fit"});
  ExpectRejected(one().U32(0).U8(7).bytes(), {"1 bytes after the aliases"});
}

// The fuzz seeds (fuzz/make_seeds.py) must stay files the reader accepts, or fuzzing would start
// from inputs refused at the first check; the whole tiny Whisper among them must also convert
// with the tokenizer files the harness uses (fuzz/ct2_tokenizer).
TEST(Ct2File, FuzzSeedsOpen) {
  const std::filesystem::path seeds =
      std::filesystem::path(KESTREL_SOURCE_DIR) / "fuzz" / "corpus" / "ct2_model";
  size_t opened = 0;
  for (const auto& entry : std::filesystem::directory_iterator(seeds)) {
    std::unique_ptr<File> file;
    const Status s = File::Open(entry.path().string(), &file);
    EXPECT_TRUE(s.ok()) << s.message();
    if (s.ok()) {
      EXPECT_EQ(file->spec(), "WhisperSpec");
      EXPECT_NE(file->Find("decoder/projection/weight"), nullptr);
      ++opened;
    }
  }
  EXPECT_EQ(opened, 9u);
  std::unique_ptr<File> tiny;
  ASSERT_TRUE(File::Open((seeds / "whisper-tiny.bin").string(), &tiny).ok());
  KesModel model;
  const Status s = ConvertWhisper(std::string(KESTREL_SOURCE_DIR) + "/fuzz/ct2_tokenizer", *tiny,
                                  ConvertOptions(), &model);
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace kestrel::ct2
