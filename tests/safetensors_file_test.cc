// The safetensors reader and the checkpoint folder on files written here, byte by byte (so the
// tests run under qemu on every target), and once on a file the safetensors package writes:
// good files read back bit-exactly, and every malformed one fails with a message naming the
// problem, never a crash.
#include "converters/safetensors/safetensors_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "converters/safetensors/checkpoint.h"
#include "converters/safetensors/json_reader.h"
#include "tests/support/test_support.h"

namespace kestrel::safetensors {
namespace {

// A .safetensors file: the header length, the header text, the data.
std::vector<uint8_t> Make(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

template <typename T>
void Append(std::vector<uint8_t>* data, const std::vector<T>& values) {
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  data->insert(data->end(), p, p + values.size() * sizeof(T));  // the tests run little-endian
}

// Opens a heap copy of exactly `bytes` so AddressSanitizer catches any read past the end.
Status OpenCopy(const std::vector<uint8_t>& bytes, std::unique_ptr<File>* out,
                std::vector<uint8_t>* storage) {
  *storage = bytes;
  storage->shrink_to_fit();
  return File::OpenFromMemory(storage->data(), storage->size(), "test.safetensors", out);
}

void ExpectHas(const Status& s, const std::vector<std::string>& words) {
  ASSERT_FALSE(s.ok()) << "expected an error with '" << words[0] << "'";
  for (const std::string& w : words) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << "message lacks '" << w << "': " << s.message();
  }
}

void ExpectRejected(const std::vector<uint8_t>& bytes, const std::vector<std::string>& words) {
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  ExpectHas(OpenCopy(bytes, &file, &storage), words);
}

// A header with one tensor entry `entry` (the JSON object's text) named "w".
std::vector<uint8_t> OneTensor(const std::string& entry, size_t data_bytes) {
  return Make("{\"w\":" + entry + "}", std::vector<uint8_t>(data_bytes, 0));
}

TEST(SafetensorsFile, ReadsF32F16Bf16BitExactly) {
  const std::vector<float> f32 = {1.5f, -0.0f, 3.4028235e38f, 1e-45f, -7.25f, 0.1f};
  const std::vector<uint16_t> f16 = {0x3C00, 0x0001, 0xFBFF, 0x7C00};      // 1, 2^-24, -65504, inf
  const std::vector<uint16_t> bf16 = {0x3FC0, 0x8001, 0x7F80, 0xC049, 0};  // 1.5, tiny, inf, ...
  std::vector<uint8_t> data;
  Append(&data, f32);
  Append(&data, f16);
  Append(&data, bf16);
  const std::string header = R"({"__metadata__":{"format":"pt","k":"v"},)"
                             R"("z.f32":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("a.f16":{"dtype":"F16","shape":[4],"data_offsets":[24,32]},)"
                             R"("m.bf16":{"dtype":"BF16","shape":[5,1],"data_offsets":[32,42]}})";
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(OpenCopy(Make(header, data), &file, &storage).ok());

  ASSERT_EQ(file->tensors().size(), 3u);  // header order, not sorted
  EXPECT_EQ(file->tensors()[0].name, "z.f32");
  EXPECT_EQ(file->tensors()[2].name, "m.bf16");
  EXPECT_EQ(file->data_offset(), 8 + header.size());
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("k"), "v");
  const TensorInfo* w = file->Find("z.f32");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(w->n_elements, 6u);
  EXPECT_EQ(file->Find("missing"), nullptr);

