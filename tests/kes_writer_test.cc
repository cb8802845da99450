// WriteKes: the weight blob starts where the FlatBuffer says, whatever the metadata's size; a
// model whose tensors wait in a scratch file writes the same bytes as one holding them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "converters/kes_model.h"
#include "runtime/format.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

// weights_offset lives inside the FlatBuffer it follows: storing it (FlatBuffers leaves the
// default 0 out) grows the metadata by a few bytes, which once pushed the blob start past the
// next 64-byte boundary ("metadata size changed between packings": llama-quantize's requantized
// Gemma GGUFs hit it). Names of every length from 0 to 127 move the metadata's end across a
// whole alignment period, so some of them land just below a boundary.
TEST(KesWriter, BlobStartsWhereTheMetadataSaysForEveryMetadataSize) {
  for (size_t name_length = 0; name_length < 2 * kKesAlignment; ++name_length) {
    KesModel model;
    model.meta.name = std::string(name_length, 'n');
    model.AddTensor("w", fb::DType::F32, {4}, std::vector<uint8_t>(16, 0x3f));
    const std::string path = test::ScratchPath("writer.kes");
    const Status s = WriteKes(&model, path);
    ASSERT_TRUE(s.ok()) << "name of " << name_length << " bytes: " << s.message();
    const std::vector<uint8_t> bytes = test::ReadBytes(path);
    std::remove(path.c_str());
    ASSERT_GE(bytes.size(), kKesPreambleBytes);
    uint32_t fb_size = 0;
    std::memcpy(&fb_size, bytes.data() + 12, 4);
    ASSERT_LE(kKesPreambleBytes + fb_size, bytes.size());
    const fb::Model* meta = fb::GetModel(bytes.data() + kKesPreambleBytes);
    EXPECT_EQ(meta->weights_offset(), AlignUp(kKesPreambleBytes + fb_size, kKesAlignment))
        << "name of " << name_length << " bytes";
    ASSERT_EQ(bytes.size(), meta->weights_offset() + meta->weights_size());
    EXPECT_EQ(bytes[meta->weights_offset()], 0x3f);
  }
}

// Tensors of several sizes, an empty one among them, so that the blob's padding is exercised.
void AddTestTensors(KesModel* model) {
  model->meta.name = "spill";
  for (size_t i = 0; i < 5; ++i) {
    std::vector<uint8_t> bytes(i == 2 ? 0 : 40 * i + 12);
    for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = static_cast<uint8_t>(7 * i + j);
    model->AddTensor("t" + std::to_string(i), fb::DType::F32, {bytes.size() / 4}, std::move(bytes));
  }
}

TEST(KesWriter, SpilledTensorsWriteTheBytesOfHeldOnes) {
  KesModel held, spilled;
  AddTestTensors(&held);
  const std::string folder = test::TmpPath(".");
  ASSERT_TRUE(spilled.SpillTensorsTo(folder).ok());
  AddTestTensors(&spilled);
  for (const std::vector<uint8_t>& bytes : spilled.tensor_bytes) EXPECT_TRUE(bytes.empty());
  std::vector<uint8_t> held_bytes, spilled_bytes;
  ASSERT_TRUE(KesBytes(&held, &held_bytes).ok());
  const Status s = KesBytes(&spilled, &spilled_bytes);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spilled_bytes, held_bytes);
}

TEST(KesWriter, SpillingNeedsAFolderAndComesFirst) {
  KesModel model;
  const Status missing = model.SpillTensorsTo("/nonexistent-kestrel-folder");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("cannot create a scratch file in '/nonexistent-kestrel-folder'"),
            std::string::npos)
      << missing.message();
  KesModel late;
  AddTestTensors(&late);
  EXPECT_FALSE(late.SpillTensorsTo(test::TmpPath(".")).ok());
}

}  // namespace
}  // namespace kestrel
