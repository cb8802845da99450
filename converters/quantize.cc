#include "converters/quantize.h"

#include <cmath>
#include <cstring>

#include "converters/float_convert.h"
#include "ops/quant_layout.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

void AppendScale(float scale, std::vector<uint8_t>* out) {
  const uint16_t bits = F16BitsFromF32(scale);
  out->push_back(static_cast<uint8_t>(bits & 0xFF));
  out->push_back(static_cast<uint8_t>(bits >> 8));
}

// A float to int conversion defined for every input. 1 / scale overflows to infinity when the
// scale is subnormal, making x * (1 / scale) infinite or NaN; x86 converts those to 0 in the
// low byte (ggml and numpy on x86 both do), and so does this on every platform.
int Truncate(float value) {
  if (!(std::fabs(value) < 128.0f)) return 0;
  return static_cast<int>(value);
}

}  // namespace

void QuantizeQ8_0(const float* x, size_t n, std::vector<uint8_t>* out) {
  for (size_t b = 0; b < n / kQuantBlock; ++b) {
    const float* v = x + b * kQuantBlock;
    float amax = 0.0f;
    for (size_t i = 0; i < kQuantBlock; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    const float scale = amax / 127.0f;
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    AppendScale(scale, out);
    for (size_t i = 0; i < kQuantBlock; ++i) {
      const int q = Truncate(std::roundf(v[i] * inverse));
      out->push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
    }
  }
}

void QuantizeQ4_0(const float* x, size_t n, std::vector<uint8_t>* out) {
  for (size_t b = 0; b < n / kQuantBlock; ++b) {
    const float* v = x + b * kQuantBlock;
    // The first value of largest magnitude, with its sign: its quant is exactly 0 (-8).
    float amax = 0.0f, max = 0.0f;
    for (size_t i = 0; i < kQuantBlock; ++i) {
      if (amax < std::fabs(v[i])) amax = std::fabs(v[i]), max = v[i];
    }
    const float scale = max / -8.0f;
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    AppendScale(scale, out);
    // Two roundings, as gguf-py computes (blocks * id) + 8.5 in float32: the product and the
    // sum are each rounded to float (through exact double arithmetic, so that no compiler can
    // fuse them into one multiply-add and round once).
    const auto quant = [&](float value) {
      const float product = static_cast<float>(static_cast<double>(value) * inverse);
      const float shifted = static_cast<float>(static_cast<double>(product) + 8.5);
      const int q = Truncate(shifted);
      return static_cast<uint8_t>(q < 15 ? q : 15);
    };
    for (size_t i = 0; i < kQuantBlock / 2; ++i) {
      out->push_back(static_cast<uint8_t>(quant(v[i]) | (quant(v[i + kQuantBlock / 2]) << 4)));
    }
  }
}

Status PackGgmlBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                      std::vector<uint8_t>* packed) {
  KES_CHECK_OR_RETURN(dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0,
                      std::string("cannot pack ggml blocks as ") + DTypeName(dtype));
  KES_CHECK_OR_RETURN(k % kQuantBlock == 0, "rows of " + std::to_string(k) +
                                                " elements are not a whole number of " +
                                                std::to_string(kQuantBlock) + "-element blocks");
  const bool q4 = dtype == fb::DType::Q4_0;
  const size_t ggml_block = q4 ? kGgmlQ4BlockBytes : kGgmlQ8BlockBytes;
  const ops::QuantLayout layout(rows, k, q4 ? ops::kQ4BlockBytes : ops::kQ8BlockBytes);
  packed->assign(layout.TotalBytes(), 0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      const uint8_t* src = blocks + (r * layout.blocks_per_row + b) * ggml_block;
      std::memcpy(packed->data() + layout.ScaleOffset(r, b), src, 2);
      for (size_t c = 0; c < layout.block_bytes; c += ops::kQuantChunkBytes) {
        std::memcpy(packed->data() + layout.QuantByteOffset(r, b, c), src + 2 + c,
                    ops::kQuantChunkBytes);
      }
    }
  }
  return OkStatus();
}

}  // namespace kestrel
