// LayerNorm: each token row normalized to zero mean and unit variance, then scaled and shifted;
// and the QuantizeRows of its output when the executor fused one into this step.
#include "ops/layernorm.h"
#include "ops/quantize_rows.h"
#include "runtime/format.h"
#include "runtime/steps/quantize_rows_step.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct LayerNormArgs {
  decltype(&ops::LayerNorm) kernel;
  const float* in;  // [tokens, dim]
  float* out;
  const float* gamma;  // [dim]
  const float* beta;   // [dim]
  size_t dim;
  float eps;
  // A QuantizeRows of out fused into this step (BoundPlan::Bind): each thread quantizes the rows
  // it normalized while they are in cache. Used by Run<true, kScaled> only.
  decltype(&ops::QuantizeRowsQ8) quantize;
  decltype(&ops::QuantizeRowsQ8Scaled) quantize_scaled;
  const float* factor;  // [dim], the channel factors of a scaled QuantizeRows
  uint8_t* q_out;       // [tokens, q_row_bytes]
  size_t q_row_bytes;
};

template <bool kQuantize, bool kScaled>
void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const LayerNormArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b >= e) return;
  float* out = a.out + b * a.dim;
  a.kernel(a.in + b * a.dim, out, a.gamma, a.beta, e - b, a.dim, a.eps);
  if constexpr (kQuantize && kScaled) {
    a.quantize_scaled(out, e - b, a.dim, a.factor, a.q_out + b * a.q_row_bytes);
  } else if constexpr (kQuantize) {
    a.quantize(out, e - b, a.dim, a.q_out + b * a.q_row_bytes);
  }
}

Status Check(const OpCheck& c) {
  const float eps = c.op().params_as_LayerNorm()->eps();
  // BERT's 1e-12 is far below float resolution of a variance but still keeps 1/sqrt finite.
  KES_RETURN_IF_ERROR(c.Expect(eps > 0.0f, "epsilon must be positive"));
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), row, "gamma"));
  KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(1), row, "beta"));
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  return c.Activation(c.Out(0), row, "output");
}

void Bind(const BindContext& b, Step* step) {
  LayerNormArgs a{};
  a.kernel = ops::ResolveLayerNorm();
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.gamma = reinterpret_cast<const float*>(b.WeightData(0));
  a.beta = reinterpret_cast<const float*>(b.WeightData(1));
  a.dim = b.InBuffer(0).row_elems();
  a.eps = b.op().params_as_LayerNorm()->eps();
  // The op the executor fused into this step: a QuantizeRows of the output (with or without
  // channel factors), or none.
  const fb::Op* next = b.fused_next();
  if (next == nullptr) {
    step->Set(Run<false, false>, Parallelism::kMultiToken, a);
    return;
  }
  a.q_out = b.BufferData(next->outputs()->Get(0));
  a.q_row_bytes = RowBytes(fb::DType::Q8_ACT, a.dim);
  if (next->weights() != nullptr && next->weights()->size() == 1) {
    a.quantize_scaled = ops::ResolveQuantizeRowsQ8Scaled();
    a.factor = reinterpret_cast<const float*>(b.model().TensorData(next->weights()->Get(0)));
    step->Set(Run<true, true>, Parallelism::kMultiToken, a);
  } else {
    a.quantize = ResolveQuantizeRows(*next->params_as_QuantizeRows());
    step->Set(Run<true, false>, Parallelism::kMultiToken, a);
  }
}

}  // namespace

const OpKind kLayerNormOp =
    OpKind(fb::OpParams::LayerNorm, Check, Bind).Operands(1, 1).Weights(2, 2);

}  // namespace kestrel
