// The dequantizers against gguf-py (gguf.quants.dequantize, itself bit-exact with ggml), run by
// tests/py/dequant_ref.py: random blocks of every supported type, every f16 bit pattern, and
// every tensor of the real model. Results must match bit for bit.
#include "converters/gguf/dequantize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "converters/gguf/gguf_file.h"

// Names the type in parameterized test output instead of printing its bytes (found by argument-
// dependent lookup: gguf::GgmlType is ops::GgmlType).
namespace kestrel::ops {
void PrintTo(GgmlType t, std::ostream* os) { *os << gguf::GgmlTypeName(t); }
}  // namespace kestrel::ops

namespace kestrel::gguf {

namespace {

// ---- SHA-256 (FIPS 180-4), the same digest dequant_ref.py takes with hashlib ----
class Sha256 {
 public:
  void Update(const uint8_t* data, size_t n) {
    total_bytes_ += n;
    while (n > 0) {
      const size_t take = std::min(n, sizeof(block_) - block_used_);
      std::memcpy(block_ + block_used_, data, take);
      block_used_ += take;
      data += take;
      n -= take;
      if (block_used_ == sizeof(block_)) {
        Compress(block_);
        block_used_ = 0;
      }
    }
  }
  std::string HexDigest() {
    const uint64_t bit_length = total_bytes_ * 8;
    const uint8_t pad = 0x80;
    Update(&pad, 1);
    const uint8_t zero = 0;
    while (block_used_ != 56) Update(&zero, 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bit_length >> (56 - 8 * i));
    Update(length, 8);
    std::string hex;
    char buf[9];
    for (const uint32_t word : h_) {
      std::snprintf(buf, sizeof(buf), "%08x", word);
      hex += buf;
    }
    return hex;
  }

