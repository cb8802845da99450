// Embed: token ids -> rows of the embedding table, scaled. The lookup is bound per table dtype.
#include <cmath>

#include "ops/embed.h"
#include "runtime/format.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

using LookupFn = void (*)(const void* table, size_t vocab, size_t dim, const int32_t* tokens,
                          size_t n_tokens, float scale, float* out);

struct EmbedArgs {
  LookupFn lookup;
  const void* table;   // [vocab, dim]
  size_t vocab, dim;
  const int32_t* tokens;
  float* out;          // [tokens, dim]
  float scale;
};

template <typename T, void (*Kernel)(const T*, size_t, const int32_t*, size_t, float, float*)>
void LookupDense(const void* table, size_t, size_t dim, const int32_t* tokens, size_t n,
                 float scale, float* out) {
  Kernel(static_cast<const T*>(table), dim, tokens, n, scale, out);
}

template <void (*Kernel)(const uint8_t*, size_t, size_t, const int32_t*, size_t, float, float*)>
void LookupQuantized(const void* table, size_t vocab, size_t dim, const int32_t* tokens, size_t n,
                     float scale, float* out) {
  Kernel(static_cast<const uint8_t*>(table), vocab, dim, tokens, n, scale, out);
}

LookupFn LookupFor(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F16: return LookupDense<hwy::float16_t, ops::EmbedF16>;
    case fb::DType::BF16: return LookupDense<hwy::bfloat16_t, ops::EmbedBF16>;
    case fb::DType::Q8_0: return LookupQuantized<ops::EmbedQ8>;
    case fb::DType::Q4_0: return LookupQuantized<ops::EmbedQ4>;
    case fb::DType::F32: return LookupDense<float, ops::EmbedF32>;
    default: return nullptr;
  }
}

void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const EmbedArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b < e) a.lookup(a.table, a.vocab, a.dim, a.tokens + b, e - b, a.scale, a.out + b * a.dim);
}

Status Check(const OpCheck& c) {
  const fb::Buffer& tokens = c.In(0);
  KES_RETURN_IF_ERROR(c.Expect(tokens.dtype() == fb::DType::I32 && tokens.row_elems() == 1 &&
                                   tokens.per_token(),
                               "input must be the i32 token ids, one per row"));
  const fb::Tensor& table = c.Weight(0);
  KES_RETURN_IF_ERROR(c.Matrix(table, "embedding table"));
  KES_RETURN_IF_ERROR(c.Expect(LookupFor(table.dtype()) != nullptr,
                               std::string("embedding table: no lookup for dtype ") +
                                   DTypeName(table.dtype())));
  const uint64_t vocab = c.model().hparams()->vocab_size();
  KES_RETURN_IF_ERROR(c.Expect(table.shape()->Get(0) == vocab,
                               "embedding table has " + std::to_string(table.shape()->Get(0)) +
                                   " rows, expected vocab_size " + std::to_string(vocab)));
  const float scale = c.op().params_as_Embed()->scale();
  KES_RETURN_IF_ERROR(c.Expect(std::isfinite(scale), "scale must be finite"));
  return c.Activation(c.Out(0), table.shape()->Get(1), "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Tensor& table = b.Weight(0);
  EmbedArgs a{};
  a.lookup = LookupFor(table.dtype());
  a.table = b.WeightData(0);
  a.vocab = table.shape()->Get(0);
  a.dim = table.shape()->Get(1);
  a.tokens = reinterpret_cast<const int32_t*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.scale = b.op().params_as_Embed()->scale();
  step->Set(Run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kEmbedOp = {fb::OpParams::Embed, 1, 1, 1, 1, Check, Bind};

}  // namespace kestrel
