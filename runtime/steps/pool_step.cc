// Pool: one embedding per sequence of an encoder step, from its token rows.
#include "ops/pool.h"
#include "runtime/steps/sequences.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct PoolArgs {
  decltype(&ops::PoolRows) kernel;
  const float* in;       // [tokens, dim]
  const int32_t* table;  // [table_rows, 2]
  float* out;            // [table_rows, dim]
  size_t dim, table_rows;
  ops::PoolMode mode;
  bool normalize;
};

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const PoolArgs*>(args);
  size_t b, e;
  SplitRange(CountSequences(a.table, a.table_rows, n), thread, n_threads, &b, &e);
  for (size_t s = b; s < e; ++s) {
    const SequenceSpan span = SequenceAt(a.table, s);
    a.kernel(a.in + span.start * a.dim, span.length, a.dim, a.mode, a.normalize, a.out + s * a.dim);
  }
}

Status Check(const OpCheck& c) {
  const fb::Pool& p = *c.op().params_as_Pool();
  KES_RETURN_IF_ERROR(c.Expect(
      p.mode() == fb::PoolMode::Mean || p.mode() == fb::PoolMode::Cls ||
          p.mode() == fb::PoolMode::Max || p.mode() == fb::PoolMode::Last,
      [&] { return "unknown pooling mode " + std::to_string(static_cast<int>(p.mode())); }));
  const uint64_t row = c.In(0).row_elems();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
  KES_RETURN_IF_ERROR(c.SequenceTable(1));
  return c.PerSequence(c.Out(0), row, "output");
}

ops::PoolMode ModeOf(fb::PoolMode mode) {
  switch (mode) {
    case fb::PoolMode::Cls: return ops::PoolMode::kCls;
    case fb::PoolMode::Max: return ops::PoolMode::kMax;
    case fb::PoolMode::Last: return ops::PoolMode::kLast;
    default: return ops::PoolMode::kMean;
  }
}

void Bind(const BindContext& b, Step* step) {
  const fb::Pool& p = *b.op().params_as_Pool();
  PoolArgs a{};
  a.kernel = ops::ResolvePoolRows();
  a.in = reinterpret_cast<const float*>(b.In(0));
  a.table = reinterpret_cast<const int32_t*>(b.In(1));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.dim = b.InBuffer(0).row_elems();
  a.table_rows = b.InBuffer(1).fixed_rows();
  a.mode = ModeOf(p.mode());
  a.normalize = p.normalize();
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kPoolOp = OpKind(fb::OpParams::Pool, Check, Bind).Operands(2, 1);

}  // namespace kestrel
