// The GGUF reader on synthetic files (every metadata type, tensor infos, and many malformed
// files that must fail with a clear message and never crash) and on the real model.
#include "converters/gguf/gguf_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "converters/gguf/dequantize.h"
#include "converters/gguf/gguf_builder.h"
#include "converters/gguf_tokenizer.h"

namespace kestrel::gguf {
namespace {

constexpr uint64_t kHuge = uint64_t{1} << 63;

// Writes GGUF bytes field by field, little-endian, so tests can build valid and broken files.
class Writer {
 public:
  std::vector<uint8_t> bytes;

  Writer& U8(uint8_t v) { return Raw(&v, 1); }
  Writer& U16(uint16_t v) { return Le(v, 2); }
  Writer& U32(uint32_t v) { return Le(v, 4); }
  Writer& U64(uint64_t v) { return Le(v, 8); }
  Writer& F32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return U32(u);
  }
  Writer& F64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return U64(u);
  }
  Writer& Str(const std::string& s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  Writer& Type(ValueType t) { return U32(static_cast<uint32_t>(t)); }
  Writer& Header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    Raw("GGUF", 4);
    U32(version);
    U64(tensors);
    return U64(kvs);
  }
  // Key and value type; the caller writes the value.
  Writer& Key(const std::string& key, ValueType t) { return Str(key).Type(t); }
  Writer& ArrayHeader(ValueType element, uint64_t count) { return Type(element).U64(count); }
  Writer& Tensor(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type,
                 uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (const uint64_t d : ne) U64(d);
    return U32(static_cast<uint32_t>(type)).U64(offset);
  }
  Writer& PadTo(size_t alignment) {
    while (bytes.size() % alignment != 0) U8(0);
    return *this;
  }
  Writer& Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }

 private:
  Writer& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
};

// Opens a heap copy of exactly `bytes` so AddressSanitizer catches any read past the end.
Status OpenCopy(const std::vector<uint8_t>& bytes, std::unique_ptr<File>* out,
                std::vector<uint8_t>* storage) {
  *storage = bytes;
  storage->shrink_to_fit();
  return File::OpenFromMemory(storage->data(), storage->size(), out);
}

// Expects the file to be rejected with a message holding every one of `words`.
void ExpectRejected(const std::vector<uint8_t>& bytes, const std::vector<std::string>& words) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(bytes, &file, &storage);
  ASSERT_FALSE(s.ok()) << "a malformed file was accepted; expected an error with '" << words[0]
                       << "'";
  for (const std::string& w : words) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << "message lacks '" << w << "': " << s.message();
  }
}

void ExpectHas(const Status& s, const std::vector<std::string>& words) {
  ASSERT_FALSE(s.ok()) << "expected an error with '" << words[0] << "'";
  for (const std::string& w : words) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << "message lacks '" << w << "': " << s.message();
  }
}

// ---- Metadata ----

