// Add, GatedActivation and Activate: element-wise over per-token inputs of one row length.
#include <cmath>
#include <string>

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

// Splits the step's elements over the threads in grains; returns false when this share is empty.
bool ThreadShare(size_t total, size_t thread, size_t n_threads, size_t* b, size_t* e) {
  SplitRange((total + kElementGrain - 1) / kElementGrain, thread, n_threads, b, e);
  *b *= kElementGrain;
  *e = *e * kElementGrain < total ? *e * kElementGrain : total;
  return *b < *e;
}

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const BinaryArgs*>(args);
  size_t b, e;
  if (ThreadShare(n * a.row, thread, n_threads, &b, &e)) {
    a.kernel(a.a + b, a.b + b, a.out + b, e - b);
  }
}

using UnaryFn = void (*)(const float* in, float* out, size_t n);

struct UnaryArgs {
  UnaryFn kernel;  // null for SoftCap, which takes cap
  decltype(&ops::SoftCap) softcap;
  float cap;
  const float* in;  // [tokens, row]
  float* out;       // [tokens, row]
  size_t row;
  size_t fixed_rows;  // > 0: in and out are fixed buffers of this many rows, whatever the step
};

void RunUnary(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const UnaryArgs*>(args);
  if (a.fixed_rows > 0) n = a.fixed_rows;
  size_t b, e;
  if (!ThreadShare(n * a.row, thread, n_threads, &b, &e)) return;
  if (a.kernel != nullptr) {
    a.kernel(a.in + b, a.out + b, e - b);
  } else {
    a.softcap(a.in + b, a.out + b, e - b, a.cap);
  }
}

// The activations that have an element-wise (not gated) kernel.
UnaryFn UnaryKernel(fb::Activation activation) {
  return activation == fb::Activation::GeluErf ? ops::ResolveGeluErf() : nullptr;
}

Status CheckUnary(const OpCheck& c) {
  const fb::Activate& p = *c.op().params_as_Activate();
  const fb::Activation act = p.activation();
  if (act == fb::Activation::SoftCap) {
    KES_RETURN_IF_ERROR(c.Expect(std::isfinite(p.cap()) && p.cap() > 0.0f, [&] {
      return "SoftCap needs a positive finite cap, found " + std::to_string(p.cap());
    }));
  }
  KES_RETURN_IF_ERROR(c.Expect(act == fb::Activation::SoftCap || UnaryKernel(act) != nullptr, [&] {
    return std::string("no element-wise kernel for activation ") + fb::EnumNameActivation(act);
  }));
  const uint64_t row = c.In(0).row_elems();
  if (act == fb::Activation::SoftCap && !c.In(0).per_token()) {
    // A fixed buffer: the logits of prefill's last row.
    const fb::Buffer& in = c.In(0);
    const fb::Buffer& out = c.Out(0);
    return c.Expect(in.dtype() == fb::DType::F32 && out.dtype() == fb::DType::F32 &&
                        !out.per_token() && out.row_elems() == row &&
                        out.fixed_rows() == in.fixed_rows(),
                    "SoftCap of a fixed buffer: expected f32 input and output of the same shape");
  }
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  return c.Activation(c.Out(0), row, "output");
}

void BindUnary(const BindContext& b, Step* step) {
  UnaryArgs a{};
  a.kernel = UnaryKernel(b.op().params_as_Activate()->activation());
  a.softcap = ops::ResolveSoftCap();
  a.cap = b.op().params_as_Activate()->cap();
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.row = b.InBuffer(0).row_elems();
  a.fixed_rows = b.InBuffer(0).per_token() ? 0 : b.InBuffer(0).fixed_rows();
  step->Set(RunUnary, Parallelism::kMultiToken, a);
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
    default: return nullptr;
  }
  return nullptr;
}

Status CheckGated(const OpCheck& c) {
  const fb::Activation act = c.op().params_as_GatedActivation()->activation();
  KES_RETURN_IF_ERROR(c.Expect(ActivationKernel(act) != nullptr, [&] {
    return "unknown activation " + std::to_string(static_cast<int>(act));
  }));
  return CheckBinary(c);
}

void BindGated(const BindContext& b, Step* step) {
  BindBinary(b, ActivationKernel(b.op().params_as_GatedActivation()->activation()), step);
}

void BindAdd(const BindContext& b, Step* step) { BindBinary(b, ops::ResolveAdd(), step); }

}  // namespace

const OpKind kAddOp = OpKind(fb::OpParams::Add, CheckBinary, BindAdd).Operands(2, 1);
const OpKind kActivateOp = OpKind(fb::OpParams::Activate, CheckUnary, BindUnary).Operands(1, 1);
const OpKind kGatedActivationOp =
    OpKind(fb::OpParams::GatedActivation, CheckGated, BindGated).Operands(2, 1);

}  // namespace kestrel
