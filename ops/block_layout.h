// Where the quants and scales of a kept GGUF tensor (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K) live:
// the layout the converter packs, the matmul kernels (ops/matmul_blocks.h) read and the
// embedding lookup unpacks. Q8_0 and Q4_0 keep their own layout (ops/quant_layout.h).
//
// Every element of these types is an unsigned integer quant q of 2 to 6 bits times scales that
// ggml stores once per block (32 elements) or super-block (256, the K-quants). The packing
// separates the two and moves bits only, so the tensor is exactly as large as ggml's and its
// values are ggml's bit for bit:
// - quants, in sub-blocks of 32 elements. Rows are taken in groups of kQuantGroupRows as for
//   Q8_0/Q4_0; a group stores sub-block 0 of its rows, then sub-block 1, ... For each sub-block:
//     low bits: nibbles, 16 bytes per row, byte i holding element i (low nibble) and i + 16
//              (high), the rows' bytes interleaved in 8-byte chunks exactly as Q4_0's quants
//              are; Q2_K's and Q3_K's 2 low bits instead 8 bytes per row, row after row,
//              byte i (0..7) holding element 8c + i at bits 2c..2c+1;
//     high bits (Q3_K and the 5- and 6-bit types), then, row after row, 4 or 8 bytes per row:
//              1 bit: byte k (0..3), bit 2c + h is the high bit of element 8c + 4h + k (bit 4,
//                     or bit 2 for Q3_K);
//              2 bits: byte i (0..7), bits 2c..2c+1 are bits 4-5 of element 8c + i.
//   Either way the bits of an 8-element chunk c reach that chunk's lanes with one shift and one
//   mask: 2-bit fields, shifting each row's 8 bytes by 2c; 1-bit, shifting a row's 4 bytes,
//   copied into the 32-bit lanes of its elements 0-3 and 4-7, by 2c + h.
// - scale records: ggml's own scale bytes of each (row, block): Q4_1/Q5_1 d and m (f16), Q5_0
//   d, Q4_K/Q5_K d, dmin and the 12 bytes of 6-bit scales and mins, Q6_K the 16 int8 scales
//   then d, Q3_K the 12 bytes of 6-bit scales then d, Q2_K d and dmin then its 16 bytes of 4-bit
//   scale and min (ggml stores them at either end of the block).
// A group stores block by block: block b's records, row after row, then its sub-blocks, so
// that a group is one stream read front to back. (Records after the last quant were a second
// stream, which this machine's DRAM served more slowly for 4-bit decode: docs/real-shapes.md.)
// A group holding rows [g, g + n) starts at g * (row bytes), as in ggml's row-major file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/base.h>

#include "ops/ggml_blocks.h"
#include "ops/quant_layout.h"

// The types packed this way, for declaring one kernel per type: X(Q4_1) X(Q5_0) ...
#define KESTREL_BLOCK_TYPES(X) X(Q4_1) X(Q5_0) X(Q5_1) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K)

namespace kestrel::ops {

// f(std::integral_constant<GgmlBlockType, T>()) with T = type, one of KESTREL_BLOCK_TYPES: the
// kernel of a type known only at run time. Nothing for another type. Compiled for the baseline
// (ops/count_dispatch-inl.h says what that costs a kernel's lambda): f should only call the
// type's dispatcher, as ops/matmul_blocks_dotprod.cc's and ops/matmul_blocks_i8mm.cc's do.
template <class F>
HWY_INLINE void DispatchBlockType(GgmlBlockType type, const F& f) {
  switch (type) {
#define KESTREL_BLOCK_TYPE_CASE(T) \
  case GgmlBlockType::k##T: return f(std::integral_constant<GgmlBlockType, GgmlBlockType::k##T>());
    KESTREL_BLOCK_TYPES(KESTREL_BLOCK_TYPE_CASE)
#undef KESTREL_BLOCK_TYPE_CASE
    default: return;
  }
}

inline constexpr size_t kNibbleBytes = 16;  // per row and sub-block of 32

struct BlockFormat {
  size_t block_elems;   // 32, or 256 for K-quants
  size_t low_bits;      // 4 (a nibble), or 2 for Q2_K and Q3_K
  size_t high_bits;     // bits of each quant above its low bits: 0, 1 or 2
  size_t record_begin;  // where the scale bytes sit in ggml's block, and how many
  size_t record_bytes;
  size_t scales;            // scale values per block: 1, 8 (one per 32) or 16 (Q6_K, Q3_K, Q2_K:
                            // per 16)
  int center;               // Q6_K 32, Q3_K 4: the quant means q - center (the kernels make it
                            // signed); 0 for the others
  size_t record_split = 0;  // Q2_K: only this many record bytes start at record_begin; the
                            // rest are the block's first bytes