std::vector<uint8_t> EveryValueTypeFile(uint32_t version = 3) {
  Writer w;
  w.Header(0, 22, version);
  w.Key("u8", ValueType::U8).U8(200);
  w.Key("i8", ValueType::I8).U8(static_cast<uint8_t>(-5));
  w.Key("u16", ValueType::U16).U16(60000);
  w.Key("i16", ValueType::I16).U16(static_cast<uint16_t>(-300));
  w.Key("u32", ValueType::U32).U32(4000000000u);
  w.Key("i32", ValueType::I32).U32(static_cast<uint32_t>(-2000000000));
  w.Key("f32", ValueType::F32).F32(1.5f);
  w.Key("bool", ValueType::BOOL).U8(1);
  w.Key("string", ValueType::STRING).Str("hello \"gguf\"\n");
  w.Key("u64.big", ValueType::U64).U64(kHuge + 5);
  w.Key("u64", ValueType::U64).U64(12345);
  w.Key("i64", ValueType::I64).U64(static_cast<uint64_t>(-(int64_t{1} << 40)));
  w.Key("f64", ValueType::F64).F64(0.1);
  w.Key("arr.str", ValueType::ARRAY).ArrayHeader(ValueType::STRING, 3).Str("a").Str("bb").Str("");
  w.Key("arr.f32", ValueType::ARRAY).ArrayHeader(ValueType::F32, 2).F32(1.0f).F32(-2.5f);
  w.Key("arr.i32", ValueType::ARRAY)
      .ArrayHeader(ValueType::I32, 3)
      .U32(1)
      .U32(static_cast<uint32_t>(-2))
      .U32(3);
  w.Key("arr.u8", ValueType::ARRAY).ArrayHeader(ValueType::U8, 2).U8(7).U8(255);
  w.Key("arr.bool", ValueType::ARRAY).ArrayHeader(ValueType::BOOL, 2).U8(0).U8(1);
  w.Key("arr.f64", ValueType::ARRAY).ArrayHeader(ValueType::F64, 1).F64(-0.25);
  // An array of arrays, each inner array with its own element type.
  w.Key("arr.nested", ValueType::ARRAY).ArrayHeader(ValueType::ARRAY, 2);
  w.ArrayHeader(ValueType::I32, 2).U32(1).U32(2);
  w.ArrayHeader(ValueType::STRING, 1).Str("x");
  w.Key("arr.empty", ValueType::ARRAY).ArrayHeader(ValueType::U32, 0);
  w.Key("arr.u64.big", ValueType::ARRAY).ArrayHeader(ValueType::U64, 2).U64(1).U64(kHuge);
  return w.bytes;
}

