// Embedding lookup from a block-quantized table. Plain scalar code: one row of a few thousand
// values per token is far too little work to be worth a per-target kernel.
#include <cstring>

#include "ops/embed.h"
#include "ops/block_layout.h"
#include "ops/quant_layout.h"

namespace kestrel::ops {
namespace {

template <bool kQ4>
void EmbedQuant(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens,
                size_t n_tokens, float scale, float* out) {
  const QuantLayout layout(vocab, dim, kQ4 ? kQ4BlockBytes : kQ8BlockBytes);
  for (size_t t = 0; t < n_tokens; ++t) {
    const size_t row = static_cast<size_t>(tokens[t]);
    float* dst = out + t * dim;
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      uint16_t scale_bits;
      std::memcpy(&scale_bits, table + layout.ScaleOffset(row, b), 2);
      const float s = ScaleToF32(scale_bits) * scale;
      uint8_t q[kQ8BlockBytes];
      layout.CopyBlock(table, row, b, q);
      float* d = dst + b * kQuantBlockElems;
      for (size_t i = 0; i < kQuantBlockElems / 2; ++i) {
        if constexpr (kQ4) {
          d[i] = static_cast<float>((q[i] & 0x0F) - 8) * s;
          d[i + 16] = static_cast<float>((q[i] >> 4) - 8) * s;
        } else {
          d[i] = static_cast<float>(static_cast<int8_t>(q[i])) * s;
          d[i + 16] = static_cast<float>(static_cast<int8_t>(q[i + 16])) * s;
        }
      }
    }
  }
}

template <GgmlBlockType kType>
void EmbedBlocks(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens,
                 size_t n_tokens, float scale, float* out) {
  const BlockLayout layout(kType, vocab, dim);
  constexpr size_t kElems = GgmlBlockElems(kType);
  uint8_t block[GgmlBlockBytes(kType)];
  for (size_t t = 0; t < n_tokens; ++t) {
    const size_t row = static_cast<size_t>(tokens[t]);
    float* dst = out + t * dim;
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      UnpackGgmlBlock(kType, layout, table, row, b, block);
      DequantizeGgmlBlock(kType, block, dst + b * kElems);
    }
    for (size_t i = 0; i < dim; ++i) dst[i] *= scale;
  }
}

}  // namespace

#define KESTREL_DEFINE_BLOCK_EMBED(T)                                                  \
  void Embed##T(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, \
                size_t n_tokens, float scale, float* out) {                            \
    EmbedBlocks<GgmlBlockType::k##T>(table, vocab, dim, tokens, n_tokens, scale, out); \
  }
KESTREL_BLOCK_TYPES(KESTREL_DEFINE_BLOCK_EMBED)
#undef KESTREL_DEFINE_BLOCK_EMBED

void EmbedQ8(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, size_t n_tokens,
             float scale, float* out) {
  EmbedQuant<false>(table, vocab, dim, tokens, n_tokens, scale, out);
}
void EmbedQ4(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, size_t n_tokens,
             float scale, float* out) {
  EmbedQuant<true>(table, vocab, dim, tokens, n_tokens, scale, out);
}

}  // namespace kestrel::ops
