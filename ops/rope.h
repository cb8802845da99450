// Rotary position embedding: NEOX layout (the two halves of each head form the pairs) or
// adjacent pairs, with optional linear scaling and per-frequency factors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// Largest head_dim RopeNeox accepts: its angle tables live on the stack.
inline constexpr size_t kRopeMaxHeadDim = 1024;

enum class RopeLayout {
  kNeox,      // pairs (x[i], x[i + head_dim/2]): GPT-NeoX, Gemma, Qwen2
  kAdjacent,  // pairs (x[2i], x[2i + 1]): llama.cpp's "norm" RoPE (GGUF llama files)
};

struct RopeFrequencies {
  RopeLayout layout = RopeLayout::kNeox;
  float theta_base = 10000.0f;
  float freq_scale = 1.0f;              // 1 / linear scaling factor
  const float* freq_factors = nullptr;  // [rotary_dims / 2] divisors (Llama 3 scaling) or null
  // Partial rotary (Phi-4-mini, GPT-NeoX): only each head's first rotary_dims elements turn, as
  // a head of that size would; the rest pass through. 0: the whole head.
  size_t rotary_dims = 0;
  // Multiplies the rotated elements, as llama.cpp's attn_factor scales its cosines and sines
  // (Phi-3's LongRoPE): the pass-through ones of a partial rotary stay as they are. 1: a pure
  // rotation.
  float magnitude = 1.0f;
};

// The elements of each head that turn: rotary_dims, or the whole head when it is 0 (the meaning
// of 0 in RopeFrequencies, the .kes Rope op and the converter's hyper-parameters alike).
inline size_t RotatedDims(size_t rotary_dims, size_t head_dim) {
  return rotary_dims != 0 ? rotary_dims : head_dim;
}

// Rotates x in place. x: [n_tokens, n_heads * head_dim]; row t is at position pos0 + t. With
// R = RotatedDims(rotary_dims, head_dim), pair i (i < R / 2) of each head's first R elements
// turns by the angle
//   (pos0 + t) * freq_scale * theta_base^(-2i / R) / freq_factors[i]:
// (a, b) <- (a cos - b sin, a sin + b cos), where (a, b) are the pair's two elements in `layout`
// (NEOX: i and i + R / 2), both then times `magnitude`. head_dim and R must be even,
// R <= head_dim <= kRopeMaxHeadDim. Angles are computed in double precision
// (positions reach 1e5 radians, where a float angle would be off by ~1e-2).
void Rope(float* x, size_t n_tokens, size_t n_heads, size_t head_dim, int64_t pos0,
          const RopeFrequencies& freqs);

// Rope with the NEOX layout and no frequency factors.
inline void RopeNeox(float* x, size_t n_tokens, size_t n_heads, size_t head_dim, int64_t pos0,
                     float theta_base, float freq_scale) {
  Rope(x, n_tokens, n_heads, head_dim, pos0, {RopeLayout::kNeox, theta_base, freq_scale, nullptr});
}

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&Rope) ResolveRope();

}  // namespace kestrel::ops