TEST(GgufMetadata, EveryValueType) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(EveryValueTypeFile(), &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_TRUE(file->tensors().empty());

  // Every integer type, and bool, reads as an integer.
  const std::pair<const char*, int64_t> int_values[] = {
      {"u8", 200},         {"i8", -5},           {"u16", 60000}, {"i16", -300},
      {"u32", 4000000000}, {"i32", -2000000000}, {"u64", 12345}, {"i64", -(int64_t{1} << 40)},
      {"bool", 1}};
  int64_t i = 0;
  for (const auto& [key, value] : int_values) {
    ASSERT_TRUE(file->GetInt(key, &i).ok()) << key;
    EXPECT_EQ(i, value) << key;
  }
  ExpectHas(file->GetInt("u64.big", &i), {"u64.big", "2^63", "9223372036854775813"});

  double f = 0;
  ASSERT_TRUE(file->GetFloat("f32", &f).ok());
  EXPECT_EQ(f, 1.5);
  ASSERT_TRUE(file->GetFloat("f64", &f).ok());
  EXPECT_EQ(f, 0.1);
  ASSERT_TRUE(file->GetFloat("i32", &f).ok());
  EXPECT_EQ(f, -2000000000.0);
  ExpectHas(file->GetFloat("bool", &f), {"'bool'", "number", "found bool"});

  bool b = false;
  ASSERT_TRUE(file->GetBool("bool", &b).ok());
  EXPECT_TRUE(b);
  ExpectHas(file->GetBool("u8", &b), {"'u8'", "expected bool", "found u8"});

  std::string str;
  ASSERT_TRUE(file->GetString("string", &str).ok());
  EXPECT_EQ(str, "hello \"gguf\"\n");
  ExpectHas(file->GetString("u32", &str), {"'u32'", "expected string", "found u32"});
  ExpectHas(file->GetInt("string", &i), {"'string'", "integer", "found string"});
  ExpectHas(file->GetInt("absent.key", &i), {"'absent.key'", "not found"});

  std::vector<std::string> strings;
  ASSERT_TRUE(file->GetStringArray("arr.str", &strings).ok());
  EXPECT_EQ(strings, (std::vector<std::string>{"a", "bb", ""}));
  ExpectHas(file->GetStringArray("arr.f32", &strings), {"'arr.f32'", "array of string", "f32"});
  ExpectHas(file->GetStringArray("string", &strings), {"'string'", "expected an array", "string"});

  std::vector<float> floats;
  ASSERT_TRUE(file->GetFloatArray("arr.f32", &floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{1.0f, -2.5f}));
  ASSERT_TRUE(file->GetFloatArray("arr.i32", &floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{1.0f, -2.0f, 3.0f}));
  ASSERT_TRUE(file->GetFloatArray("arr.f64", &floats).ok());
  EXPECT_EQ(floats, (std::vector<float>{-0.25f}));
  ExpectHas(file->GetFloatArray("arr.str", &floats), {"'arr.str'", "numbers", "string"});

  std::vector<int64_t> ints;
  ASSERT_TRUE(file->GetIntArray("arr.i32", &ints).ok());
  EXPECT_EQ(ints, (std::vector<int64_t>{1, -2, 3}));
  ASSERT_TRUE(file->GetIntArray("arr.u8", &ints).ok());
  EXPECT_EQ(ints, (std::vector<int64_t>{7, 255}));
  ASSERT_TRUE(file->GetIntArray("arr.bool", &ints).ok());
  EXPECT_EQ(ints, (std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(file->GetIntArray("arr.empty", &ints).ok());
  EXPECT_TRUE(ints.empty());
  ExpectHas(file->GetIntArray("arr.f32", &ints), {"'arr.f32'", "integers", "f32"});
  ExpectHas(file->GetIntArray("arr.nested", &ints), {"'arr.nested'", "integers", "array"});
  ExpectHas(file->GetIntArray("arr.u64.big", &ints), {"arr.u64.big", "[1]", "2^63"});

  ValueType type;
  uint64_t count = 0;
  ASSERT_TRUE(file->GetArrayType("arr.nested", &type, &count).ok());
  EXPECT_EQ(type, ValueType::ARRAY);
  EXPECT_EQ(count, 2u);
  ASSERT_TRUE(file->GetType("f64", &type).ok());
  EXPECT_EQ(type, ValueType::F64);

  EXPECT_TRUE(file->Has("arr.empty"));
  EXPECT_FALSE(file->Has("arr"));
  const std::vector<std::string> keys = file->Keys();
  const std::vector<std::string> expected_keys = {
      "u8",      "i8",         "u16",       "i16",        "u32",    "i32",
      "f32",     "bool",       "string",    "u64.big",    "u64",    "i64",
      "f64",     "arr.str",    "arr.f32",   "arr.i32",    "arr.u8", "arr.bool",
      "arr.f64", "arr.nested", "arr.empty", "arr.u64.big"};
  EXPECT_EQ(keys, expected_keys);
}

TEST(GgufMetadata, ValueToString) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(OpenCopy(EveryValueTypeFile(), &file, &storage).ok());
  EXPECT_EQ(file->ValueToString("u8"), "200");
  EXPECT_EQ(file->ValueToString("i8"), "-5");
  EXPECT_EQ(file->ValueToString("u64.big"), "9223372036854775813");
  EXPECT_EQ(file->ValueToString("i64"), "-1099511627776");
  EXPECT_EQ(file->ValueToString("f32"), "1.5");
  EXPECT_EQ(file->ValueToString("f64"), "0.10000000000000001");
  EXPECT_EQ(file->ValueToString("bool"), "true");
  EXPECT_EQ(file->ValueToString("string"), "\"hello \\\"gguf\\\"\\n\"");
  EXPECT_EQ(file->ValueToString("arr.str"), "[\"a\", \"bb\", \"\"]");
  EXPECT_EQ(file->ValueToString("arr.nested"), "[[1, 2], [\"x\"]]");
  EXPECT_EQ(file->ValueToString("arr.i32", 2), "[1, -2, ...] (3 i32)");
  EXPECT_EQ(file->ValueToString("arr.nested", 1), "[[1, ...] (2 i32), ...] (2 array)");
  EXPECT_EQ(file->ValueToString("arr.i32", 0), "[...] (3 i32)");
  EXPECT_EQ(file->ValueToString("arr.empty"), "[]");
  EXPECT_EQ(file->ValueToString("missing"), "<missing>");
}

TEST(GgufMetadata, VersionTwoIsAccepted) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(EveryValueTypeFile(2), &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(file->Keys().size(), 22u);
}

// ---- Tensors ----

// Three tensors in a 64-byte aligned data section:
//   a: F32 [3, 2] at 0 (24 bytes), b: Q8_0 [64] at 64 (68 bytes), c: Q4_K [256, 2] at 192.
std::vector<uint8_t> TensorFile() {
  Writer w;
  w.Header(3, 2);
  w.Key("general.architecture", ValueType::STRING).Str("test");
  w.Key("general.alignment", ValueType::U32).U32(64);
  w.Tensor("a", {3, 2}, GgmlType::F32, 0);
  w.Tensor("b", {64}, GgmlType::Q8_0, 64);
  w.Tensor("c", {256, 2}, GgmlType::Q4_K, 192);
  w.PadTo(64);
  for (int k = 0; k < 6; ++k) w.F32(0.5f * static_cast<float>(k) - 1.0f);
  w.PadTo(64);
  w.U16(0x3c00);  // Q8_0 block 0: d = 1
  for (int k = 0; k < 32; ++k) w.U8(static_cast<uint8_t>(k - 16));
  w.U16(0x4000);  // block 1: d = 2
  for (int k = 0; k < 32; ++k) w.U8(static_cast<uint8_t>(k));
  w.PadTo(64);
  for (int k = 0; k < 2 * 144; ++k) w.U8(static_cast<uint8_t>(k * 7));
  return w.bytes;
}

TEST(GgufTensors, InfosDataAndAlignment) {
  const std::vector<uint8_t> bytes = TensorFile();
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(bytes, &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  EXPECT_EQ(file->size(), bytes.size());
  ASSERT_EQ(file->tensors().size(), 3u);

  const TensorInfo* a = file->FindTensor("a");
  const TensorInfo* b = file->FindTensor("b");
  const TensorInfo* c = file->FindTensor("c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(file->FindTensor("d"), nullptr);
  EXPECT_EQ(&file->tensors()[1], b);
  EXPECT_EQ(a->ne, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(a->type, GgmlType::F32);
  EXPECT_EQ(a->n_elements, 6u);
  EXPECT_EQ(a->n_bytes, 24u);
  EXPECT_EQ(b->n_bytes, 68u);
  EXPECT_EQ(c->n_elements, 512u);
  EXPECT_EQ(c->n_bytes, 288u);
  EXPECT_EQ(c->offset, 192u);
  EXPECT_EQ(a->data, storage.data() + file->data_offset());
  EXPECT_EQ(c->data, storage.data() + file->data_offset() + 192);
  EXPECT_EQ(c->data + c->n_bytes, storage.data() + storage.size());

  std::vector<float> values;
  ASSERT_TRUE(DequantizeTensor(*a, &values).ok());
  EXPECT_EQ(values, (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}));
  ASSERT_TRUE(DequantizeTensor(*b, &values).ok());
  ASSERT_EQ(values.size(), 64u);
  EXPECT_EQ(values[0], -16.0f);
  EXPECT_EQ(values[31], 15.0f);
  EXPECT_EQ(values[33], 2.0f);
  EXPECT_EQ(values[63], 62.0f);
}

TEST(GgufTensors, OpenFromPathMapsTheFile) {
  const std::vector<uint8_t> bytes = TensorFile();
  const std::string path =
      std::string(KESTREL_TEST_TMP) + "/gguf_file_test_" + std::to_string(::getpid()) + ".gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  std::unique_ptr<File> file;
  const Status s = File::Open(path, &file);
  std::remove(path.c_str());  // the mapping stays valid after unlinking
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(file->tensors().size(), 3u);
  std::vector<float> values;
  ASSERT_TRUE(DequantizeTensor(*file->FindTensor("a"), &values).ok());
  EXPECT_EQ(values[5], 1.5f);
}

TEST(GgufTensors, OpenReportsPathProblems) {
  std::unique_ptr<File> file;
  const std::string missing = std::string(KESTREL_TEST_TMP) + "/no_such_file.gguf";
  ExpectHas(File::Open(missing, &file), {missing, "cannot open"});
  ExpectHas(File::Open(KESTREL_TEST_TMP, &file), {"regular file"});
  const std::string empty =
      std::string(KESTREL_TEST_TMP) + "/gguf_file_test_empty_" + std::to_string(::getpid());
  { std::ofstream out(empty); }
  const Status s = File::Open(empty, &file);
  std::remove(empty.c_str());
  ExpectHas(s, {empty, "24 bytes", "found 0 bytes"});
}

// ---- Malformed files ----

TEST(GgufMalformed, EveryTruncationFailsCleanly) {
  for (const std::vector<uint8_t>& bytes : {TensorFile(), EveryValueTypeFile()}) {
    const bool has_tensors = bytes == TensorFile();
    for (size_t length = 0; length < bytes.size(); ++length) {
      std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(length));
      std::unique_ptr<File> file;
      std::vector<uint8_t> storage;
      const Status s = OpenCopy(prefix, &file, &storage);
      ASSERT_FALSE(s.ok()) << "a prefix of " << length << " of " << bytes.size()
                           << " bytes was accepted" << (has_tensors ? " (tensor file)" : "");
      EXPECT_FALSE(s.message().empty());
      const bool names_a_size = s.message().find("bytes") != std::string::npos;
      EXPECT_TRUE(names_a_size) << "prefix " << length << ": " << s.message();
    }
  }
}

TEST(GgufMalformed, RandomCorruptionNeverCrashes) {
  // Corrupt a few bytes at a time; whatever opens must be safe to read in full.
  const std::vector<uint8_t> original = TensorFile();
  std::mt19937_64 rng(1234);
  size_t opened = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::vector<uint8_t> bytes = original;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<uint8_t>(rng()); break;
        case 1: bytes[at] = 0xFF; break;
        default: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      }
    }
    std::unique_ptr<File> file;
    std::vector<uint8_t> storage;
    const Status s = OpenCopy(bytes, &file, &storage);
    if (!s.ok()) {
      EXPECT_FALSE(s.message().empty());
      continue;
    }
    ++opened;
    for (const std::string& key : file->Keys()) {
      (void)file->ValueToString(key, 4);
      int64_t i;
      std::string str;
      std::vector<std::string> strings;
      (void)file->GetInt(key, &i);
      (void)file->GetString(key, &str);
      (void)file->GetStringArray(key, &strings);
    }
    std::vector<float> values;
    for (const TensorInfo& t : file->tensors()) {
      ASSERT_GE(t.data, storage.data());
      ASSERT_LE(t.data + t.n_bytes, storage.data() + storage.size()) << t.name;
      if (CanDequantize(t.type) && t.n_elements <= (1u << 20)) {
        (void)DequantizeTensor(t, &values);
      }
    }
  }
  // Flips inside the data section keep the file valid: the loop must have read some files.
  EXPECT_GT(opened, 1000u);
}

