// MatMul: out = in W^T (+ bias), the kernel bound per weight dtype; threads split output rows.
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/matmul_quant.h"
#include "ops/quant_layout.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

// Same contract as ops/matmul.h; x is f32 rows or Q8_ACT rows as the weight dtype needs.
using KernelFn = void (*)(const void* w, const void* x, float* y, size_t n_tokens, size_t k,
                          size_t n_out, size_t row_begin, size_t row_end);

struct MatMulArgs {
  KernelFn kernel;
  const void* w;        // [n_out, k]
  const float* bias;    // [n_out] or null
  const uint8_t* x;     // [tokens, x_row_bytes]
  float* y;             // [tokens or 1, n_out]
  size_t k, n_out, x_row_bytes;
  bool last_row_only;
};

template <typename T, void (*Kernel)(const T*, const float*, float*, size_t, size_t, size_t,
                                     size_t, size_t)>
void Dense(const void* w, const void* x, float* y, size_t n, size_t k, size_t n_out, size_t b,
           size_t e) {
  Kernel(static_cast<const T*>(w), static_cast<const float*>(x), y, n, k, n_out, b, e);
}

template <void (*Kernel)(const uint8_t*, const uint8_t*, float*, size_t, size_t, size_t, size_t,
                         size_t)>
void Quantized(const void* w, const void* x, float* y, size_t n, size_t k, size_t n_out, size_t b,
               size_t e) {
  Kernel(static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(x), y, n, k, n_out, b, e);
}

KernelFn KernelFor(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return Dense<float, ops::MatMulF32>;
    case fb::DType::F16: return Dense<hwy::float16_t, ops::MatMulF16>;
    case fb::DType::BF16: return Dense<hwy::bfloat16_t, ops::MatMulBF16>;
    case fb::DType::Q8_0: return Quantized<ops::MatMulQ8>;
    case fb::DType::Q4_0: return Quantized<ops::MatMulQ4>;
    default: return nullptr;
  }
}

// Output rows for this thread, in whole groups of kQuantGroupRows (the kernels' row tile and the
// packing unit of quantized weights) so no thread gets a partial tile.
void ThreadRows(size_t rows, size_t thread, size_t n_threads, size_t* begin, size_t* end) {
  constexpr size_t kGroup = ops::kQuantGroupRows;
  SplitRange((rows + kGroup - 1) / kGroup, thread, n_threads, begin, end);
  *begin = *begin * kGroup < rows ? *begin * kGroup : rows;
  *end = *end * kGroup < rows ? *end * kGroup : rows;
}

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const MatMulArgs*>(args);
  size_t b, e;
  ThreadRows(a.n_out, thread, n_threads, &b, &e);
  if (b == e) return;
  const size_t n_rows = a.last_row_only ? 1 : n;
  const uint8_t* x = a.x + (a.last_row_only ? (n - 1) * a.x_row_bytes : 0);
  a.kernel(a.w, x, a.y, n_rows, a.k, a.n_out, b, e);
  if (a.bias == nullptr) return;
  for (size_t t = 0; t < n_rows; ++t) {
    float* row = a.y + t * a.n_out;
    ops::Add(row + b, a.bias + b, row + b, e - b);
  }
}

Status Check(const OpCheck& c) {
  const fb::Tensor& w = c.Weight(0);
  KES_RETURN_IF_ERROR(c.Matrix(w, "weight"));
  KES_RETURN_IF_ERROR(c.Expect(KernelFor(w.dtype()) != nullptr,
                               std::string("weight: no matmul kernel for dtype ") +
                                   DTypeName(w.dtype())));
  const uint64_t n_out = w.shape()->Get(0), k = w.shape()->Get(1);
  KES_RETURN_IF_ERROR(IsBlockQuantized(w.dtype()) ? c.QuantizedActivation(c.In(0), k, "input")
                                                  : c.Activation(c.In(0), k, "input"));
  if (c.n_weights() == 2) KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(1), n_out, "bias"));
  const fb::Buffer& y = c.Out(0);
  if (c.op().params_as_MatMul()->last_row_only()) {
    return c.Expect(y.dtype() == fb::DType::F32 && !y.per_token() && y.fixed_rows() == 1 &&
                        y.row_elems() == n_out,
                    "last-row output must be one f32 row of " + std::to_string(n_out));
  }
  return c.Activation(y, n_out, "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Tensor& w = b.Weight(0);
  MatMulArgs a{};
  a.kernel = KernelFor(w.dtype());
  a.w = b.WeightData(0);
  a.bias = b.n_weights() == 2 ? reinterpret_cast<const float*>(b.WeightData(1)) : nullptr;
  a.x = b.In(0);
  a.y = reinterpret_cast<float*>(b.Out(0));
  a.n_out = w.shape()->Get(0);
  a.k = w.shape()->Get(1);
  a.x_row_bytes = RowBytes(b.InBuffer(0).dtype(), a.k);
  a.last_row_only = b.op().params_as_MatMul()->last_row_only();
  step->Set(Run, Parallelism::kAlways, a);
}

}  // namespace

const OpKind kMatMulOp = {fb::OpParams::MatMul, 1, 1, 1, 2, Check, Bind};

}  // namespace kestrel
