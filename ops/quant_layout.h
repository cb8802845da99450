// Where the quants and scales of a block-quantized weight matrix (Q8_0, Q4_0) live, shared by
// the converter that packs them, the kernels that read them and the embedding lookup.
//
// A weight [rows, k] is cut into blocks of 32 along k, each with one f16 scale, exactly ggml's
// Q8_0/Q4_0 values. Rows are taken in groups of kQuantGroupRows, the matmul kernels' row tile;
// inside a group, block b of every row of the group is stored together, so one tile streams a
// single contiguous run of quants, and within it the rows' block bytes alternate in chunks of 8:
//   quants: group 0 [block 0: r0 bytes 0-7, r1 0-7, r2 0-7, r3 0-7, r0 8-15, r1 8-15, ...]
//                   [block 1: ...] ... group 1 [...] ...
//   scales: f16, one per (group, block, row) in that order, right after the last quant.
// The 8-byte interleave lets a 256-bit vector hold one chunk of four rows, which multiplies
// against an 8-byte chunk of activations broadcast to every 64-bit lane: the four rows' dot
// products come out in separate lanes without any horizontal shuffling (ARM's sdot works the
// same way on 128 bits). A last group of fewer rows interleaves only those. Quant blocks are
// ggml's own bytes: Q8_0 is 32 int8; Q4_0 is 16 bytes, byte i holding element i in its low
// nibble and element i + 16 in its high nibble, an unsigned q meaning (q - 8) * scale. A GGUF
// Q8_0/Q4_0 tensor therefore converts losslessly by moving bytes, never by requantizing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kestrel::ops {

inline constexpr size_t kQuantGroupRows = 4;
inline constexpr size_t kQuantBlockElems = 32;
inline constexpr size_t kQ8BlockBytes = 32;
inline constexpr size_t kQ4BlockBytes = 16;
inline constexpr size_t kQuantChunkBytes = 8;  // the interleave unit

struct QuantLayout {
  size_t rows = 0;
  size_t blocks_per_row = 0;  // k / 32
  size_t block_bytes = 0;     // kQ8BlockBytes or kQ4BlockBytes

  QuantLayout(size_t n_rows, size_t k, size_t bytes_per_block)
      : rows(n_rows), blocks_per_row(k / kQuantBlockElems), block_bytes(bytes_per_block) {}

  size_t GroupRows(size_t row) const {
    const size_t first = row / kQuantGroupRows * kQuantGroupRows;
    return rows - first < kQuantGroupRows ? rows - first : kQuantGroupRows;
  }
  // Index of (row, block) in the (group, block, row) order shared by quants and scales.
  size_t Slot(size_t row, size_t block) const {
    const size_t first = row / kQuantGroupRows * kQuantGroupRows;
    return first * blocks_per_row + block * GroupRows(row) + (row - first);
  }
  // The start of block `block` of the group holding `row`: all of its rows' quants.
  size_t GroupBlockOffset(size_t row, size_t block) const {
    const size_t first = row / kQuantGroupRows * kQuantGroupRows;
    return (first * blocks_per_row + block * GroupRows(row)) * block_bytes;
  }
  // Byte `byte` (0 .. block_bytes - 1, ggml's order) of the block of `row`.
  size_t QuantByteOffset(size_t row, size_t block, size_t byte) const {
    const size_t chunk = byte / kQuantChunkBytes, in_group = row % kQuantGroupRows;
    return GroupBlockOffset(row, block) + (chunk * GroupRows(row) + in_group) * kQuantChunkBytes +
           byte % kQuantChunkBytes;
  }
  // Copies the block of `row` out of the interleave, in ggml's byte order.
  void CopyBlock(const uint8_t* tensor, size_t row, size_t block, uint8_t* out) const;
  size_t ScaleOffset(size_t row, size_t block) const {
    return QuantBytes() + Slot(row, block) * sizeof(uint16_t);
  }
  size_t QuantBytes() const { return rows * blocks_per_row * block_bytes; }
  size_t TotalBytes() const { return QuantBytes() + rows * blocks_per_row * sizeof(uint16_t); }
};

// Copies row `row_in_group`'s block out of one group block (the group_rows rows' blocks
// interleaved in 8-byte chunks), in ggml's byte order.
inline void CopyRowBlock(const uint8_t* group_block, size_t group_rows, size_t row_in_group,
                         size_t block_bytes, uint8_t* out) {
  for (size_t c = 0; c < block_bytes; c += kQuantChunkBytes) {
    std::memcpy(out + c,
                group_block + (c / kQuantChunkBytes * group_rows + row_in_group) * kQuantChunkBytes,
                kQuantChunkBytes);
  }
}

inline void QuantLayout::CopyBlock(const uint8_t* tensor, size_t row, size_t block,
                                   uint8_t* out) const {
  CopyRowBlock(tensor + GroupBlockOffset(row, block), GroupRows(row), row % kQuantGroupRows,
               block_bytes, out);
}

// An f16 scale's exact f32 value (scales are finite: the converter writes them from finite
// weights, and a NaN or infinity would only propagate).
inline float ScaleToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {  // subnormal: normalize
    exponent = 113;
    while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
    out = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

}  // namespace kestrel::ops