TEST(GgufMalformed, HeaderProblems) {
  Writer magic;
  magic.Raw("GGUX", 4).U32(3).U64(0).U64(0);
  ExpectRejected(magic.bytes, {"magic", "GGUF", "47 47 55 58"});

  ExpectRejected(Writer().Header(0, 0, 1).bytes, {"version", "expected 2 or 3", "found 1"});
  ExpectRejected(Writer().Header(0, 0, 4).bytes, {"version", "expected 2 or 3", "found 4"});
  ExpectRejected(Writer().Header(0, 0, 0x03000000).bytes, {"version", "big-endian"});

  ExpectRejected(Writer().Header(kHuge, 0).bytes, {"tensor count", "9223372036854775808"});
  ExpectRejected(Writer().Header(0, kHuge).bytes, {"metadata count", "9223372036854775808"});
  ExpectRejected(Writer().Header(0, 1).bytes, {"metadata count", "found 1"});
  ExpectRejected({'G', 'G', 'U', 'F', 3, 0}, {"24 bytes", "found 6"});
}

TEST(GgufMalformed, AbsurdLengths) {
  Writer key;
  key.Header(0, 1).U64(kHuge).Raw("k", 1).Type(ValueType::U8).U8(0);
  ExpectRejected(key.bytes, {"metadata entry 0", "string length 9223372036854775808"});

  Writer str;
  str.Header(0, 1).Key("s", ValueType::STRING).U64(kHuge).Raw("abc", 3);
  ExpectRejected(str.bytes, {"'s'", "string length 9223372036854775808", "3 bytes left"});

  Writer u32s;
  u32s.Header(0, 1).Key("a", ValueType::ARRAY).ArrayHeader(ValueType::U32, kHuge).U32(1);
  ExpectRejected(u32s.bytes, {"'a'", "array of 9223372036854775808 u32"});

  Writer u64s;  // count * 8 wraps around to 8 in 64 bits
  u64s.Header(0, 1).Key("a", ValueType::ARRAY).ArrayHeader(ValueType::U64, (kHuge >> 2) + 1);
  u64s.U64(1);
  ExpectRejected(u64s.bytes, {"'a'", "u64 elements"});

  Writer strings;
  strings.Header(0, 1).Key("t", ValueType::ARRAY).ArrayHeader(ValueType::STRING, 2).Str("ok");
  strings.U64(kHuge);
  ExpectRejected(strings.bytes, {"'t'[1]", "string length 9223372036854775808"});

  Writer nested;
  nested.Header(0, 1).Key("n", ValueType::ARRAY).ArrayHeader(ValueType::ARRAY, 2);
  nested.ArrayHeader(ValueType::I8, 1).U8(1);
  nested.ArrayHeader(ValueType::I16, kHuge).U16(1);
  ExpectRejected(nested.bytes, {"'n'[1]", "array of 9223372036854775808 i16"});

  Writer deep;
  deep.Header(0, 1).Key("deep", ValueType::ARRAY);
  for (int level = 0; level < 40; ++level) deep.ArrayHeader(ValueType::ARRAY, 1);
  deep.ArrayHeader(ValueType::U8, 0);
  ExpectRejected(deep.bytes, {"'deep'", "nested deeper than 16"});

  Writer value_type;
  value_type.Header(0, 1).Str("v").U32(13).U32(0);
  ExpectRejected(value_type.bytes, {"'v'", "value type", "found 13"});

  Writer element_type;
  element_type.Header(0, 1).Key("e", ValueType::ARRAY).U32(99).U64(0);
  ExpectRejected(element_type.bytes, {"'e'", "element type", "found 99"});

  Writer duplicate;
  duplicate.Header(0, 2).Key("k", ValueType::U8).U8(1).Key("k", ValueType::U8).U8(2);
  ExpectRejected(duplicate.bytes, {"'k'", "duplicate key"});
}

