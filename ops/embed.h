// Token embedding lookup: copies one table row per token, widened to f32 and scaled
// (Gemma scales embeddings by sqrt(d_model)).
#pragma once

#include <cstddef>
#include <cstdint>

#include <hwy/base.h>

#include "ops/block_layout.h"

namespace kestrel::ops {

// table: [vocab, dim], tokens: [n_tokens], out: [n_tokens, dim].
// out[t, :] = table[tokens[t], :] * scale. Token ids must already be validated against vocab.
void EmbedF32(const float* table, size_t dim, const int32_t* tokens, size_t n_tokens, float scale,
              float* out);
void EmbedF16(const hwy::float16_t* table, size_t dim, const int32_t* tokens, size_t n_tokens,
              float scale, float* out);
void EmbedBF16(const hwy::bfloat16_t* table, size_t dim, const int32_t* tokens, size_t n_tokens,
               float scale, float* out);

// table: a packed Q8_0 / Q4_0 matrix [vocab, dim] (ops/quant_layout.h); one row is dequantized
// per token. dim % 32 == 0.
void EmbedQ8(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, size_t n_tokens,
             float scale, float* out);
void EmbedQ4(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, size_t n_tokens,
             float scale, float* out);

// table: a kept GGUF type (ops/block_layout.h, the types of ops/matmul_blocks.h); each block of
// the row is unpacked into ggml's own block and dequantized as ggml does (ops/ggml_blocks.h), so
// the values are the GGUF file's exactly, then scaled.
#define KESTREL_DECLARE_BLOCK_EMBED(T)                                                 \
  void Embed##T(const uint8_t* table, size_t vocab, size_t dim, const int32_t* tokens, \
                size_t n_tokens, float scale, float* out);
KESTREL_BLOCK_TYPES(KESTREL_DECLARE_BLOCK_EMBED)
#undef KESTREL_DECLARE_BLOCK_EMBED

// table: f32 packed in panels of 16 rows (ops/matmul_f32_panels.h PackF32Panels), as a tied
// embedding and output projection store it; out[t, :] = row tokens[t] * scale, the same values
// as EmbedF32 on the unpacked table.
void EmbedF32Panels(const float* table, size_t vocab, size_t dim, const int32_t* tokens,
                    size_t n_tokens, float scale, float* out);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&EmbedF32) ResolveEmbedF32();
decltype(&EmbedF16) ResolveEmbedF16();
decltype(&EmbedBF16) ResolveEmbedBF16();

}  // namespace kestrel::ops
