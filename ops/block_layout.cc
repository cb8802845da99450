#include "ops/block_layout.h"

namespace kestrel::ops {
namespace {

// Where ggml keeps the bits of one quant inside its block: the low bits (a nibble, or Q2_K's and
// Q3_K's two) at bit nib_shift of byte nib_byte, the high bits (if the type has them) at bit
// high_shift of byte high_byte.
struct QuantBits {
  size_t nib_byte, nib_shift, high_byte, high_shift;
};

// Calls f(element, QuantBits) for every element of a ggml block of type t (ggml-common.h).
template <typename F>
void ForEachGgmlQuant(GgmlBlockType t, F f) {
  const auto legacy = [&](size_t qh, size_t qs) {  // Q4_1, Q5_0, Q5_1: 32 values
    for (size_t j = 0; j < 16; ++j) {
      f(j, QuantBits{qs + j, 0, qh + j / 8, j % 8});
      f(j + 16, QuantBits{qs + j, 4, qh + (j + 16) / 8, (j + 16) % 8});
    }
  };
  switch (t) {
    case GgmlBlockType::kQ4_1: return legacy(0, 4);
    case GgmlBlockType::kQ5_0: return legacy(2, 6);
    case GgmlBlockType::kQ5_1: return legacy(4, 8);
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K: {
      // 64-value chunks c: low nibbles of qs[32c..] are values 64c.., high nibbles 64c + 32..;
      // Q5_K's fifth bits: bit 2c (low) and 2c + 1 (high) of qh[l].
      const size_t qs = t == GgmlBlockType::kQ4_K ? 16 : 48;
      for (size_t c = 0; c < 4; ++c) {
        for (size_t l = 0; l < 32; ++l) {
          f(64 * c + l, QuantBits{qs + 32 * c + l, 0, 16 + l, 2 * c});
          f(64 * c + 32 + l, QuantBits{qs + 32 * c + l, 4, 16 + l, 2 * c + 1});
        }
      }
      return;
    }
    case GgmlBlockType::kQ2_K:
      // Value l of 128-value half n, bit pair j: 2 bits at 2j of qs[32n + l] (ggml-common.h).
      for (size_t e = 0; e < 256; ++e) {
        f(e, QuantBits{16 + 32 * (e / 128) + e % 32, 2 * (e % 128 / 32), 0, 0});
      }
      return;
    case GgmlBlockType::kQ3_K:
      // Value l of sub-block s (of 16): 2 bits at 2 * (s / 2 % 4) of qs[32 * (s / 8) + 16 *
      // (s % 2) + l], the high bit at bit s / 2 of hmask[16 * (s % 2) + l] (ggml-common.h).
      for (size_t s = 0; s < 16; ++s) {
        for (size_t l = 0; l < 16; ++l) {
          f(16 * s + l, QuantBits{32 + 32 * (s / 8) + 16 * (s % 2) + l, 2 * (s / 2 % 4),
                                  16 * (s % 2) + l, s / 2});
        }
      }
      return;
    case GgmlBlockType::kQ6_K:
      // Two halves of 128: ql[64h + l] and ql[64h + l + 32] hold values l, l + 32 (low
      // nibbles) and l + 64, l + 96 (high); qh[128 + 32h + l] their top two bits, 2 bits each.
      for (size_t h = 0; h < 2; ++h) {
        for (size_t l = 0; l < 32; ++l) {
          const size_t base = 128 * h + l, ql = 64 * h + l, qh = 128 + 32 * h + l;
          f(base, QuantBits{ql, 0, qh, 0});
          f(base + 32, QuantBits{ql + 32, 0, qh, 2});
          f(base + 64, QuantBits{ql, 4, qh, 4});
          f(base + 96, QuantBits{ql + 32, 4, qh, 6});
        }
      }
      return;
    default: return;
  }
}

// The packed position of element i (0..31) of sub-block `sub` of `row`.
QuantBits PackedBits(const BlockLayout& layout, size_t row, size_t sub, size_t i) {
  const size_t g = layout.GroupRows(row), in_group = row % kQuantGroupRows;
  // Low bits: byte i % LowBytes of the row (in 8-byte chunks interleaved across the group's
  // rows), the (i / LowBytes)-th field of low_bits in it.
  const size_t low_bytes = layout.format.LowBytes();
  const size_t byte = i % low_bytes, chunk = byte / kQuantChunkBytes;
  QuantBits bits{layout.SubBlockOffset(row, sub) + (chunk * g + in_group) * kQuantChunkBytes +
                     byte % kQuantChunkBytes,
                 i / low_bytes * layout.format.low_bits, 0, 0};
  const size_t high = layout.HighOffset(row, sub);
  if (layout.format.high_bits == 1) {
    bits.high_byte = high + i % 4, bits.high_shift = 2 * (i / 8) + i % 8 / 4;
  } else {
    bits.high_byte = high + i % 8, bits.high_shift = 2 * (i / 8);
  }
  return bits;
}

// A quant splits into f.low_bits and f.high_bits, in ggml's block and in the packing alike.
uint32_t ReadQuant(const uint8_t* bytes, const QuantBits& b, const BlockFormat& f) {
  uint32_t q = (bytes[b.nib_byte] >> b.nib_shift) & ((1u << f.low_bits) - 1);
  if (f.high_bits) {
    q |= ((bytes[b.high_byte] >> b.high_shift) & ((1u << f.high_bits) - 1)) << f.low_bits;
  }
  return q;
}

void WriteQuant(uint8_t* bytes, const QuantBits& b, const BlockFormat& f, uint32_t q) {
  const auto put = [&](size_t byte, size_t shift, uint32_t mask, uint32_t value) {
    bytes[byte] = static_cast<uint8_t>((bytes[byte] & ~(mask << shift)) | (value << shift));
  };
  const uint32_t low_mask = (1u << f.low_bits) - 1;
  put(b.nib_byte, b.nib_shift, low_mask, q & low_mask);
  if (f.high_bits) put(b.high_byte, b.high_shift, (1u << f.high_bits) - 1, q >> f.low_bits);
}

// The scale record's two parts: record_bytes from record_begin of ggml's block, or for a split
// record (Q2_K) record_split bytes from there and the rest from the block's start.
struct RecordPart {
  size_t block_at, record_at, bytes;
};
void RecordParts(const BlockFormat& f, RecordPart parts[2]) {
  const size_t head = f.record_split ? f.record_split : f.record_bytes;
  parts[0] = {f.record_begin, 0, head};
  parts[1] = {0, head, f.record_bytes - head};
}

// Block `block` of `row` between its ggml bytes and its places in the packed tensor, each quant
// and each record part: kToPacked reads src as the ggml block and writes dst as the tensor,
// else the reverse. Packing and unpacking pair the same places.
template <bool kToPacked>
void CopyGgmlBlock(GgmlBlockType t, const BlockLayout& layout, size_t row, size_t block,
                   const uint8_t* src, uint8_t* dst) {
  const BlockFormat& f = layout.format;
  const size_t first_sub = block * f.SubBlocks();
  ForEachGgmlQuant(t, [&](size_t e, const QuantBits& in_block) {
    const QuantBits packed = PackedBits(layout, row, first_sub + e / 32, e % 32);
    WriteQuant(dst, kToPacked ? packed : in_block, f,
               ReadQuant(src, kToPacked ? in_block : packed, f));
  });
  RecordPart parts[2];
  RecordParts(f, parts);
  for (const RecordPart& p : parts) {
    const size_t packed_at = layout.RecordOffset(row, block) + p.record_at;
    std::memcpy(dst + (kToPacked ? packed_at : p.block_at),
                src + (kToPacked ? p.block_at : packed_at), p.bytes);
  }
}

}  // namespace

void PackGgmlBlock(GgmlBlockType t, const BlockLayout& layout, const uint8_t* ggml_block,
                   size_t row, size_t block, uint8_t* tensor) {
  CopyGgmlBlock<true>(t, layout, row, block, ggml_block, tensor);
}

void UnpackGgmlBlock(GgmlBlockType t, const BlockLayout& layout, const uint8_t* tensor, size_t row,
                     size_t block, uint8_t* ggml_block) {
  std::memset(ggml_block, 0, GgmlBlockBytes(t));
  CopyGgmlBlock<false>(t, layout, row, block, tensor, ggml_block);
}

void LoadSubBlockQuants(const BlockLayout& layout, const uint8_t* tensor, size_t row, size_t sub,
                        int8_t* q) {
  const BlockFormat& f = layout.format;
  uint8_t low[kNibbleBytes];
  CopyRowBlock(tensor + layout.SubBlockOffset(row, sub), layout.GroupRows(row),
               row % kQuantGroupRows, f.LowBytes(), low);
  const uint8_t* high = tensor + layout.HighOffset(row, sub);
  // Element i is field i / LowBytes (low_bits wide) of byte i % LowBytes, walked without a
  // division per element: this runs once per row and sub-block in the portable kernel.
  const int low_mask = (1 << f.low_bits) - 1;
  size_t i = 0;
  for (size_t shift = 0; shift < 8; shift += f.low_bits) {
    for (size_t b = 0; b < f.LowBytes(); ++b, ++i) {
      q[i] = static_cast<int8_t>((low[b] >> shift) & low_mask);
    }
  }
  for (i = 0; i < kGgmlSubBlockElems; ++i) {
    int v = q[i];
    if (f.high_bits == 1) v |= ((high[i % 4] >> (2 * (i / 8) + i % 8 / 4)) & 1) << f.low_bits;
    if (f.high_bits == 2) v |= ((high[i % 8] >> (2 * (i / 8))) & 3) << f.low_bits;
    q[i] = static_cast<int8_t>(v - f.center);
  }
}

}  // namespace kestrel::ops
