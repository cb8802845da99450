// Compiles ops/matmul-inl.h for every Highway target and dispatches to the best one at run time.
#include "ops/matmul.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {

void MatMulF32PerTarget(const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                        float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                        size_t row_begin, size_t row_end) {
  MatMul(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulF16PerTarget(const hwy::float16_t* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                        float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                        size_t row_begin, size_t row_end) {
  MatMul(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulBF16PerTarget(const hwy::bfloat16_t* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                         float* HWY_RESTRICT y, size_t n_tokens, size_t k, size_t n_out,
                         size_t row_begin, size_t row_end) {
  MatMul(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(MatMulF32PerTarget);
HWY_EXPORT(MatMulF16PerTarget);
HWY_EXPORT(MatMulBF16PerTarget);

void MatMulF32(const float* w, const float* x, float* y, size_t n_tokens, size_t k, size_t n_out,
               size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulF32PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulF16(const hwy::float16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
               size_t n_out, size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulF16PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMulBF16(const hwy::bfloat16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
                size_t n_out, size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulBF16PerTarget)(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

KESTREL_DEFINE_RESOLVE(MatMulF32)
KESTREL_DEFINE_RESOLVE(MatMulF16)
KESTREL_DEFINE_RESOLVE(MatMulBF16)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
