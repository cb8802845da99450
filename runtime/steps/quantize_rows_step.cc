// QuantizeRows: f32 activation rows -> Q8_ACT rows, the input of quantized matmuls.
#include "ops/quantize_rows.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct QuantizeRowsArgs {
  decltype(&ops::QuantizeRowsQ8) kernel;
  const float* in;  // [tokens, k]
  uint8_t* out;     // [tokens, row_bytes]
  size_t k, row_bytes;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const QuantizeRowsArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b < e) a.kernel(a.in + b * a.k, e - b, a.k, a.out + b * a.row_bytes);
}

Status Check(const OpCheck& c) {
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  return c.QuantizedActivation(c.Out(0), row, "output");
}

void Bind(const BindContext& b, Step* step) {
  QuantizeRowsArgs a{};
  a.kernel = ops::ResolveQuantizeRowsQ8();
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.out = b.Out(0);
  a.k = b.InBuffer(0).row_elems();
  a.row_bytes = RowBytes(fb::DType::Q8_ACT, a.k);
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kQuantizeRowsOp = {fb::OpParams::QuantizeRows, 1, 1, 0, 0, Check, Bind};

}  // namespace kestrel
