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

// out[i] = erf(in[i]), within about 1e-7 absolute; NaN stays NaN. out may equal in.
void Erf(const float* in, float* out, size_t n);

// out[i] = gelu_erf(in[i]), the exact GELU of BERT (torch nn.GELU(), Hugging Face "gelu"):
// gelu_erf(x) = 0.5 x (1 + erf(x / sqrt(2))), with gelu_erf(-inf) = 0. out may equal in.
void GeluErf(const float* in, float* out, size_t n);

// out[i] = gelu_erf(gate[i]) * up[i], the GeGLU gate with the exact GELU. out may alias gate or
// up.
void GeluErfMul(const float* gate, const float* up, float* out, size_t n);

// out[i] = cap * tanh(in[i] / cap), cap > 0: Gemma 2's logit soft-capping, which bounds the
// values to (-cap, cap) and leaves those much smaller than cap nearly unchanged. out may equal in.
void SoftCap(const float* in, float* out, size_t n, float cap);

// out[i] = a[i] + b[i]. out may alias a or b.
void Add(const float* a, const float* b, float* out, size_t n);

// A matmul's epilogue on a block of its output (runtime/steps/matmul_step.cc), while the block is
// still in cache: rows of n values, stride floats apart, and the same for residual. bias and
// residual may each be null (then not added). Bit for bit what Add and GeluErf give one after
// the other.
// y[t * stride + j] = (y[t * stride + j] + bias[j]) + residual[t * stride + j].
void AddBiasRows(float* y, size_t stride, size_t rows, const float* bias, const float* residual,
                 size_t n);
// y[t * stride + j] = gelu_erf(y[t * stride + j] + bias[j]) + residual[t * stride + j].
void BiasGeluErfRows(float* y, size_t stride, size_t rows, const float* bias, const float* residual,
                     size_t n);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&GeluTanhMul) ResolveGeluTanhMul();
decltype(&SiluMul) ResolveSiluMul();
decltype(&GeluErf) ResolveGeluErf();
decltype(&SoftCap) ResolveSoftCap();
decltype(&Add) ResolveAdd();
decltype(&AddBiasRows) ResolveAddBiasRows();
decltype(&BiasGeluErfRows) ResolveBiasGeluErfRows();

}  // namespace kestrel::ops
