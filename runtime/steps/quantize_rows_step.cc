// QuantizeRows: f32 activation rows (times per-channel factors, when the op has them) -> Q8_ACT
// rows, the input of quantized matmuls.
#include "ops/quantize_rows.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

#include <type_traits>

namespace kestrel {
namespace {

// kScaled: the op has channel factors. Bind picks the instantiation, so the step never asks.
template <bool kScaled>
struct QuantizeRowsArgs {
  std::conditional_t<kScaled, decltype(&ops::QuantizeRowsQ8Scaled), decltype(&ops::QuantizeRowsQ8)>
      kernel;
  const float* in;      // [tokens, k]
  const float* factor;  // [k] when kScaled, else unused
  uint8_t* out;         // [tokens, row_bytes]
  size_t k, row_bytes;
};

template <bool kScaled>
void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const QuantizeRowsArgs<kScaled>*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b >= e) return;
  if constexpr (kScaled) {
    a.kernel(a.in + b * a.k, e - b, a.k, a.factor, a.out + b * a.row_bytes);
  } else {
    a.kernel(a.in + b * a.k, e - b, a.k, a.out + b * a.row_bytes);
  }
}

template <bool kScaled>
QuantizeRowsArgs<kScaled> ArgsFor(const BindContext& b) {
  QuantizeRowsArgs<kScaled> a{};
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = b.Out(0);
  a.k = b.InBuffer(0).row_elems();
  a.row_bytes = RowBytes(fb::DType::Q8_ACT, a.k);
  return a;
}

Status Check(const OpCheck& c) {
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  if (c.n_weights() == 1) KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), row, "channel factors"));
  return c.QuantizedActivation(c.Out(0), row, "output");
}

void Bind(const BindContext& b, Step* step) {
  if (b.n_weights() == 1) {
    QuantizeRowsArgs<true> a = ArgsFor<true>(b);
    a.kernel = ops::ResolveQuantizeRowsQ8Scaled();
    a.factor = reinterpret_cast<const float*>(b.WeightData(0));
    step->Set(Run<true>, Parallelism::kMultiToken, a);
  } else {
    QuantizeRowsArgs<false> a = ArgsFor<false>(b);
    a.kernel = ops::ResolveQuantizeRowsQ8();
    step->Set(Run<false>, Parallelism::kMultiToken, a);
  }
}

}  // namespace

const OpKind kQuantizeRowsOp = {fb::OpParams::QuantizeRows, 1, 1, 0, 1, Check, Bind};

}  // namespace kestrel
