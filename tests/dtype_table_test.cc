// The table of dtypes (runtime/dtype_table.h) against the schema it describes, against ggml's
// block sizes and type ids, and against the lookups that read it.
#include "runtime/dtype_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <set>
#include <string>

#include "converters/gguf/dequantize.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "ops/block_layout.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

size_t RowsOf(fb::DType dtype) {
  size_t n = 0;
  for (const DTypeRow& row : kDTypeTable) n += row.dtype == dtype;
  return n;
}

TEST(DTypeTable, OneRowPerSchemaDType) {
  for (const fb::DType dtype : fb::EnumValuesDType()) {
    EXPECT_EQ(RowsOf(dtype), 1u) << fb::EnumNameDType(dtype);
  }
  EXPECT_EQ(std::size(kDTypeTable), std::size(fb::EnumValuesDType())) << "a row for no dtype";
}

TEST(DTypeTable, NamesAreUniqueAndLookedUp) {
  std::set<std::string> names;
  for (const DTypeRow& row : kDTypeTable) {
    ASSERT_NE(row.name, nullptr);
    EXPECT_GT(std::strlen(row.name), 0u);
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
    EXPECT_STREQ(DTypeName(row.dtype), row.name);
    EXPECT_EQ(FindDType(row.dtype), &row);
  }
  // What `kestrel inspect` and the loader's messages have always printed.
  EXPECT_STREQ(DTypeName(fb::DType::Q8_0), "q8");
  EXPECT_STREQ(DTypeName(fb::DType::Q4_0), "q4");
  EXPECT_STREQ(DTypeName(fb::DType::Q4_K), "q4_k");
  EXPECT_STREQ(DTypeName(fb::DType::Q8_ACT), "q8-activations");
  EXPECT_STREQ(DTypeName(fb::DType::F32_PANELS), "f32-panels");
  EXPECT_STREQ(DTypeName(static_cast<fb::DType>(200)), "unknown");
  EXPECT_EQ(FindDType(static_cast<fb::DType>(200)), nullptr);
}

// ggml's own sizes (ops/ggml_blocks.h, checked against gguf-py by dequantize_test) for every row
// holding a ggml block, and the plain types' element sizes.
TEST(DTypeTable, BlockSizesAreGgmls) {
  for (const DTypeRow& row : kDTypeTable) {
    SCOPED_TRACE(row.name);
    ASSERT_GE(row.block_elems, 1u);
    ASSERT_GE(row.block_bytes, 1u);
    if (row.block) {
      EXPECT_EQ(row.block_elems, ops::GgmlBlockElems(*row.block));
      EXPECT_EQ(row.block_bytes, ops::GgmlBlockBytes(*row.block));
    }
    if (row.gguf) {
      EXPECT_EQ(row.block_elems, gguf::BlockElements(*row.gguf));
      EXPECT_EQ(row.block_bytes, gguf::BlockBytes(*row.gguf));
    }
    EXPECT_EQ(IsBlockQuantized(row.dtype), row.block_elems > 1);
    EXPECT_EQ(BlockElems(row.dtype), row.block_elems > 1 ? row.block_elems : 0);
    EXPECT_EQ(DTypeSize(row.dtype), row.block_elems > 1 ? 0 : row.block_bytes);
    EXPECT_EQ(RowBytes(row.dtype, 3 * row.block_elems), 3 * row.block_bytes);
    if (row.block_elems > 1) {
      EXPECT_EQ(RowBytes(row.dtype, row.block_elems + 1), 0u);
    }
  }
  EXPECT_EQ(RowBytes(fb::DType::F16, 3), 6u);
  EXPECT_EQ(RowBytes(fb::DType::F32_PANELS, 5), 20u);
  EXPECT_EQ(RowBytes(fb::DType::Q8_0, 64), 68u);
  EXPECT_EQ(RowBytes(fb::DType::Q4_K, 512), 288u);
  EXPECT_EQ(RowBytes(fb::DType::Q8_ACT, 64), ops::Q8ActRowBytes(64));
  EXPECT_EQ(RowBytes(static_cast<fb::DType>(200), 64), 0u);
}

