// The index of the largest of n floats: greedy sampling's choice over a vocabulary's logits.
#pragma once

#include <cstddef>

namespace kestrel::ops {

// The lowest index holding the largest value of x[0 .. n); NaN values never win (0 when every
// value is NaN). n > 0.
size_t Argmax(const float* x, size_t n);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&Argmax) ResolveArgmax();

}  // namespace kestrel::ops
