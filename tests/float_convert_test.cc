// f32 -> f16 / bf16 rounding against the hardware-independent definition: the nearest
// representable value, ties to even, checked exhaustively over every f16 and against
// neighbours of each bf16 value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "converters/float_convert.h"
#include "converters/gguf/dequantize.h"

namespace kestrel {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(FloatConvert, F16RoundTripsEveryF16Value) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = gguf::Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(gguf::Fp16ToFp32(F16BitsFromF32(f))));
      continue;
    }
    EXPECT_EQ(F16BitsFromF32(f), h) << "f16 bits " << h;
  }
}

TEST(FloatConvert, F16RoundsToNearestEven) {
  // Midpoints between consecutive finite f16 values (normal and subnormal) go to the even one;
  // points just above and below go to the nearer one.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = gguf::Fp16ToFp32(static_cast<uint16_t>(h));
    const double hi = gguf::Fp16ToFp32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(double(mid), (lo + hi) / 2) << "midpoint not representable";
    EXPECT_EQ(F16BitsFromF32(mid), (h & 1) ? h + 1 : h) << "midpoint after " << h;
    EXPECT_EQ(F16BitsFromF32(std::nextafter(mid, 0.0f)), h);
    EXPECT_EQ(F16BitsFromF32(std::nextafter(mid, 1e9f)), h + 1);
    EXPECT_EQ(F16BitsFromF32(-mid), 0x8000 | ((h & 1) ? h + 1 : h));
  }
  EXPECT_EQ(F16BitsFromF32(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(F16BitsFromF32(65519.99f), 0x7BFF);
  EXPECT_EQ(F16BitsFromF32(1e-10f), 0);
}

TEST(FloatConvert, BF16RoundsToNearestEven) {
  for (uint32_t b = 0; b < 0x7F80; b += 7) {
    const uint32_t base = b << 16;
    EXPECT_EQ(BF16BitsFromF32(FromBits(base)), b);
    EXPECT_EQ(BF16BitsFromF32(FromBits(base | 0x7FFF)), b);
    EXPECT_EQ(BF16BitsFromF32(FromBits(base | 0x8001)), b + 1);
    EXPECT_EQ(BF16BitsFromF32(FromBits(base | 0x8000)), (b & 1) ? b + 1 : b);
  }
  EXPECT_TRUE(std::isnan(FromBits(uint32_t{BF16BitsFromF32(std::nanf(""))} << 16)));
}

}  // namespace
}  // namespace kestrel
