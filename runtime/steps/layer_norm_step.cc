// LayerNorm: each token row normalized to zero mean and unit variance, then scaled and shifted.
#include "ops/layernorm.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct LayerNormArgs {
  decltype(&ops::LayerNorm) kernel;
  const float* in;     // [tokens, dim]
  float* out;
  const float* gamma;  // [dim]
  const float* beta;   // [dim]
  size_t dim;
  float eps;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const LayerNormArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b < e) a.kernel(a.in + b * a.dim, a.out + b * a.dim, a.gamma, a.beta, e - b, a.dim, a.eps);
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
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kLayerNormOp = {fb::OpParams::LayerNorm, 1, 1, 2, 2, Check, Bind};

}  // namespace kestrel
