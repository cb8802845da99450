// Rope: rotary position embedding in place, NEOX or adjacent pairs, optional frequency factors.
#include "ops/rope.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct RopeArgs {
  decltype(&ops::Rope) kernel;
  float* x;                   // [tokens, n_heads * head_dim]
  const float* freq_factors;  // [head_dim / 2] or null
  size_t n_heads, head_dim;
  ops::RopeLayout layout;
  float theta, freq_scale;
};

void Run(const void* args, size_t n, int64_t pos0, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const RopeArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b == e) return;
  a.kernel(a.x + b * a.n_heads * a.head_dim, e - b, a.n_heads, a.head_dim,
            pos0 + static_cast<int64_t>(b),
            {a.layout, a.theta, a.freq_scale, a.freq_factors});
}

Status Check(const OpCheck& c) {
  const fb::Rope& p = *c.op().params_as_Rope();
  KES_RETURN_IF_ERROR(c.Expect(
      p.style() == fb::RopeStyle::Neox || p.style() == fb::RopeStyle::Adjacent,
      [&] { return "unknown RoPE style " + std::to_string(static_cast<int>(p.style())); }));
  KES_RETURN_IF_ERROR(c.Expect(p.n_heads() > 0 && p.n_heads() <= 65536 && p.head_dim() > 0 &&
                                   p.head_dim() % 2 == 0 && p.head_dim() <= ops::kRopeMaxHeadDim,
                               [&] {
                                 return "expected heads > 0 and an even head_dim <= " +
                                        std::to_string(ops::kRopeMaxHeadDim) + ", found " +
                                        std::to_string(p.n_heads()) + " x " +
                                        std::to_string(p.head_dim());
                               }));
  KES_RETURN_IF_ERROR(c.Expect(p.theta() > 0.0f && p.freq_scale() > 0.0f,
                               "theta and frequency scale must be positive"));
  if (c.n_weights() == 1) {
    KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), p.head_dim() / 2, "frequency factors"));
  }
  return c.Activation(c.In(0), uint64_t{p.n_heads()} * p.head_dim(), "input");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Rope& p = *b.op().params_as_Rope();
  RopeArgs a{};
  a.kernel = ops::ResolveRope();
  a.x = reinterpret_cast<float*>(b.In(0));
  a.freq_factors = b.n_weights() == 1 ? reinterpret_cast<const float*>(b.WeightData(0)) : nullptr;
  a.n_heads = p.n_heads();
  a.head_dim = p.head_dim();
  a.layout = p.style() == fb::RopeStyle::Adjacent ? ops::RopeLayout::kAdjacent
                                                   : ops::RopeLayout::kNeox;
  a.theta = p.theta();
  a.freq_scale = p.freq_scale();
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kRopeOp = {fb::OpParams::Rope, 1, 0, 0, 1, Check, Bind};

}  // namespace kestrel