  std::vector<float> values;
  ASSERT_TRUE(file->ReadF32(*w, &values).ok());
  ASSERT_EQ(values.size(), f32.size());
  EXPECT_EQ(std::memcmp(values.data(), f32.data(), 24), 0);
  ASSERT_TRUE(file->ReadF32(*file->Find("a.f16"), &values).ok());
  EXPECT_EQ(values, (std::vector<float>{1.0f, 5.9604644775390625e-08f, -65504.0f, INFINITY}));
  ASSERT_TRUE(file->ReadF32(*file->Find("m.bf16"), &values).ok());
  ASSERT_EQ(values.size(), 5u);
  for (size_t i = 0; i < bf16.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    EXPECT_EQ(bits, uint32_t{bf16[i]} << 16) << i;
  }
}

TEST(SafetensorsFile, EmptyTensorsScalarsAndOtherDTypes) {
  std::vector<uint8_t> data(4 + 8, 0);
  data[0] = 0x2A;  // the I32 scalar 42
  const std::string header = R"({"s":{"dtype":"I32","shape":[],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"F16","shape":[3,0,2],"data_offsets":[4,4]},)"
                             R"("d":{"dtype":"F64","shape":[1],"data_offsets":[4,12]}})";
  std::unique_ptr<File> file;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(OpenCopy(Make(header, data), &file, &storage).ok());
  EXPECT_TRUE(file->metadata().empty());
  const TensorInfo* s = file->Find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->n_elements, 1u);
  EXPECT_EQ(s->data[0], 0x2A);
  std::vector<float> values = {1.0f};
  ASSERT_TRUE(file->ReadF32(*file->Find("e"), &values).ok());
  EXPECT_TRUE(values.empty());
  ExpectHas(file->ReadF32(*s, &values), {"test.safetensors", "'s'", "I32", "F32, F16 or BF16"});
  ExpectHas(file->ReadF32(*file->Find("d"), &values), {"F64"});
}

TEST(SafetensorsMalformed, Header) {
  ExpectRejected({1, 0, 0}, {"test.safetensors", "at least 8 bytes", "found 3"});
  std::vector<uint8_t> past = Make("{}");
  past[0] = 200;  // claims 200 header bytes, has 2
  ExpectRejected(past, {"header length 200", "past the end", "found 2"});
  std::vector<uint8_t> huge = Make("{}");
  huge[7] = 1;  // 2^56 + 2
  ExpectRejected(huge, {"at most 100000000", "found 72057594037927938"});
  ExpectRejected(Make("{\"w\": nonsense}"), {"header", "well-formed JSON", "line 1, column"});
  ExpectRejected(Make("[1, 2]"), {"header", "JSON object", "found an array"});
  ExpectRejected(Make(R"({"__metadata__":[1]})"), {"__metadata__", "object", "array"});
  ExpectRejected(Make(R"({"__metadata__":{"k":3}})"),
                 {"__metadata__ 'k'", "a string", "the number 3"});
  ExpectRejected(Make(std::string(100, '[') + std::string(100, ']')), {"levels of nesting"});
  ExpectRejected(Make("{}", {1, 2, 3}), {"3 trailing bytes"});
}

TEST(SafetensorsMalformed, Entries) {
  const char* kMissing[][2] = {
      {R"({"shape":[1],"data_offsets":[0,4]})", "missing 'dtype'"},
      {R"({"dtype":"F32","data_offsets":[0,4]})", "missing 'shape'"},
      {R"({"dtype":"F32","shape":[1]})", "missing 'data_offsets'"},
      {R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})",
       "'dtype' to be a string, found the number 7"},
      {R"({"dtype":"F32","shape":{},"data_offsets":[0,4]})",
       "'shape' to be an array, found an object"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":"0,4"})", "'data_offsets' to be an array"},
      {R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})",
       "non-negative integers, found the number -1"},
      {R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", "found the number 1.5"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", "2 integers [begin, end], found 1"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1})", "unexpected key 'x'"},
      {R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})",
       "unknown dtype 'F33' (expected one of BOOL"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})",
       "shape [2] of F32 needs 8 bytes, but data_offsets [0, 4] hold 4"},
      {R"({"dtype":"F32","shape":[0],"data_offsets":[4,0]})", "begin after end"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "within the data section of 4 bytes"},
      {R"({"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,4]})", "overflows"},
      {R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]})", "overflows"},
      {"5", "expected an object with dtype, shape and data_offsets, found the number 5"},
  };
  for (const auto& [entry, message] : kMissing) {
    SCOPED_TRACE(entry);
    ExpectRejected(OneTensor(entry, 4), {"test.safetensors", "tensor 'w'", message});
  }
}

TEST(SafetensorsMalformed, TilingAndDuplicates) {
  const std::vector<uint8_t> data(12, 0);
  ExpectRejected(Make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      data),
                 {"'a' [0, 8] and 'b' [4, 12] overlap"});
  ExpectRejected(Make(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                      data),
                 {"data bytes [4, 8)", "'b'", "no tensor"});
  ExpectRejected(Make(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                      R"("a":{"dtype":"F32","shape":[0],"data_offsets":[12,12]}})",
                      data),
                 {"header", "duplicate key 'a'"});
  ExpectRejected(
      Make(R"({"a":{"dtype":"F32","shape":[3],"dtype":"F16","data_offsets":[0,12]}})", data),
      {"duplicate key 'dtype' in the object of 'a'"});
}