 private:
  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void Compress(const uint8_t* p) {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
             (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 =
          h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }

  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string Sha256Hex(const void* data, size_t n) {
  Sha256 sha;
  sha.Update(static_cast<const uint8_t*>(data), n);
  return sha.HexDigest();
}

// ---- Running the Python oracle ----

std::string TmpPath(const std::string& name) {
  return std::string(KESTREL_TEST_TMP) + "/dequantize_test_" + std::to_string(::getpid()) + "_" +
         name;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs dequant_ref.py with the given arguments; on failure returns its stderr in *error.
bool RunOracle(const std::string& args, std::string* error) {
  const std::string err_path = TmpPath("oracle.stderr");
  const std::string command = std::string("'") + KESTREL_PYTHON + "' '" + KESTREL_SOURCE_DIR +
                              "/tests/py/dequant_ref.py' " + args + " 2> '" + err_path + "'";
  const int rc = std::system(command.c_str());
  *error = "command: " + command + "\nexit status " + std::to_string(rc) + "\nstderr:\n" +
           ReadText(err_path);
  std::remove(err_path.c_str());
  return rc == 0;
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// Dequantizes `blocks` with both implementations and demands identical float bits.
void ExpectMatchesOracle(GgmlType type, const std::vector<uint8_t>& blocks) {
  const size_t n_blocks = blocks.size() / BlockBytes(type);
  ASSERT_EQ(n_blocks * BlockBytes(type), blocks.size());
  const size_t n = n_blocks * BlockElements(type);

  std::vector<float> ours(n);
  const Status status = DequantizeRow(type, blocks.data(), n, ours.data());
  ASSERT_TRUE(status.ok()) << status.message();

  const std::string in_path = TmpPath(std::string(GgmlTypeName(type)) + ".in");
  const std::string out_path = TmpPath(std::string(GgmlTypeName(type)) + ".out");
  WriteBytes(in_path, blocks);
  std::string error;
  const bool ran = RunOracle(
      std::string("blocks ") + GgmlTypeName(type) + " '" + in_path + "' '" + out_path + "'",
      &error);
  std::remove(in_path.c_str());
  ASSERT_TRUE(ran) << error;
  const std::vector<float> reference = ReadFloats(out_path);
  std::remove(out_path.c_str());

  ASSERT_EQ(reference.size(), n) << GgmlTypeName(type) << ": the oracle returned a different count";
  if (std::memcmp(ours.data(), reference.data(), n * sizeof(float)) == 0) return;
  for (size_t i = 0; i < n; ++i) {
    if (Bits(ours[i]) != Bits(reference[i])) {
      ADD_FAILURE() << GgmlTypeName(type) << ": first mismatch at value " << i << " (block "
                    << i / BlockElements(type) << "): ours " << ours[i] << " (0x" << std::hex
                    << Bits(ours[i]) << "), gguf-py " << std::dec << reference[i] << " (0x"
                    << std::hex << Bits(reference[i]) << ")";
      return;
    }
  }
}

// ---- Random blocks ----

// Byte offsets of the fp16 scale fields (d, and m or dmin) inside one block.
std::vector<size_t> HalfFieldOffsets(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0: return {0};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {208};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    default: return {};
  }
}

// Finite halves, starting with the awkward ones: signed zeros, subnormals (smallest, largest),
// the smallest normal, the largest finite, and negatives; then random finite patterns.
class HalfScales {
 public:
  explicit HalfScales(std::mt19937_64* rng) : rng_(rng) {}
  uint16_t Next() {
    static constexpr uint16_t kSpecial[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff,
                                            0x83ff, 0x0200, 0x0400, 0x8400, 0x7bff,
                                            0xfbff, 0x3c00, 0xbc00, 0x2e66, 0xa000};
    if (next_special_ < sizeof(kSpecial) / sizeof(kSpecial[0])) return kSpecial[next_special_++];
    for (;;) {
      const auto h = static_cast<uint16_t>((*rng_)());
      if (((h >> 10) & 0x1f) != 0x1f) return h;  // exponent 31 is inf/NaN
    }
  }

 private:
  std::mt19937_64* rng_;
  size_t next_special_ = 0;
};

std::vector<uint8_t> RandomBlocks(GgmlType type, size_t n_blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(n_blocks * BlockBytes(type));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  HalfScales scales(&rng);
  for (size_t block = 0; block < n_blocks; ++block) {
    for (const size_t offset : HalfFieldOffsets(type)) {
      const uint16_t h = scales.Next();
      bytes[block * BlockBytes(type) + offset] = static_cast<uint8_t>(h);
      bytes[block * BlockBytes(type) + offset + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return bytes;
}

class RandomBlocksTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RandomBlocksTest, BitExactWithGgufPy) {
  const GgmlType type = GetParam();
  ASSERT_TRUE(CanDequantize(type));
  // Enough blocks that every special scale appears in both fp16 fields, plus random ones.
  const size_t n_blocks = BlockElements(type) == 1 ? 4096 : 96;
  const uint64_t seed = 0x6b657374 + static_cast<uint64_t>(type);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<uint8_t> blocks = RandomBlocks(type, n_blocks, seed);
  if (type == GgmlType::F16) {
    // Quiet every NaN: numpy may convert with F16C, which quiets signaling NaNs, or in
    // software, which keeps them; quiet ones convert identically both ways.
    for (size_t i = 0; i + 1 < blocks.size(); i += 2) {
      if ((blocks[i + 1] & 0x7c) == 0x7c && ((blocks[i + 1] & 3) | blocks[i]) != 0) {
        blocks[i + 1] |= 0x02;
      }
    }
  }
  ExpectMatchesOracle(type, blocks);
}

INSTANTIATE_TEST_SUITE_P(AllSupportedTypes, RandomBlocksTest,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16,
                                           GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,
                                           GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(GgmlTypeName(info.param));
                         });

TEST(Fp16, EveryBitPatternMatchesNumpy) {
  // All 65536 halves except signaling NaNs (see the quieting note above).
  std::vector<uint8_t> halves;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0;
    if (nan && (h & 0x200) == 0) continue;
    halves.push_back(static_cast<uint8_t>(h));
    halves.push_back(static_cast<uint8_t>(h >> 8));
  }
  ExpectMatchesOracle(GgmlType::F16, halves);
}

TEST(Fp16, SubnormalsAreNotFlushed) {
  EXPECT_EQ(Fp16ToFp32(0x0001), 5.9604644775390625e-08f);  // 2^-24
  EXPECT_EQ(Fp16ToFp32(0x8001), -5.9604644775390625e-08f);
  EXPECT_EQ(Fp16ToFp32(0x03ff), 6.0975551605224609375e-05f);  // 1023 * 2^-24
  EXPECT_EQ(Bits(Fp16ToFp32(0x8000)), 0x80000000u);
  EXPECT_EQ(Fp16ToFp32(0x7bff), 65504.0f);
}

TEST(BlockSizes, MatchGgufPy) {
  const GgmlType all[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                          GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                          GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                          GgmlType::Q6_K};
  std::string names;
  for (const GgmlType t : all) names += std::string(" ") + GgmlTypeName(t);
  const std::string out_path = TmpPath("sizes.txt");
  std::string error;
  ASSERT_TRUE(RunOracle("sizes" + names + " > '" + out_path + "'", &error)) << error;
  std::istringstream lines(ReadText(out_path));
  std::remove(out_path.c_str());
  size_t checked = 0;
  for (const GgmlType t : all) {
    std::string name;
    size_t elements = 0, bytes = 0;
    ASSERT_TRUE(lines >> name >> elements >> bytes)
        << "oracle output ended before " << GgmlTypeName(t);
    EXPECT_EQ(name, GgmlTypeName(t));
    EXPECT_EQ(BlockElements(t), elements) << name;
    EXPECT_EQ(BlockBytes(t), bytes) << name;
    ++checked;
  }
  EXPECT_EQ(checked, sizeof(all) / sizeof(all[0]));
}

TEST(DequantizeRow, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> bytes(1024);
  std::vector<float> out(256);
  // 16: IQ2_XXS, a type with no dequantizer here.
  Status s = DequantizeRow(static_cast<GgmlType>(16), bytes.data(), 256, out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("(16)"), std::string::npos) << s.message();
  EXPECT_FALSE(CanDequantize(static_cast<GgmlType>(16)));
  EXPECT_FALSE(CanDequantize(static_cast<GgmlType>(99)));
  EXPECT_EQ(BlockElements(static_cast<GgmlType>(99)), 0u);
  EXPECT_STREQ(GgmlTypeName(static_cast<GgmlType>(99)), "unknown");

  s = DequantizeRow(GgmlType::Q4_K, bytes.data(), 100, out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("multiple of 256"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("100"), std::string::npos) << s.message();
}

TEST(DequantizeRows, SliceEqualsTheWholeTensor) {
  // 3 rows of 64 Q8_0 values.
  std::vector<uint8_t> blocks = RandomBlocks(GgmlType::Q8_0, 6, 7);
  TensorInfo t{"slice", {64, 3}, GgmlType::Q8_0, 0, 192, blocks.size(), blocks.data()};
  std::vector<float> whole;
  ASSERT_TRUE(DequantizeTensor(t, &whole).ok());
  ASSERT_EQ(whole.size(), 192u);
  std::vector<float> row(64);
  ASSERT_TRUE(DequantizeRows(t, 2, 1, row.data()).ok());
  EXPECT_EQ(std::memcmp(row.data(), whole.data() + 128, 64 * sizeof(float)), 0);
  const Status s = DequantizeRows(t, 2, 2, row.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("slice"), std::string::npos) << s.message();
}

// ---- The real model ----

TEST(RealModel, EveryTensorMatchesGgufPy) {
  std::unique_ptr<File> file;
  const Status opened = File::Open(KESTREL_MODEL_GGUF, &file);
  ASSERT_TRUE(opened.ok()) << opened.message()
                           << "\nThe model is missing or unreadable: run scripts/fetch-model.sh";

  // gguf-py takes tens of seconds over the model: run it while we hash our own output.
  const std::string hashes_path = TmpPath("model_hashes.txt");
  std::string error;
  bool oracle_ran = false;
  std::thread oracle([&] {
    oracle_ran = RunOracle(
        std::string("model-hashes '") + KESTREL_MODEL_GGUF + "' '" + hashes_path + "'", &error);
  });
  struct Ours {
    std::string type_name;
    uint64_t n_elements;
    std::string digest;
    Status status;
  };
  std::vector<Ours> ours;
  std::vector<float> values;
  for (const TensorInfo& t : file->tensors()) {
    const Status s = DequantizeTensor(t, &values);
    ours.push_back({GgmlTypeName(t.type), t.n_elements,
                    s.ok() ? Sha256Hex(values.data(), values.size() * sizeof(float)) : "", s});
  }
  oracle.join();
  ASSERT_TRUE(oracle_ran) << error;
  std::istringstream lines(ReadText(hashes_path));
  std::remove(hashes_path.c_str());

  std::map<std::string, size_t> checked_by_type;
  for (size_t i = 0; i < ours.size(); ++i) {
    const TensorInfo& t = file->tensors()[i];
    std::string name, type_name, digest;
    uint64_t n_elements = 0;
    ASSERT_TRUE(lines >> name >> type_name >> n_elements >> digest)
        << "gguf-py listed fewer tensors than our reader (" << ours.size() << ")";
    ASSERT_EQ(name, t.name) << "tensor order differs from gguf-py";
    ASSERT_EQ(type_name, ours[i].type_name) << t.name;
    ASSERT_EQ(n_elements, ours[i].n_elements) << t.name;
    ASSERT_TRUE(ours[i].status.ok()) << ours[i].status.message();
    EXPECT_EQ(ours[i].digest, digest)
        << "tensor '" << t.name << "' (" << type_name << ", " << n_elements
        << " values) dequantizes differently from gguf-py";
    ++checked_by_type[type_name];
  }
  std::string extra;
  EXPECT_FALSE(lines >> extra) << "gguf-py listed more tensors than our reader, e.g. " << extra;
  EXPECT_EQ(file->tensors().size(), 236u);
  for (const auto& [type, count] : checked_by_type) {
    std::printf("checked %zu %s tensors\n", count, type.c_str());
  }
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(Sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string abc = "abc";
  EXPECT_EQ(Sha256Hex(abc.data(), abc.size()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(Sha256Hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace kestrel::gguf