  constexpr bool centered() const { return center != 0; }
  // A scale per 16 elements: each sub-block of 32 is two halves, each with its own scale (and
  // Q2_K's its own min).
  constexpr bool PerHalfScales() const { return scales == 2 * block_elems / kGgmlSubBlockElems; }
  constexpr size_t SubBlocks() const { return block_elems / kGgmlSubBlockElems; }
  constexpr size_t LowBytes() const { return low_bits * 4; }    // per row and sub-block
  constexpr size_t HighBytes() const { return high_bits * 4; }  // per row and sub-block
  constexpr size_t SubBlockRowBytes() const { return LowBytes() + HighBytes(); }
};

// The format of a kept type; Q4_0 and Q8_0 are not among them.
constexpr BlockFormat FormatOf(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kQ4_1: return {32, 4, 0, 0, 4, 1, 0};
    case GgmlBlockType::kQ5_0: return {32, 4, 1, 0, 2, 1, 0};
    case GgmlBlockType::kQ5_1: return {32, 4, 1, 0, 4, 1, 0};
    case GgmlBlockType::kQ2_K: return {256, 2, 0, 80, 20, 16, 0, 4};
    case GgmlBlockType::kQ3_K: return {256, 2, 1, 96, 14, 16, 4};
    case GgmlBlockType::kQ4_K: return {256, 4, 0, 0, 16, 8, 0};
    case GgmlBlockType::kQ5_K: return {256, 4, 1, 0, 16, 8, 0};
    case GgmlBlockType::kQ6_K: return {256, 4, 2, 192, 18, 16, 32};
    default: return {0, 0, 0, 0, 0, 0, 0};
  }
}

struct BlockLayout {
  BlockFormat format;
  size_t rows = 0;
  size_t blocks_per_row = 0;      // k / block_elems
  size_t sub_blocks_per_row = 0;  // k / 32

  BlockLayout(GgmlBlockType t, size_t n_rows, size_t k)
      : format(FormatOf(t)),
        rows(n_rows),
        blocks_per_row(k / format.block_elems),
        sub_blocks_per_row(k / kGgmlSubBlockElems) {}

  size_t GroupFirst(size_t row) const { return row / kQuantGroupRows * kQuantGroupRows; }
  size_t GroupRows(size_t row) const {
    const size_t first = GroupFirst(row);
    return rows - first < kQuantGroupRows ? rows - first : kQuantGroupRows;
  }
  // Bytes of one block of one row (its record and its quants): ggml's block bytes.
  size_t RowBlockBytes() const {
    return format.record_bytes + format.SubBlocks() * format.SubBlockRowBytes();
  }
  // Where the group holding `row` starts, and its block `block`.
  size_t GroupOffset(size_t row) const {
    return GroupFirst(row) * blocks_per_row * RowBlockBytes();
  }
  size_t BlockOffset(size_t row, size_t block) const {
    return GroupOffset(row) + block * GroupRows(row) * RowBlockBytes();
  }
  // The start of sub-block `sub` (0 .. k/32 - 1) of the group holding `row`: every row's
  // nibbles, then every row's high bits.
  size_t SubBlockOffset(size_t row, size_t sub) const {
    const size_t subs = format.SubBlocks();
    return BlockOffset(row, sub / subs) +
           GroupRows(row) * (format.record_bytes + sub % subs * format.SubBlockRowBytes());
  }
  size_t HighOffset(size_t row, size_t sub) const {
    return SubBlockOffset(row, sub) + GroupRows(row) * format.LowBytes() +
           row % kQuantGroupRows * format.HighBytes();
  }
  size_t RecordOffset(size_t row, size_t block) const {
    return BlockOffset(row, block) + (row - GroupFirst(row)) * format.record_bytes;
  }
  size_t TotalBytes() const { return rows * blocks_per_row * RowBlockBytes(); }
};