// ggml.h's ids of the types a GGUF file may hold that Kestrel keeps, by ggml's name.
struct GgmlId {
  const char* name;
  uint32_t id;
};
constexpr GgmlId kGgmlIds[] = {{"F32", 0},   {"F16", 1},   {"Q4_0", 2},  {"Q4_1", 3},  {"Q5_0", 6},
                               {"Q5_1", 7},  {"Q8_0", 8},  {"Q2_K", 10}, {"Q3_K", 11}, {"Q4_K", 12},
                               {"Q5_K", 13}, {"Q6_K", 14}, {"BF16", 30}};

TEST(DTypeTable, GgufTypesRoundTrip) {
  size_t with_gguf = 0;
  for (const DTypeRow& row : kDTypeTable) {
    if (!row.gguf) continue;
    ++with_gguf;
    SCOPED_TRACE(row.name);
    fb::DType back;
    ASSERT_TRUE(DTypeOfGgmlType(*row.gguf, &back));
    EXPECT_EQ(back, row.dtype);
    EXPECT_EQ(FindGgmlType(*row.gguf), &row);
    EXPECT_STREQ(gguf::GgmlTypeName(*row.gguf), fb::EnumNameDType(row.dtype));
  }
  EXPECT_EQ(with_gguf, std::size(kGgmlIds));
  for (const GgmlId& g : kGgmlIds) {
    const DTypeRow* row = FindGgmlType(static_cast<gguf::GgmlType>(g.id));
    ASSERT_NE(row, nullptr) << g.name;
    EXPECT_STREQ(gguf::GgmlTypeName(*row->gguf), g.name);
  }
  // Every other id: no row, no dtype, no name.
  for (uint32_t id = 0; id < 64; ++id) {
    const auto type = static_cast<gguf::GgmlType>(id);
    fb::DType dtype;
    const bool known = FindGgmlType(type) != nullptr;
    EXPECT_EQ(DTypeOfGgmlType(type, &dtype), known) << id;
    EXPECT_EQ(std::strcmp(gguf::GgmlTypeName(type), "unknown") != 0, known) << id;
    EXPECT_EQ(gguf::CanDequantize(type), known) << id;
  }
}

// The kept types' kernels are declared from ops/block_layout.h's X-macro: it must list exactly
// the rows the table serves with them.
TEST(DTypeTable, KeptBlocksAreTheBlockLayoutTypes) {
  std::set<ops::GgmlBlockType> macro;
#define KESTREL_INSERT_TYPE(T) macro.insert(ops::GgmlBlockType::k##T);
  KESTREL_BLOCK_TYPES(KESTREL_INSERT_TYPE)
#undef KESTREL_INSERT_TYPE
  std::set<ops::GgmlBlockType> table;
  for (const DTypeRow& row : kDTypeTable) {
    ops::GgmlBlockType kept;
    const bool is_kept = KeptBlockType(row.dtype, &kept);
    EXPECT_EQ(is_kept, row.kernels == KernelFamily::kKeptBlocks) << row.name;
    if (!is_kept) continue;
    ASSERT_TRUE(row.block) << row.name;
    EXPECT_EQ(kept, *row.block) << row.name;
    table.insert(kept);
  }
  EXPECT_EQ(macro, table);
}

TEST(DTypeTable, WeightDTypesHaveKernelsAndNames) {
  for (const DTypeRow& row : kDTypeTable) {
    EXPECT_EQ(IsWeightDType(row.dtype), row.kernels != KernelFamily::kNone) << row.name;
  }
  EXPECT_FALSE(IsWeightDType(fb::DType::Q8_ACT));
  EXPECT_FALSE(IsWeightDType(fb::DType::I32));
  EXPECT_FALSE(IsWeightDType(static_cast<fb::DType>(200)));
  // The loader's message lists them in table order.
  EXPECT_EQ(DTypeNames(IsWeightDType, " or "),
            "f32, f32-panels, f16, bf16, q8, q4, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k");
  EXPECT_EQ(gguf::GgmlTypeList(false),
            "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K");
  EXPECT_EQ(gguf::GgmlTypeList(true).substr(0, 20), "F32 0, F16 1, BF16 3");
  // The dequantizer's refusal says what it expected and what it found.
  float value;
  const uint8_t byte = 0;
  const Status s = gguf::DequantizeRow(static_cast<gguf::GgmlType>(16), &byte, 1, &value);
  EXPECT_NE(s.message().find("unknown (16): expected one of " + gguf::GgmlTypeList(false)),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace kestrel