// Cuts every prefix and flips bytes of a good file: each must fail with a message, none crash.
TEST(SafetensorsMalformed, TruncationAndCorruptionNeverCrash) {
  std::vector<uint8_t> data(10, 0x3C);
  const std::vector<uint8_t> good = Make(
      R"({"__metadata__":{"a":"b"},"x":{"dtype":"F16","shape":[5],"data_offsets":[0,10]}})", data);
  for (size_t length = 0; length < good.size(); ++length) {
    std::unique_ptr<File> file;
    std::vector<uint8_t> storage;
    const Status s =
        OpenCopy(std::vector<uint8_t>(good.begin(), good.begin() + length), &file, &storage);
    EXPECT_FALSE(s.ok()) << length;
    EXPECT_FALSE(s.message().empty());
  }
  for (size_t i = 0; i < good.size() - data.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x55;
    std::unique_ptr<File> file;
    std::vector<uint8_t> storage;
    const Status s = OpenCopy(bad, &file, &storage);
    if (s.ok()) {  // a flip inside a string may leave the file valid
      EXPECT_EQ(file->tensors().size(), 1u);
    }
  }
}

// ---- Checkpoint folders ----

// A fresh folder holding `files` (name, bytes).
std::string Folder(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = test::ScratchPath(name);
  ::mkdir(dir.c_str(), 0755);
  for (const auto& [file, text] : files) {
    EXPECT_TRUE(test::WriteBytes(dir + "/" + file, reinterpret_cast<const uint8_t*>(text.data()),
                                 text.size()));
  }
  return dir;
}

std::string Shard(const std::vector<std::string>& names) {  // one F32 scalar per name
  std::string header = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    header += (i ? "," : "") + std::string("\"") + names[i] + R"(":{"dtype":"F32","shape":[],)" +
              "\"data_offsets\":[" + std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  }
  std::vector<float> values;
  for (size_t i = 0; i < names.size(); ++i) values.push_back(static_cast<float>(i + 1));
  std::vector<uint8_t> data;
  Append(&data, values);
  const std::vector<uint8_t> bytes = Make(header + "}", data);
  return std::string(bytes.begin(), bytes.end());
}

std::string Index(const std::string& weight_map) {
  return R"({"metadata":{"total_size":12},"weight_map":{)" + weight_map + "}}";
}

