// QuantizeRows: f32 activation rows (times per-channel factors, when the op has them) -> Q8_ACT
// rows, the input of quantized matmuls.
#include "ops/quantize_rows.h"
#include "runtime/format.h"
#include "runtime/steps/quantize_rows_step.h"
#include "runtime/steps/steps.h"

#include <string>
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
  KES_RETURN_IF_ERROR(
      CheckQuantizeScaleBlock(*c.op().params_as_QuantizeRows(), row, c.n_weights() == 1));
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
    a.kernel = ResolveQuantizeRows(*b.op().params_as_QuantizeRows());
    step->Set(Run<false>, Parallelism::kMultiToken, a);
  }
}

}  // namespace

Status CheckQuantizeScaleBlock(const fb::QuantizeRows& params, uint64_t row_elems,
                               bool has_factors) {
  const uint32_t block = params.scale_block();
  KES_CHECK_OR_RETURN(
      block == 32 || block == 256,
      "QuantizeRows: expected scale_block 32 or 256, found " + std::to_string(block));
  if (block == 256) {
    KES_CHECK_OR_RETURN(row_elems % 256 == 0,
                        "QuantizeRows: scale_block 256 needs rows of a multiple of 256 "
                        "elements, found " +
                            std::to_string(row_elems));
    KES_CHECK_OR_RETURN(!has_factors,
                        "QuantizeRows: scale_block 256 with channel factors is not supported");
  }
  return OkStatus();
}

decltype(&ops::QuantizeRowsQ8) ResolveQuantizeRows(const fb::QuantizeRows& params) {
  return params.scale_block() == 256 ? ops::ResolveQuantizeRowsQ8Super()
                                     : ops::ResolveQuantizeRowsQ8();
}

const OpKind kQuantizeRowsOp =
    OpKind(fb::OpParams::QuantizeRows, Check, Bind).Operands(1, 1).Weights(0, 1);

}  // namespace kestrel
