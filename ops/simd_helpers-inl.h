// Per-target helpers shared by the Highway kernels in ops/*.cc: widening weights of any storage
// type to f32 vectors, loads/stores of a partial vector for loop tails (Highway 1.0.3 has no
// LoadN/StoreN, and its MaskedLoad may read the whole vector on SSE targets), and the element-wise
// loop and sum of squares several kernels share.
//
// Include after hwy/highway.h from a file compiled per target (foreach_target.h): the toggle
// guard below lets each target's pass re-include this file.

#if defined(KESTREL_OPS_SIMD_HELPERS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_SIMD_HELPERS_INL_H_
#undef KESTREL_OPS_SIMD_HELPERS_INL_H_
#else
#define KESTREL_OPS_SIMD_HELPERS_INL_H_
#endif

#include <cstring>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes of the widest f32 vector this target can have; sizes stack buffers for partial vectors.
// (MaxLanes of a Rebind can be smaller than the runtime vector on SVE; HWY_MAX_BYTES cannot.)
inline constexpr size_t kMaxF32Lanes = HWY_MAX_BYTES / sizeof(float);

// Loads Lanes(df) values starting at p, widened to f32.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAsF32(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}
// f16 and bf16 start from a vector of half the bytes (Rebind keeps the lane count), so this also
// works on SCALAR, where the f32 vector has a single lane.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAsF32(DF df, const hwy::float16_t* HWY_RESTRICT p) {
  const hn::Rebind<hwy::float16_t, DF> d16;
  return hn::PromoteTo(df, hn::LoadU(d16, p));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadAsF32(DF df, const hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::Rebind<hwy::bfloat16_t, DF> d16;
  return hn::PromoteTo(df, hn::LoadU(d16, p));
}

// Copies count < Lanes(df) values of p into a zero-padded stack buffer and widens it; never reads
// past p + count. Zero bits are +0.0 in f32, f16 and bf16, so padded lanes add nothing to sums.
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadPartialAsF32(DF df, const T* HWY_RESTRICT p, size_t count) {
  HWY_ALIGN T padded[kMaxF32Lanes] = {};
  memcpy(padded, p, count * sizeof(T));
  return LoadAsF32(df, padded);
}

// Stores the first count < Lanes(df) lanes of v to p; never writes past p + count.
template <class DF>
HWY_INLINE void StorePartial(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p, size_t count) {
  HWY_ALIGN float lanes[kMaxF32Lanes];
  hn::Store(v, df, lanes);
  memcpy(p, lanes, count * sizeof(float));
}

#if HWY_TARGET == HWY_AVX3_DL
// acc + in each int32 lane the sum of four products of u8's unsigned bytes and s8's signed ones
// (vpdpbusd, AVX-512 VNNI). Written as assembly because Highway 1.0.3 compiles its AVX3_DL
// target with GCC's "avxvnni" (the VEX encoding of Alder Lake and later) instead of
// "avx512vnni", so the intrinsic becomes `{vex} vpdpbusd`, which AVX-512 VNNI cores without
// AVX-VNNI (Ice Lake, Zen 4) fault on. The assembler's default for the mnemonic is the EVEX
// form every AVX3_DL core has; tests/no_vex_vnni_test checks that no VEX form is built.
HWY_INLINE __m256i DotBytesAccumulate(__m256i acc, __m256i u8, __m256i s8) {
  asm("vpdpbusd %[s8], %[u8], %[acc]" : [acc] "+v"(acc) : [u8] "v"(u8), [s8] "v"(s8));
  return acc;
}

// The same on 512-bit vectors.
HWY_INLINE __m512i DotBytes512(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %[s8], %[u8], %[acc]" : [acc] "+v"(acc) : [u8] "v"(u8), [s8] "v"(s8));
  return acc;
}

// acc + in each int32 lane the sum of two products of a's and b's signed int16 pairs (vpdpwssd,
// AVX-512 VNNI), in assembly for the reason above.
HWY_INLINE __m512i DotPairs512(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  return acc;
}
#endif

// Sum of all lanes as a scalar.
template <class DF>
HWY_INLINE float ReduceSum(DF df, hn::Vec<DF> v) {
  return hn::GetLane(hn::SumOfLanes(df, v));
}

// out[i] = fn(df, in0[i], in1[i], ...) for i < n: whole vectors, then one partial vector that
// reads and writes nothing past n. out may alias any input: each element is read before it is
// written. The one loop every element-wise kernel (and the element-wise passes of the norms and
// pooling) runs, so that tails are handled in one place.
template <class Fn, class... In>
HWY_INLINE void MapVectors(float* out, size_t n, Fn fn, const In*... in) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(fn(df, hn::LoadU(df, in + i)...), df, out + i);
  }
  if (i < n) {
    const size_t rest = n - i;
    StorePartial(df, fn(df, LoadPartialAsF32(df, in + i, rest)...), out + i, rest);
  }
}

// Folds x: [n] into an f32 sum, acc = accumulate(acc, v) per vector v of x, with two
// accumulators to hide the add latency on long rows. The tail is zero-padded, so accumulate(acc,
// 0) must leave acc unchanged.
template <class DF, class Accumulate>
HWY_INLINE float Reduce(DF df, const float* HWY_RESTRICT x, size_t n, Accumulate accumulate) {
  const size_t N = hn::Lanes(df);
  auto sum0 = hn::Zero(df);
  auto sum1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    sum0 = accumulate(sum0, hn::LoadU(df, x + i));
    sum1 = accumulate(sum1, hn::LoadU(df, x + i + N));
  }
  for (; i + N <= n; i += N) sum0 = accumulate(sum0, hn::LoadU(df, x + i));
  if (i < n) sum1 = accumulate(sum1, LoadPartialAsF32(df, x + i, n - i));
  return ReduceSum(df, hn::Add(sum0, sum1));
}

// Sum of x[i]^2 over x: [n], in f32.
template <class DF>
HWY_INLINE float SumOfSquares(DF df, const float* HWY_RESTRICT x, size_t n) {
  return Reduce(df, x, n, [](auto acc, auto v) { return hn::MulAdd(v, v, acc); });
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_SIMD_HELPERS_INL_H_ toggle