// A file with one tensor whose info the caller writes, then `data_bytes` bytes of data.
std::vector<uint8_t> OneTensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset,
                               size_t data_bytes) {
  Writer w;
  w.Header(1, 0);
  w.Str("blk.0.attn_q.weight").U32(static_cast<uint32_t>(ne.size()));
  for (const uint64_t d : ne) w.U64(d);
  w.U32(type).U64(offset);
  w.PadTo(32);
  for (size_t k = 0; k < data_bytes; ++k) w.U8(0);
  return w.bytes;
}

TEST(GgufMalformed, TensorProblems) {
  const auto q8 = static_cast<uint32_t>(GgmlType::Q8_0);
  const auto f32 = static_cast<uint32_t>(GgmlType::F32);
  {
    // Valid: two Q8_0 blocks, 68 bytes.
    std::unique_ptr<File> file;
    std::vector<uint8_t> storage;
    const Status s = OpenCopy(OneTensor({64}, q8, 0, 68), &file, &storage);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  {
    // One byte short: header and info take 75 bytes, padded to 96; the data needs 96 + 68.
    const std::vector<uint8_t> bytes = OneTensor({64}, q8, 0, 67);
    ExpectRejected(bytes,
                   {"'blk.0.attn_q.weight'", "data ends at byte 164", "the file has 163 bytes"});
  }
  ExpectRejected(OneTensor({64}, q8, 32, 68), {"data ends at byte 196", "164 bytes"});
  ExpectRejected(OneTensor({64}, q8, ~uint64_t{31}, 68), {"beyond 2^64"});
  ExpectRejected(OneTensor({64}, q8, 4, 72), {"offset", "32-byte alignment", "found 4"});
  ExpectRejected(OneTensor({1, 1, 1, 1, 1}, f32, 0, 4), {"1 to 4 dimensions", "n_dims 5"});
  ExpectRejected(OneTensor({}, f32, 0, 4), {"1 to 4 dimensions", "n_dims 0"});
  // The types it knows, each with its id (the list comes from runtime/dtype_table.h).
  ExpectRejected(OneTensor({64}, 20, 0, 68),
                 {"unknown ggml type 20", "expected one of F32 0, F16 1,", "Q4_K 12", "BF16 30"});
  ExpectRejected(OneTensor({64}, 0xFFFFFFFF, 0, 68), {"unknown ggml type 4294967295"});
  ExpectRejected(OneTensor({33}, q8, 0, 68),
                 {"ne[0] = 33", "not a multiple of the Q8_0 block size 32"});
  ExpectRejected(OneTensor({uint64_t{1} << 32, uint64_t{1} << 32, uint64_t{1} << 32}, f32, 0, 4),
                 {"shape [4294967296, 4294967296, 4294967296]", "overflows"});
  ExpectRejected(OneTensor({kHuge}, f32, 0, 4), {"overflows"});
  // 2^62 F32 values fit the element count but need 2^64 bytes.
  ExpectRejected(OneTensor({uint64_t{1} << 62}, f32, 0, 4), {"overflows 64 bits"});
  // Within 64 bits but far larger than the file.
  ExpectRejected(OneTensor({uint64_t{1} << 40}, f32, 0, 4), {"data ends at byte", "bytes"});

  Writer duplicate;
  duplicate.Header(2, 0).Tensor("w", {32}, GgmlType::F32, 0).Tensor("w", {32}, GgmlType::F32, 128);
  duplicate.PadTo(32);
  for (int k = 0; k < 256; ++k) duplicate.U8(0);
  ExpectRejected(duplicate.bytes, {"'w'", "duplicate tensor name"});

  Writer huge_name;
  huge_name.Header(1, 0).U64(kHuge);
  for (int k = 0; k < 40; ++k) huge_name.U8(0);
  ExpectRejected(huge_name.bytes, {"tensor 0", "string length 9223372036854775808"});
}

TEST(GgufMalformed, AlignmentProblems) {
  const auto with_alignment = [](ValueType type, uint64_t value) {
    Writer w;
    w.Header(0, 1).Key("general.alignment", type);
    if (type == ValueType::STRING) {
      w.Str("32");
    } else {
      w.U32(static_cast<uint32_t>(value));
    }
    return w.bytes;
  };
  ExpectRejected(with_alignment(ValueType::U32, 48), {"general.alignment", "power of two", "48"});
  ExpectRejected(with_alignment(ValueType::U32, 0), {"general.alignment", "power of two", "0"});
  ExpectRejected(with_alignment(ValueType::STRING, 0),
                 {"general.alignment", "unsigned integer", "found string"});
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  const Status s = OpenCopy(with_alignment(ValueType::U32, 256), &file, &storage);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->alignment(), 256u);
}

