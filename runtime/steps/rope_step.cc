// Rope: rotary position embedding in place, NEOX or adjacent pairs, optional frequency factors;
// positions from the step's start, or in an encoder plan from its Positions input.
#include <cmath>

#include "ops/rope.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct RopeArgs {
  decltype(&ops::Rope) kernel;
  float* x;                   // [tokens, n_heads * head_dim]
  const float* freq_factors;  // [rotary_dims / 2] or null
  const int32_t* positions;   // [tokens] (an encoder's sequences), or null: pos0 + token index
  size_t n_heads, head_dim, rotary_dims;
  ops::RopeLayout layout;
  float theta, freq_scale, magnitude;
};

void Run(const void* args, size_t n, int64_t pos0, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const RopeArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  const ops::RopeFrequencies params{a.layout,       a.theta,       a.freq_scale,
                                    a.freq_factors, a.rotary_dims, a.magnitude};
  const size_t row = a.n_heads * a.head_dim;
  if (a.positions == nullptr) {
    if (b < e) a.kernel(a.x + b * row, e - b, a.n_heads, a.head_dim, pos0 + int64_t(b), params);
    return;
  }
  // The kernel takes runs of consecutive positions: one per sequence of the share.
  for (size_t t = b; t < e;) {
    size_t end = t + 1;
    while (end < e && int64_t{a.positions[end]} == int64_t{a.positions[end - 1]} + 1) ++end;
    a.kernel(a.x + t * row, end - t, a.n_heads, a.head_dim, a.positions[t], params);
    t = end;
  }
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
  KES_RETURN_IF_ERROR(c.Expect(p.rotary_dim() % 2 == 0 && p.rotary_dim() <= p.head_dim(), [&] {
    return "expected an even rotary_dim no larger than head_dim " + std::to_string(p.head_dim()) +
           " (0: the whole head), found " + std::to_string(p.rotary_dim());
  }));
  KES_RETURN_IF_ERROR(c.Expect(p.theta() > 0.0f && p.freq_scale() > 0.0f && p.magnitude() > 0.0f &&
                                   std::isfinite(p.magnitude()),
                               "theta, frequency scale and magnitude must be positive"));
  KES_RETURN_IF_ERROR(c.Expect((c.n_weights() == 2) == (p.long_factors_above() > 0), [&] {
    return "expected two sets of frequency factors exactly when long_factors_above is set "
           "(LongRoPE), found " +
           std::to_string(c.n_weights()) + " and " + std::to_string(p.long_factors_above());
  }));
  for (uint32_t i = 0; i < c.n_weights(); ++i) {
    KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(i), RotaryDims(p) / 2, "frequency factors"));
  }
  KES_RETURN_IF_ERROR(c.Expect(c.n_inputs() == 1 || c.InputIs(1, fb::IoRole::Positions),
                               "the second input must be the plan's positions"));
  return c.Activation(c.In(0), uint64_t{p.n_heads()} * p.head_dim(), "input");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Rope& p = *b.op().params_as_Rope();
  RopeArgs a{};
  a.kernel = ops::ResolveRope();
  a.x = reinterpret_cast<float*>(b.In(0));
  a.freq_factors = RopeFrequencyFactors(b.model(), b.op(), b.memory().context_length);
  if (b.n_inputs() == 2) a.positions = reinterpret_cast<const int32_t*>(b.In(1));
  a.n_heads = p.n_heads();
  a.head_dim = p.head_dim();
  a.rotary_dims = RotaryDims(p);
  a.layout =
      p.style() == fb::RopeStyle::Adjacent ? ops::RopeLayout::kAdjacent : ops::RopeLayout::kNeox;
  a.theta = p.theta();
  a.freq_scale = p.freq_scale();
  a.magnitude = p.magnitude();
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

size_t RotaryDims(const fb::Rope& rope) {
  return ops::RotatedDims(rope.rotary_dim(), rope.head_dim());
}

const float* RopeFrequencyFactors(const Model& model, const fb::Op& rope, size_t context_length) {
  const size_t n = rope.weights() ? rope.weights()->size() : 0;
  if (n == 0) return nullptr;
  const uint32_t long_above = rope.params_as_Rope()->long_factors_above();
  const bool long_factors = n == 2 && long_above > 0 && context_length > long_above;
  const uint32_t factors = rope.weights()->Get(long_factors ? 1 : 0);
  return reinterpret_cast<const float*>(model.TensorData(factors));
}

const OpKind kRopeOp =
    OpKind(fb::OpParams::Rope, Check, Bind).Operands(1, 0).OptionalInputs(1).Weights(0, 2);

}  // namespace kestrel
