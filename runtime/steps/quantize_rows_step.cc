// QuantizeRows: f32 activation rows (times per-channel factors, when the op has them) -> Q8_ACT
// rows, the input of quantized matmuls.
#include "ops/quantize_rows.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct QuantizeRowsArgs {
  decltype(&ops::QuantizeRowsQ8) kernel;
  decltype(&ops::QuantizeRowsQ8Scaled) scaled_kernel;  // with factor
  const float* in;      // [tokens, k]
  const float* factor;  // [k], or nullptr
  uint8_t* out;     // [tokens, row_bytes]
  size_t k, row_bytes;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const QuantizeRowsArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b >= e) return;
  if (a.factor != nullptr) {
    a.scaled_kernel(a.in + b * a.k, e - b, a.k, a.factor, a.out + b * a.row_bytes);
  } else {
    a.kernel(a.in + b * a.k, e - b, a.k, a.out + b * a.row_bytes);
  }
}

Status Check(const OpCheck& c) {
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  if (c.n_weights() == 1) KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), row, "channel factors"));
  return c.QuantizedActivation(c.Out(0), row, "output");
}

void Bind(const BindContext& b, Step* step) {
  QuantizeRowsArgs a{};
  a.kernel = ops::ResolveQuantizeRowsQ8();
  a.scaled_kernel = ops::ResolveQuantizeRowsQ8Scaled();
  a.in = reinterpret_cast<const float*>(b.In(0));
  if (b.n_weights() == 1) a.factor = reinterpret_cast<const float*>(b.WeightData(0));
  a.out = b.Out(0);
  a.k = b.InBuffer(0).row_elems();
  a.row_bytes = RowBytes(fb::DType::Q8_ACT, a.k);
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kQuantizeRowsOp = {fb::OpParams::QuantizeRows, 1, 1, 0, 1, Check, Bind};

}  // namespace kestrel
