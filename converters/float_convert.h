// Scalar f32 -> f16 / bf16 conversion with round-to-nearest-even, as numpy and PyTorch do, so
// converted weights are the nearest representable values.
#pragma once

#include <cstdint>
#include <cstring>

namespace kestrel {

inline uint16_t F16BitsFromF32(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x38800000u) {  // f16 subnormal or zero: scale into the 10-bit mantissa
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t mantissa = (abs & 0x007FFFFFu) | 0x00800000u;
    const uint32_t shift = 126u - (abs >> 23);  // 14 + (113 - exponent) - 1 ... 14..24
    uint32_t half = mantissa >> (shift);
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline uint16_t BF16BitsFromF32(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

// value as f16 (round to nearest even) in two little-endian bytes, as ggml's block fields are.
inline void StoreF16(float value, uint8_t* out) {
  const uint16_t bits = F16BitsFromF32(value);
  out[0] = static_cast<uint8_t>(bits & 0xFF);
  out[1] = static_cast<uint8_t>(bits >> 8);
}

}  // namespace kestrel