// The same offsets inside a full group (kQuantGroupRows rows) with the type known at compile
// time, from the group's start (BlockLayout::GroupOffset): what the kernels step through.
template <GgmlBlockType T>
struct FullGroup {
  static constexpr BlockFormat F = FormatOf(T);
  static constexpr size_t kRecordBytes = kQuantGroupRows * F.record_bytes;
  static constexpr size_t kSubBytes = kQuantGroupRows * F.SubBlockRowBytes();
  static constexpr size_t kBlockBytes = kRecordBytes + F.SubBlocks() * kSubBytes;
  static const uint8_t* Records(const uint8_t* group, size_t block) {
    return group + block * kBlockBytes;
  }
  static const uint8_t* SubBlock(const uint8_t* group, size_t sub) {
    return group + sub / F.SubBlocks() * kBlockBytes + kRecordBytes +
           sub % F.SubBlocks() * kSubBytes;
  }
};

// Moves ggml block `block` of `row` (GgmlBlockBytes(t) bytes) into the packed tensor, and back.
void PackGgmlBlock(GgmlBlockType t, const BlockLayout& layout, const uint8_t* ggml_block,
                   size_t row, size_t block, uint8_t* tensor);
void UnpackGgmlBlock(GgmlBlockType t, const BlockLayout& layout, const uint8_t* tensor, size_t row,
                     size_t block, uint8_t* ggml_block);

// A block's scale record as the kernels use it: for scale j (see BlockFormat::scales), element
// values are scale[j] * q + min[j] for unsigned types and scale[j] * (q - 32) for Q6_K (min
// unused), scale[j] * (q - 4) for Q3_K. Q2_K's 16 scales and mins are per 16 elements like
// Q3_K's. Computed in f32 as ggml does (d * sc, dmin * m); they
// feed the kernels' f32 sums.
inline void DecodeScales(GgmlBlockType t, const uint8_t* record, float* scale, float* min) {
  uint16_t bits[2];
  switch (t) {
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kQ5_1:
      std::memcpy(bits, record, 4);
      scale[0] = ScaleToF32(bits[0]);
      min[0] = ScaleToF32(bits[1]);
      return;
    case GgmlBlockType::kQ5_0:
      std::memcpy(bits, record, 2);
      scale[0] = ScaleToF32(bits[0]);
      min[0] = -16.0f * scale[0];
      return;
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K: {
      std::memcpy(bits, record, 4);
      const float d = ScaleToF32(bits[0]), dmin = ScaleToF32(bits[1]);
      for (size_t j = 0; j < 8; ++j) {
        uint8_t sc, m;
        ScaleMinK4(j, record + 4, &sc, &m);
        scale[j] = d * static_cast<float>(sc);
        min[j] = -(dmin * static_cast<float>(m));
      }
      return;
    }
    case GgmlBlockType::kQ2_K: {
      std::memcpy(bits, record, 4);
      const float d = ScaleToF32(bits[0]), dmin = ScaleToF32(bits[1]);
      for (size_t j = 0; j < 16; ++j) {
        scale[j] = d * static_cast<float>(record[4 + j] & 0x0F);
        min[j] = -(dmin * static_cast<float>(record[4 + j] >> 4));
      }
      return;
    }
    case GgmlBlockType::kQ3_K: {
      std::memcpy(bits, record + 12, 2);
      const float d = ScaleToF32(bits[0]);
      for (size_t j = 0; j < 16; ++j) scale[j] = d * static_cast<float>(ScaleQ3K(j, record) - 32);
      return;
    }
    case GgmlBlockType::kQ6_K: {
      std::memcpy(bits, record + 16, 2);
      const float d = ScaleToF32(bits[0]);
      for (size_t j = 0; j < 16; ++j) {
        scale[j] = d * static_cast<float>(static_cast<int8_t>(record[j]));
      }
      return;
    }
    default: return;
  }
}

// The 32 quants of sub-block `sub` of `row`, out of the packing: unsigned, or q - center for
// Q6_K and Q3_K.
void LoadSubBlockQuants(const BlockLayout& layout, const uint8_t* tensor, size_t row, size_t sub,
                        int8_t* q);

}  // namespace kestrel::ops
