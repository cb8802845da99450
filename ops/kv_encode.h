// Writing KV-cache rows in the session's element type (ops/kv_layout.h): the KvStore op's
// kernels, compiled for every Highway target.
#pragma once

#include <cstddef>
#include <cstdint>

#include <hwy/base.h>

namespace kestrel::ops {

// out[i] = x[i] rounded to the nearest f16 (ties to even); out of range -> +-inf.
void KvEncodeF16(const float* x, size_t n, hwy::float16_t* out);

// n a multiple of kKvInt8Block: per block of 32, scales[b] = max |x| / 127 and
// q = round-to-nearest-even(x / scale) in -127..127 (an all-zero block: scale 0, q 0).
void KvEncodeInt8(const float* x, size_t n, int8_t* q, float* scales);

decltype(&KvEncodeF16) ResolveKvEncodeF16();
decltype(&KvEncodeInt8) ResolveKvEncodeInt8();

}  // namespace kestrel::ops
