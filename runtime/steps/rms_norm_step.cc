// RmsNorm: each row of `dim` elements (several per token row for per-head QK-norm) normalized.
#include "ops/rmsnorm.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct RmsNormArgs {
  decltype(&ops::RmsNorm) kernel;
  const float* in;  // [tokens, vectors_per_token * dim]
  float* out;
  const float* gamma;  // [dim]
  size_t dim, vectors_per_token;
  float eps;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const RmsNormArgs*>(args);
  size_t b, e;
  SplitRange(n * a.vectors_per_token, thread, n_threads, &b, &e);
  if (b < e) a.kernel(a.in + b * a.dim, a.gamma, a.out + b * a.dim, e - b, a.dim, a.eps);
}

Status Check(const OpCheck& c) {
  const fb::RmsNorm& p = *c.op().params_as_RmsNorm();
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Expect(p.dim() > 0 && row % p.dim() == 0, [&] {
    return "norm length " + std::to_string(p.dim()) + " does not divide rows of " +
           std::to_string(row);
  }));
  KES_RETURN_IF_ERROR(c.Expect(p.eps() > 0.0f, "epsilon must be positive"));
  KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), p.dim(), "gamma"));
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  return c.Activation(c.Out(0), row, "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::RmsNorm& p = *b.op().params_as_RmsNorm();
  RmsNormArgs a{};
  a.kernel = ops::ResolveRmsNorm();
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.gamma = reinterpret_cast<const float*>(b.WeightData(0));
  a.dim = p.dim();
  a.vectors_per_token = b.InBuffer(0).row_elems() / p.dim();
  a.eps = p.eps();
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kRmsNormOp = OpKind(fb::OpParams::RmsNorm, Check, Bind).Operands(1, 1).Weights(1, 1);

}  // namespace kestrel
