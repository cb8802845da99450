// Element-wise activations and residual adds over contiguous f32 buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// out[i] = gelu_tanh(gate[i]) * up[i], the GeGLU feed-forward gate, where
// gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))). out may alias gate or up.
void GeluTanhMul(const float* gate, const float* up, float* out, size_t n);

// out[i] = silu(gate[i]) * up[i], the SwiGLU feed-forward gate, where silu(g) = g / (1 + e^-g).
// out may alias gate or up.
void SiluMul(const float* gate, const float* up, float* out, size_t n);

// out[i] = a[i] + b[i]. out may alias a or b.
void Add(const float* a, const float* b, float* out, size_t n);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&GeluTanhMul) ResolveGeluTanhMul();
decltype(&SiluMul) ResolveSiluMul();
decltype(&Add) ResolveAdd();

}  // namespace kestrel::ops