TEST(SafetensorsCheckpoint, SingleFileAndShards) {
  std::unique_ptr<Checkpoint> c;
  ASSERT_TRUE(
      Checkpoint::Open(Folder("st-single", {{"model.safetensors", Shard({"a", "b"})}}), &c).ok());
  EXPECT_FALSE(c->sharded());
  std::vector<float> v;
  ASSERT_TRUE(c->ReadF32("b", &v).ok());
  EXPECT_EQ(v, std::vector<float>{2.0f});
  ExpectHas(c->ReadF32("nope", &v), {"'nope'", "found in none"});

  const std::string index =
      Index(R"("a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors")");
  const Status s = Checkpoint::Open(Folder("st-sharded", {{"model.safetensors.index.json", index},
                                                          {"s1.safetensors", Shard({"a"})},
                                                          {"s2.safetensors", Shard({"c", "b"})}}),
                                    &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(c->sharded());
  EXPECT_EQ(c->files().size(), 2u);
  EXPECT_EQ(c->tensors().size(), 3u);
  ASSERT_TRUE(c->ReadF32("b", &v).ok());
  EXPECT_EQ(v, std::vector<float>{2.0f});
  ASSERT_NE(c->Find("a"), nullptr);
  EXPECT_NE(c->Find("a")->file->path().find("s1.safetensors"), std::string::npos);
}

TEST(SafetensorsCheckpoint, BadIndexes) {
  const std::string s1 = Shard({"a"}), s2 = Shard({"b", "c"});
  struct Case {
    std::string index;
    std::vector<std::string> words;
  } cases[] = {
      {Index(R"("a":"s1.safetensors","b":"gone.safetensors")"),
       {"gone.safetensors", "No such file"}},
      {Index(R"("a":"s1.safetensors","z":"s2.safetensors")"), {"'z'", "found in no shard"}},
      {Index(R"("a":"s1.safetensors","b":"s1.safetensors")"),
       {"'b'", "s1.safetensors", "found in no shard"}},
      {Index(R"("a":"s1.safetensors","b":"s2.safetensors")"),
       {"'c'", "s2.safetensors", "missing from weight_map"}},
      {Index(R"("a":"../s1.safetensors")"), {"'a'", "plain file name", "'/'"}},
      {Index(R"("a":"..")"), {"'a'", "plain file name", "'..'"}},
      {Index(R"("a":"")"), {"empty string"}},
      {Index(R"("a":5)"), {"'a'", "shard file name, found the number 5"}},
      {R"({"metadata":{}})", {"missing 'weight_map'"}},
      {R"({"weight_map":[]})", {"'weight_map' to be an object, found an array"}},
      {R"({"weight_map":{"a":"s1.safetensors",}})", {"well-formed JSON", "line 1, column"}},
      {R"(["weight_map"])", {"expected an object at the top level, found an array"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.index);
    std::unique_ptr<Checkpoint> checkpoint;
    const std::string dir =
        Folder("st-bad-" + std::to_string(n++), {{"model.safetensors.index.json", c.index},
                                                 {"s1.safetensors", s1},
                                                 {"s2.safetensors", s2}});
    std::vector<std::string> words = c.words;
    words.push_back("model.safetensors.index.json");
    ExpectHas(Checkpoint::Open(dir, &checkpoint), words);
  }
  // The same tensor in two shards, each listed.
  std::unique_ptr<Checkpoint> checkpoint;
  ExpectHas(
      Checkpoint::Open(Folder("st-twice", {{"model.safetensors.index.json",
                                            Index(R"("a":"s1.safetensors","b":"s2.safetensors")")},
                                           {"s1.safetensors", Shard({"a"})},
                                           {"s2.safetensors", Shard({"b", "a"})}}),
                       &checkpoint),
      {"tensor 'a' is in two shards", "s1.safetensors", "s2.safetensors"});
  ExpectHas(Checkpoint::Open(Folder("st-empty", {}), &checkpoint), {"found neither"});
}

TEST(SafetensorsJson, ReadJsonErrors) {
  nlohmann::json j;
  const std::string dir = Folder("st-json", {{"config.json", "{\n  \"a\": 1,\n  \"b\" 2\n}"},
                                             {"modules.json", "[{\"a\":1}]"}});
  ExpectHas(ReadJson(dir + "/missing.json", nlohmann::json::value_t::object, &j),
            {"missing.json", "No such file"});
  ExpectHas(ReadJson(dir + "/config.json", nlohmann::json::value_t::object, &j),
            {"config.json", "line 3, column"});
  ExpectHas(ReadJson(dir + "/modules.json", nlohmann::json::value_t::object, &j),
            {"modules.json", "expected an object at the top level, found an array"});
  ASSERT_TRUE(ReadJson(dir + "/modules.json", nlohmann::json::value_t::array, &j).ok());
  EXPECT_EQ(j[0]["a"], 1);
}

// Interoperability: a file the safetensors package (PyPI) writes reads back to numpy's values.
// Needs the host's Python, so it exists in native builds only (not compiled, rather than
// skipped, in cross builds, where the byte-level tests above cover the target).
#if !KESTREL_CROSS_BUILD
TEST(SafetensorsInterop, ReadsWhatThePythonPackageWrites) {
  const std::string path = test::ScratchPath("py.safetensors");
  ASSERT_EQ(test::RunHostCommand(std::string("'") + KESTREL_PYTHON + "' '" + KESTREL_SOURCE_DIR +
                                 "/tests/py/make_safetensors.py' '" + path + "'"),
            "");
  std::unique_ptr<File> file;
  const Status s = File::Open(path, &file);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file->metadata().at("note"), "kestrel");
  EXPECT_EQ(file->metadata().at("format"), "pt");
  const std::vector<float> expected = test::ReadRaw<float>(path + ".f32");
  std::vector<float> all, values;
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_NE(file->Find(name), nullptr) << name;
    ASSERT_TRUE(file->ReadF32(*file->Find(name), &values).ok());
    all.insert(all.end(), values.begin(), values.end());
  }
  ASSERT_EQ(all.size(), expected.size());
  EXPECT_EQ(std::memcmp(all.data(), expected.data(), all.size() * 4), 0);
}
#endif  // !KESTREL_CROSS_BUILD

}  // namespace
}  // namespace kestrel::safetensors