// ---- The real model ----

TEST(GgufRealModel, Gemma3Metadata) {
  std::unique_ptr<File> file;
  const Status s = File::Open(KESTREL_MODEL_GGUF, &file);
  ASSERT_TRUE(s.ok()) << s.message()
                      << "\nThe model is missing or unreadable: run scripts/fetch-model.sh";
  EXPECT_EQ(file->version(), 3u);

  std::string arch;
  ASSERT_TRUE(file->GetString("general.architecture", &arch).ok());
  EXPECT_EQ(arch, "gemma3");
  int64_t block_count = 0, embedding = 0;
  ASSERT_TRUE(file->GetInt("gemma3.block_count", &block_count).ok());
  EXPECT_EQ(block_count, 18);
  ASSERT_TRUE(file->GetInt("gemma3.embedding_length", &embedding).ok());
  EXPECT_EQ(embedding, 640);
  double freq_base = 0;
  ASSERT_TRUE(file->GetFloat("gemma3.rope.freq_base", &freq_base).ok());
  EXPECT_EQ(freq_base, 1e6);

  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int64_t> token_types;
  ASSERT_TRUE(file->GetStringArray("tokenizer.ggml.tokens", &tokens).ok());
  ASSERT_TRUE(file->GetFloatArray("tokenizer.ggml.scores", &scores).ok());
  ASSERT_TRUE(file->GetIntArray("tokenizer.ggml.token_type", &token_types).ok());
  EXPECT_EQ(tokens.size(), 262144u);
  EXPECT_EQ(scores.size(), tokens.size());
  EXPECT_EQ(token_types.size(), tokens.size());
  EXPECT_NE(file->ValueToString("tokenizer.ggml.tokens").find("(262144 string)"),
            std::string::npos);

  ASSERT_EQ(file->tensors().size(), 236u);
  const TensorInfo* embd = file->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->ne, (std::vector<uint64_t>{640, 262144}));
  EXPECT_EQ(embd->type, GgmlType::Q8_0);
  EXPECT_EQ(embd->n_bytes, 640u / 32 * 34 * 262144);
  EXPECT_EQ(file->data_offset() % file->alignment(), 0u);
  for (const TensorInfo& t : file->tensors()) {
    EXPECT_LE(file->data_offset() + t.offset + t.n_bytes, file->size()) << t.name;
  }
  // Every layer has its attention query weight.
  for (int64_t layer = 0; layer < block_count; ++layer) {
    const std::string name = "blk." + std::to_string(layer) + ".attn_q.weight";
    EXPECT_NE(file->FindTensor(name), nullptr) << name;
  }
}

}  // namespace
// llama.cpp's fill-in-the-middle tokens: found by text where no key names them (the first of
// each kind in id order: <PRE> stays normal once <|fim_prefix|> is found) and made control
// tokens; padding, repo and file-separator tokens end a generation, found by key or by text.
TEST(GgufTokenizer, FillInTheMiddleTokensAsLlamaCpp) {
  const std::vector<std::string> pieces = {
      "<unk>",       "<s>",          "</s>",          "a",     "<|fim_prefix|>",
      "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<PRE>", "b"};
  for (const bool pad_by_key : {false, true}) {
    SCOPED_TRACE(pad_by_key ? "fim_pad by key" : "by text");
    Builder b;
    b.SetString("tokenizer.ggml.model", "llama");
    b.SetStringArray("tokenizer.ggml.tokens", pieces);
    b.SetFloat32Array("tokenizer.ggml.scores", std::vector<float>(pieces.size(), 0.0f));
    std::vector<int32_t> types(pieces.size(), 1);
    types[0] = 2, types[1] = 3, types[2] = 3;
    b.SetInt32Array("tokenizer.ggml.token_type", types);
    b.SetUint32("tokenizer.ggml.bos_token_id", 1);
    b.SetUint32("tokenizer.ggml.eos_token_id", 2);
    if (pad_by_key) b.SetUint32("tokenizer.ggml.fim_pad_token_id", 9);
    const std::vector<uint8_t> bytes = b.Build();
    std::unique_ptr<File> file;
    Status s = File::OpenFromMemory(bytes.data(), bytes.size(), &file);
    ASSERT_TRUE(s.ok()) << s.message();
    fb::TokenizerT table;
    s = ImportTokenizer(*file, &table);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(table.types[4], 3);                   // <|fim_prefix|>
    EXPECT_EQ(table.types[5], pad_by_key ? 1 : 3);  // <|fim_pad|>: found by text only
    EXPECT_EQ(table.types[6], 3);                   // <|file_sep|>
    EXPECT_EQ(table.types[7], 3);                   // <|repo_name|>
    EXPECT_EQ(table.types[8], 1);                   // <PRE>: a second prefix token
    EXPECT_EQ(table.types[9], 1);
    std::vector<int32_t> stops = table.stop_ids;
    std::sort(stops.begin(), stops.end());
    const std::vector<int32_t> want =
        pad_by_key ? std::vector<int32_t>{2, 6, 7, 9} : std::vector<int32_t>{2, 5, 6, 7};
    EXPECT_EQ(stops, want);
  }
}

}  // namespace kestrel::gguf
