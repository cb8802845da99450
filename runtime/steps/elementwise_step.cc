// Add and GatedActivation: element-wise over two per-token inputs of the same row length.
#include "ops/elementwise.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

using BinaryFn = void (*)(const float* a, const float* b, float* out, size_t n);

struct BinaryArgs {
  BinaryFn kernel;
  const float* a;  // [tokens, row]
  const float* b;  // [tokens, row]
  float* out;      // [tokens, row]
  size_t row;
};

// Work is split in multiples of this many floats (a cache line and more).
constexpr size_t kElementGrain = 64;

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const BinaryArgs*>(args);
  const size_t total = n * a.row;
  size_t b, e;
  SplitRange((total + kElementGrain - 1) / kElementGrain, thread, n_threads, &b, &e);
  b *= kElementGrain;
  e = e * kElementGrain < total ? e * kElementGrain : total;
  if (b < e) a.kernel(a.a + b, a.b + b, a.out + b, e - b);
}

Status CheckBinary(const OpCheck& c) {
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "first input"));
  KES_RETURN_IF_ERROR(c.Activation(c.In(1), row, "second input"));
  return c.Activation(c.Out(0), row, "output");
}

void BindBinary(const BindContext& b, BinaryFn kernel, Step* step) {
  BinaryArgs a{};
  a.kernel = kernel;
  a.a = reinterpret_cast<const float*>(b.In(0));
  a.b = reinterpret_cast<const float*>(b.In(1));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.row = b.InBuffer(0).row_elems();
  step->Set(Run, Parallelism::kMultiToken, a);
}

BinaryFn ActivationKernel(fb::Activation activation) {
  switch (activation) {
    case fb::Activation::GeluTanh: return ops::ResolveGeluTanhMul();
    case fb::Activation::Silu: return ops::ResolveSiluMul();
  }
  return nullptr;
}

Status CheckGated(const OpCheck& c) {
  const fb::Activation act = c.op().params_as_GatedActivation()->activation();
  KES_RETURN_IF_ERROR(c.Expect(ActivationKernel(act) != nullptr,
                               "unknown activation " + std::to_string(static_cast<int>(act))));
  return CheckBinary(c);
}

void BindGated(const BindContext& b, Step* step) {
  BindBinary(b, ActivationKernel(b.op().params_as_GatedActivation()->activation()), step);
}

void BindAdd(const BindContext& b, Step* step) { BindBinary(b, ops::ResolveAdd(), step); }

}  // namespace

const OpKind kAddOp = {fb::OpParams::Add, 2, 1, 0, 0, CheckBinary, BindAdd};
const OpKind kGatedActivationOp = {fb::OpParams::GatedActivation, 2, 1, 0, 0, CheckGated,
                                   BindGated};

}  // namespace kestrel
