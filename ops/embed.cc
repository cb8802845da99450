// Embedding lookup, compiled for every Highway target and dispatched at run time.
#include "ops/embed.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/embed.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// table: [vocab, dim], tokens: [n_tokens], out: [n_tokens, dim].
template <typename T>
void Embed(const T* HWY_RESTRICT table, size_t dim, const int32_t* HWY_RESTRICT tokens,
           size_t n_tokens, float scale, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto vscale = hn::Set(df, scale);
  for (size_t t = 0; t < n_tokens; ++t) {
    const T* HWY_RESTRICT row = table + static_cast<size_t>(tokens[t]) * dim;
    float* HWY_RESTRICT dst = out + t * dim;
    size_t i = 0;
    for (; i + N <= dim; i += N) {
      hn::StoreU(hn::Mul(LoadAsF32(df, row + i), vscale), df, dst + i);
    }
    if (i < dim) {
      const size_t rest = dim - i;
      StorePartial(df, hn::Mul(LoadPartialAsF32(df, row + i, rest), vscale), dst + i, rest);
    }
  }
}

void EmbedF32PerTarget(const float* HWY_RESTRICT table, size_t dim,
                       const int32_t* HWY_RESTRICT tokens, size_t n_tokens, float scale,
                       float* HWY_RESTRICT out) {
  Embed(table, dim, tokens, n_tokens, scale, out);
}
void EmbedF16PerTarget(const hwy::float16_t* HWY_RESTRICT table, size_t dim,
                       const int32_t* HWY_RESTRICT tokens, size_t n_tokens, float scale,
                       float* HWY_RESTRICT out) {
  Embed(table, dim, tokens, n_tokens, scale, out);
}
void EmbedBF16PerTarget(const hwy::bfloat16_t* HWY_RESTRICT table, size_t dim,
                        const int32_t* HWY_RESTRICT tokens, size_t n_tokens, float scale,
                        float* HWY_RESTRICT out) {
  Embed(table, dim, tokens, n_tokens, scale, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(EmbedF32PerTarget);
HWY_EXPORT(EmbedF16PerTarget);
HWY_EXPORT(EmbedBF16PerTarget);

void EmbedF32(const float* table, size_t dim, const int32_t* tokens, size_t n_tokens, float scale,
              float* out) {
  HWY_DYNAMIC_DISPATCH(EmbedF32PerTarget)(table, dim, tokens, n_tokens, scale, out);
}
void EmbedF16(const hwy::float16_t* table, size_t dim, const int32_t* tokens, size_t n_tokens,
              float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(EmbedF16PerTarget)(table, dim, tokens, n_tokens, scale, out);
}
void EmbedBF16(const hwy::bfloat16_t* table, size_t dim, const int32_t* tokens, size_t n_tokens,
               float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(EmbedBF16PerTarget)(table, dim, tokens, n_tokens, scale, out);
}

KESTREL_DEFINE_RESOLVE(EmbedF32)
KESTREL_DEFINE_RESOLVE(EmbedF16)
KESTREL_DEFINE_RESOLVE(EmbedBF16)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
