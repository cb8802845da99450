#include "converters/quantize_k.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "converters/float_convert.h"
#include "converters/gguf/dequantize.h"
#include "ops/ggml_blocks.h"

// Bit-exact with ggml: no fused multiply-adds, and ggml's order and forms of every operation
// kept (x / d where ggml divides, 1 / d then a product where it multiplies, w * (d * d) where it
// squares first), since each can change the last bit.
#include "ops/fp_contract_off.h"

namespace kestrel {
namespace {

constexpr int kSuper = 256;         // values per super-block
constexpr int kSub = 32;            // Q4_K / Q5_K sub-block
constexpr int kSub6 = 16;           // Q6_K sub-block
constexpr float kAllZero = 1e-15f;  // ggml's GROUP_MAX_EPS: a smaller largest |x| counts as 0

// ggml's nearest_int: round half to even through the float adder, by adding 1.5 * 2^23 so the
// integer lands in the low mantissa bits. For |x| > 2^22 the result is not x rounded but it is
// what ggml computes (its assert is compiled out), so the same bit trick is kept, not lrintf.
int NearestInt(float x) {
  const float shifted = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

int Clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

float HalfRoundTrip(float value) { return gguf::Fp16ToFp32(F16BitsFromF32(value)); }

// make_qkx2_quants with ggml's Q4_K/Q5_K arguments (weighted squared error): fits x ~ scale * L
// - min_out with L in [0, max_quant], trying iscale = (rmin + 0.1 * step + max_quant) / (max -
// min) for step 0..steps and keeping the least weighted error. Returns the scale; *min_out is
// -min (>= 0: the fitted offset is never above 0).
float FitScaleAndMin(const float* x, const float* w, int max_quant, float rmin, int steps,
                     uint8_t* L, float* min_out) {
  constexpr float kDelta = 0.1f;
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < kSub; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < kSub; ++i) L[i] = 0;
    *min_out = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(max_quant) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < kSub; ++i) {
    L[i] = static_cast<uint8_t>(Clamp(NearestInt(iscale * (x[i] - min)), 0, max_quant));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t trial[kSub];
  for (int step = 0; step <= steps; ++step) {
    iscale =
        (rmin + kDelta * static_cast<float>(step) + static_cast<float>(max_quant)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < kSub; ++i) {
      const int l = Clamp(NearestInt(iscale * (x[i] - min)), 0, max_quant);
      trial[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < kSub; ++i) {
      const float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best_error) {
      std::memcpy(L, trial, kSub);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

// The shared part of Q4_K and Q5_K: d, dmin, the 12 packed 6-bit scales and mins (layout of
// ops::ScaleMinK4) into block[0..15], and the quants (0..max_quant) of the 256 values into L.
void QuantizeScalesAndMinsK(const float* x, int max_quant, float rmin, int steps, uint8_t* block,
                            uint8_t* L) {
  float scales[kSuper / kSub], mins[kSuper / kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSuper / kSub; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub);
    float weights[kSub];
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = FitScaleAndMin(xs, weights, max_quant, rmin, steps, L + kSub * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* packed = block + 4;
  for (int j = 0; j < kSuper / kSub; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping to 63: keep that wrap-around.
    uint8_t ls = static_cast<uint8_t>(NearestInt(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(NearestInt(inv_min * mins[j]));
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
      packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
      packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
    }
  }
  StoreF16(max_scale / 63.f, block);
  StoreF16(max_min / 63.f, block + 2);
  // The quants again, against the scales as stored. A sub-block whose stored scale is 0 keeps
  // the quants of its fit (they then multiply 0).
  const float d_all = HalfRoundTrip(max_scale / 63.f), dmin_all = HalfRoundTrip(max_min / 63.f);
  for (int j = 0; j < kSuper / kSub; ++j) {
    uint8_t sc, m;
    ops::ScaleMinK4(static_cast<size_t>(j), packed, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0) continue;
    const float dm = dmin_all * static_cast<float>(m);
    for (int i = 0; i < kSub; ++i) {
      L[kSub * j + i] =
          static_cast<uint8_t>(Clamp(NearestInt((x[kSub * j + i] + dm) / d), 0, max_quant));
    }
  }
}

// make_qx_quants with rmse_type 1 and no importance (Q6_K's call): a signed scale for n values
// with L - nmax in [-nmax, nmax - 1], searched over iscale = -(nmax + 0.1 * is) / max for
// is = -9..9 and weighted by x^2 (maximizing sumlx^2 / suml2). L receives the quants + nmax.
float FitSignedScale(const float* x, int nmax, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < kSub6; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kAllZero) {
    for (int i = 0; i < kSub6; ++i) L[i] = 0;
    return 0.f;
  }
  const auto quant = [&](float iscale, int i) {
    return Clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1);
  };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < kSub6; ++i) {
    const int l = quant(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < kSub6; ++i) {
      const float w = x[i] * x[i];
      const float fl = static_cast<float>(quant(iscale, i));
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < kSub6; ++i) L[i] = static_cast<int8_t>(nmax + quant(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

// Q4_K (144 bytes): d, dmin, scales[12], qs[128]; 64-value chunk c holds sub-block 2c in the
// low nibbles of qs[32c..32c+31] and sub-block 2c+1 in the high nibbles.
void QuantizeBlockQ4_K(const float* x, uint8_t* block) {
  uint8_t L[kSuper];
  QuantizeScalesAndMinsK(x, 15, -1.0f, 20, block, L);
  uint8_t* q = block + 16;
  for (int chunk = 0; chunk < kSuper; chunk += 64) {
    for (int l = 0; l < 32; ++l)
      q[l] = static_cast<uint8_t>(L[chunk + l] | (L[chunk + l + 32] << 4));
    q += 32;
  }
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]: Q4_K's nibbles, and bit 4 of the
// quant at l of chunk c in bit 2c (low-nibble sub-block) or 2c + 1 (high) of qh[l].
void QuantizeBlockQ5_K(const float* x, uint8_t* block) {
  uint8_t L[kSuper];
  QuantizeScalesAndMinsK(x, 31, -0.5f, 15, block, L);
  uint8_t* qh = block + 16;
  uint8_t* ql = block + 48;
  std::memset(qh, 0, 32);
  for (int chunk = 0; chunk < kSuper / 64; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      const int lo = L[64 * chunk + l], hi = L[64 * chunk + l + 32];
      qh[l] =
          static_cast<uint8_t>(qh[l] | ((lo >> 4) << (2 * chunk)) | ((hi >> 4) << (2 * chunk + 1)));
      ql[l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    }
    ql += 32;
  }
}

// Q6_K (210 bytes): ql[128], qh[64], int8 scales[16], d. In each half of 128 values, value
// l + 32k (l < 32, k = 0..3) has its low 4 bits in ql[l + 32 * (k % 2)] (low nibble for k < 2,
// high for k >= 2) and its top 2 bits in bits 2k..2k+1 of qh[l].
void QuantizeBlockQ6_K(const float* x, uint8_t* block) {
  int8_t L[kSuper];
  float scales[kSuper / kSub6];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kSuper / kSub6; ++ib) {
    scales[ib] = FitSignedScale(x + kSub6 * ib, 32, L + kSub6 * ib);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  uint8_t* ql = block;
  uint8_t* qh = block + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(block + 192);
  if (max_abs_scale < kAllZero) {
    std::memset(block, 0, 210);
    return;  // d = +0 as well
  }
  const float iscale = -128.f / max_scale;
  StoreF16(1 / iscale, block + 208);
  for (int ib = 0; ib < kSuper / kSub6; ++ib) {
    const int s = NearestInt(iscale * scales[ib]);
    sc[ib] = static_cast<int8_t>(s < 127 ? s : 127);
  }
  const float d_all = HalfRoundTrip(1 / iscale);
  for (int j = 0; j < kSuper / kSub6; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0) continue;  // the fit's quants stay
    for (int i = 0; i < kSub6; ++i) {
      L[kSub6 * j + i] = static_cast<int8_t>(Clamp(NearestInt(x[kSub6 * j + i] / d), -32, 31) + 32);
    }
  }
  for (int half = 0; half < kSuper; half += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[half + l], q2 = L[half + l + 32], q3 = L[half + l + 64],
                q4 = L[half + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0x0F) | ((q3 & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0x0F) | ((q4 & 0x0F) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

}  // namespace kestrel
