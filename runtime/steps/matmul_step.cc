// MatMul: out = in W^T (+ bias), the kernel bound per weight dtype and CPU target; threads split
// output rows. The bias, and the GELU or residual add of the op the executor fused into this step,
// are applied per block of output rows right after the kernel made them.
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/matmul_f32_panels.h"
#include "ops/matmul_blocks.h"
#include "ops/matmul_quant.h"
#include "ops/quant_layout.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

#include <algorithm>

namespace kestrel {
namespace {

// A kernel of ops/matmul.h or ops/matmul_quant.h, resolved to this CPU's target at bind time,
// stored type-erased and called through Run<W, X>, which casts it back to its own type:
// void (*)(const W* w, const X* x, float* y, n_tokens, k, n_out, row_begin, row_end).
using ErasedKernel = void (*)();

struct MatMulArgs {
  ErasedKernel kernel;
  // Bias, activation and residual on blocks of epilogue_tokens output rows, or null: none.
  decltype(&ops::AddBiasRows) epilogue;
  const float* residual;  // [tokens, n_out] added by the epilogue, or null
  const void* w;          // [n_out, k]
  const float* bias;      // [n_out] or null
  const uint8_t* x;       // [tokens, x_row_bytes]
  float* y;               // [tokens or 1, n_out]
  size_t k, n_out, x_row_bytes;
  size_t rows_per_token;   // rows of k (and of n_out) per token row
  size_t epilogue_tokens;  // EpilogueTokens
  size_t row_group;        // ThreadRows' unit
  bool last_row_only;
};

// Rows of output per kernel call when the step has an epilogue, so that the epilogue finds them in
// cache. Quantized weights: 32 rows (of 1536 floats: 192 KiB, a core's L2 share), a multiple of
// the VNNI panels' 16 tokens; those kernels read the weights once per panel of 16 tokens
// anyway. Float weights: the kernels' own token block (ops/matmul-inl.h ForEachTokenBlock:
// 192 KiB of input rows), as a smaller call reads the weights once more per call (32 rows cost
// MiniLM's f32 encoder 5-7%).
constexpr size_t kQuantizedEpilogueTokens = 32;
constexpr size_t kFloatEpilogueBytes = size_t{192} << 10;

size_t EpilogueTokens(bool quantized, size_t x_row_bytes) {
  if (quantized) return kQuantizedEpilogueTokens;
  return std::max<size_t>(kQuantizedEpilogueTokens, kFloatEpilogueBytes / x_row_bytes / 16 * 16);
}

// Output rows for this thread, in whole groups of `group` rows (the kernels' row tile and the
// packing unit: kQuantGroupRows, or kF32PanelRows for panels) so no thread gets a partial tile.
void ThreadRows(size_t rows, size_t group, size_t thread, size_t n_threads, size_t* begin,
                size_t* end) {
  SplitRange((rows + group - 1) / group, thread, n_threads, begin, end);
  *begin = *begin * group < rows ? *begin * group : rows;
  *end = *end * group < rows ? *end * group : rows;
}

// W: the weight element type; X: the input's (float, or uint8_t for Q8_ACT rows).
template <typename W, typename X>
void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  using Kernel = void (*)(const W*, const X*, float*, size_t, size_t, size_t, size_t, size_t);
  const auto& a = *static_cast<const MatMulArgs*>(args);
  const auto kernel = reinterpret_cast<Kernel>(a.kernel);
  const auto* w = static_cast<const W*>(a.w);
  size_t b, e;
  ThreadRows(a.n_out, a.row_group, thread, n_threads, &b, &e);
  if (b == e) return;
  const size_t n_rows = a.last_row_only ? 1 : n * a.rows_per_token;
  const uint8_t* x = a.x + (a.last_row_only ? (n - 1) * a.x_row_bytes : 0);
  if (a.epilogue == nullptr) {
    kernel(w, reinterpret_cast<const X*>(x), a.y, n_rows, a.k, a.n_out, b, e);
    return;
  }
  const float* bias = a.bias == nullptr ? nullptr : a.bias + b;
  for (size_t t0 = 0; t0 < n_rows; t0 += a.epilogue_tokens) {
    const size_t count = std::min(a.epilogue_tokens, n_rows - t0);
    float* y = a.y + t0 * a.n_out;
    kernel(w, reinterpret_cast<const X*>(x + t0 * a.x_row_bytes), y, count, a.k, a.n_out, b, e);
    const float* residual = a.residual == nullptr ? nullptr : a.residual + t0 * a.n_out + b;
    a.epilogue(y + b, a.n_out, count, bias, residual, e - b);
  }
}

Status Check(const OpCheck& c) {
  const fb::Tensor& w = c.Weight(0);
  KES_RETURN_IF_ERROR(c.Matrix(w, "weight"));
  KES_RETURN_IF_ERROR(c.Expect(IsWeightDType(w.dtype()), [&] {
    return std::string("weight: no matmul kernel for dtype ") + DTypeName(w.dtype());
  }));
  const uint64_t n_out = w.shape()->Get(0), k = w.shape()->Get(1);
  const fb::MatMul& params = *c.op().params_as_MatMul();
  const uint64_t m = params.rows_per_token();
  // Several rows per token only for float weights: a q8-activation row has its own layout.
  KES_RETURN_IF_ERROR(c.Expect(
      m >= 1 && m <= 64 && (m == 1 || (!params.last_row_only() && !IsBlockQuantized(w.dtype()))),
      [&] {
        return "rows per token must be 1 to 64 (1 with last_row_only or block-quantized "
               "weights), found " +
               std::to_string(m);
      }));
  KES_RETURN_IF_ERROR(IsBlockQuantized(w.dtype()) ? c.QuantizedActivation(c.In(0), k * m, "input")
                                                  : c.Activation(c.In(0), k * m, "input"));
  if (c.n_weights() == 2) KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(1), n_out, "bias"));
  const fb::Buffer& y = c.Out(0);
  if (c.op().params_as_MatMul()->last_row_only()) {
    return c.Expect(
        y.dtype() == fb::DType::F32 && !y.per_token() && y.fixed_rows() == 1 &&
            y.row_elems() == n_out,
        [&] { return "last-row output must be one f32 row of " + std::to_string(n_out); });
  }
  return c.Activation(y, n_out * m, "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Tensor& w = b.Weight(0);
  MatMulArgs a{};
  StepFn run = nullptr;
  const auto erase = [](auto kernel) { return reinterpret_cast<ErasedKernel>(kernel); };
  const DTypeRow& row = *FindDType(w.dtype());  // Check allows weight dtypes only
  switch (row.kernels) {
    case KernelFamily::kF16:
      a.kernel = erase(ops::ResolveMatMulF16());
      run = Run<hwy::float16_t, float>;
      break;
    case KernelFamily::kBF16:
      a.kernel = erase(ops::ResolveMatMulBF16());
      run = Run<hwy::bfloat16_t, float>;
      break;
    case KernelFamily::kQ8_0:
      a.kernel = erase(ops::ResolveMatMulQ8());
      run = Run<uint8_t, uint8_t>;
      break;
    case KernelFamily::kQ4_0:
      a.kernel = erase(ops::ResolveMatMulQ4());
      run = Run<uint8_t, uint8_t>;
      break;
    case KernelFamily::kF32:
      a.kernel = erase(ops::ResolveMatMulF32());
      run = Run<float, float>;
      break;
    case KernelFamily::kF32Panels:
      a.kernel = erase(ops::ResolveMatMulF32Panels());
      run = Run<float, float>;
      break;
    case KernelFamily::kKeptBlocks:
      a.kernel = erase(ops::ResolveBlockMatMul(*row.block));
      run = Run<uint8_t, uint8_t>;
      break;
    case KernelFamily::kNone: break;
  }
  a.w = b.WeightData(0);
  a.bias = b.n_weights() == 2 ? reinterpret_cast<const float*>(b.WeightData(1)) : nullptr;
  // The op the executor fused into this step (BoundPlan::Bind's FusesIntoMatMul): a GeluErf
  // Activate of the output, or an Add of a residual buffer to it.
  const fb::Op* next = b.fused_next();
  if (next != nullptr && next->params_type() == fb::OpParams::Activate) {
    a.epilogue = ops::ResolveBiasGeluErfRows();
  } else if (next != nullptr || a.bias != nullptr) {
    a.epilogue = ops::ResolveAddBiasRows();
  }
  if (next != nullptr && next->params_type() == fb::OpParams::Add) {
    const uint32_t out = b.op().outputs()->Get(0), first = next->inputs()->Get(0);
    a.residual =
        reinterpret_cast<const float*>(b.BufferData(first == out ? next->inputs()->Get(1) : first));
  }
  a.x = b.In(0);
  a.y = reinterpret_cast<float*>(b.Out(0));
  a.n_out = w.shape()->Get(0);
  a.k = w.shape()->Get(1);
  a.x_row_bytes = RowBytes(b.InBuffer(0).dtype(), a.k);
  a.epilogue_tokens = EpilogueTokens(IsBlockQuantized(w.dtype()), a.x_row_bytes);
  a.row_group =
      w.dtype() == fb::DType::F32_PANELS ? ops::kF32PanelRows : size_t{ops::kQuantGroupRows};
  a.last_row_only = b.op().params_as_MatMul()->last_row_only();
  a.rows_per_token = b.op().params_as_MatMul()->rows_per_token();
  step->Set(run, Parallelism::kAlways, a);
}

}  // namespace

const OpKind kMatMulOp = OpKind(fb::OpParams::MatMul, Check, Bind).Operands(1, 1).Weights(1, 2);

}  // namespace kestrel
