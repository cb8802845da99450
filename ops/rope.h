// Rotary position embedding, NEOX layout (the two halves of each head form the pairs).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// Largest head_dim RopeNeox accepts: its angle tables live on the stack.
inline constexpr size_t kRopeMaxHeadDim = 1024;

// Rotates x in place. x: [n_tokens, n_heads * head_dim]; row t is at position pos0 + t.
// For i < head_dim / 2, theta = (pos0 + t) * freq_scale * theta_base^(-2i / head_dim) and
// (x[i], x[i + head_dim/2]) <- (x[i] cos - x[i + head_dim/2] sin, x[i] sin + x[i + head_dim/2] cos).
// head_dim must be even and at most kRopeMaxHeadDim. Angles are computed in double precision
// (positions reach 1e5 radians, where a float angle would be off by ~1e-2).
void RopeNeox(float* x, size_t n_tokens, size_t n_heads, size_t head_dim, int64_t pos0,
              float theta_base, float freq_scale);

}  // namespace kestrel::ops
