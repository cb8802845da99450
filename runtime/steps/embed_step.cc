// Embed: ids (tokens, or an encoder's positions and token types) -> rows of a table, scaled.
// The lookup is bound per table dtype.
#include <cmath>

#include "ops/embed.h"
#include "runtime/format.h"
#include "runtime/plan_check.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

// A lookup of ops/embed.h, resolved to this CPU's target at bind time where it has one, stored
// type-erased and called through RunDense<T> or RunPacked<T>, which cast it back.
using ErasedLookup = void (*)();

struct EmbedArgs {
  ErasedLookup lookup;
  const void* table;  // [vocab, dim]
  size_t vocab, dim;
  const int32_t* tokens;
  float* out;  // [tokens, dim]
  float scale;
};

// The lookup of a kept GGUF type: plain code, nothing to dispatch.
ErasedLookup BlockLookup(ops::GgmlBlockType type) {
  switch (type) {
#define KESTREL_BLOCK_LOOKUP(T) \
  case ops::GgmlBlockType::k##T: return reinterpret_cast<ErasedLookup>(&ops::Embed##T);
    KESTREL_BLOCK_TYPES(KESTREL_BLOCK_LOOKUP)
#undef KESTREL_BLOCK_LOOKUP
    default: return nullptr;  // Q4_0 and Q8_0 have their own layout and lookups
  }
}

template <typename T>
void RunDense(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  using Lookup = void (*)(const T*, size_t, const int32_t*, size_t, float, float*);
  const auto& a = *static_cast<const EmbedArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b == e) return;
  reinterpret_cast<Lookup>(a.lookup)(static_cast<const T*>(a.table), a.dim, a.tokens + b, e - b,
                                     a.scale, a.out + b * a.dim);
}

// A table in a packed layout (quantized blocks, f32 panels), whose lookup takes the row count.
template <typename T>
void RunPacked(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  using Lookup = void (*)(const T*, size_t, size_t, const int32_t*, size_t, float, float*);
  const auto& a = *static_cast<const EmbedArgs*>(args);
  size_t b, e;
  SplitRange(n, thread, n_threads, &b, &e);
  if (b == e) return;
  reinterpret_cast<Lookup>(a.lookup)(static_cast<const T*>(a.table), a.vocab, a.dim, a.tokens + b,
                                     e - b, a.scale, a.out + b * a.dim);
}

Status Check(const OpCheck& c) {
  const fb::Buffer& tokens = c.In(0);
  KES_RETURN_IF_ERROR(
      c.Expect(tokens.dtype() == fb::DType::I32 && tokens.row_elems() == 1 && tokens.per_token(),
               "input must be i32 ids, one per row"));
  const fb::Tensor& table = c.Weight(0);
  KES_RETURN_IF_ERROR(c.Matrix(table, "embedding table"));
  KES_RETURN_IF_ERROR(c.Expect(IsWeightDType(table.dtype()), [&] {
    return std::string("embedding table: no lookup for dtype ") + DTypeName(table.dtype());
  }));
  // The ids index the table unchecked at run time: each input role bounds them differently.
  const uint64_t rows = table.shape()->Get(0);
  if (c.InputIs(0, fb::IoRole::TokenIds)) {
    // The session checks every token id against vocab_size.
    const uint64_t vocab = c.model().hparams()->vocab_size();
    KES_RETURN_IF_ERROR(c.Expect(rows == vocab, [&] {
      return "embedding table has " + std::to_string(rows) + " rows, expected vocab_size " +
             std::to_string(vocab);
    }));
  } else if (c.InputIs(0, fb::IoRole::Positions)) {
    // A text encoder's or decoder's positions run from 0 to the context_length - 1. An audio
    // encoder's (its plan takes audio features) cover one window, the plan's max_tokens: in an
    // encoder-decoder the context is the decoder's, which may be longer.
    const bool audio = FindPlanIo(c.plan(), fb::IoRole::AudioFeatures) >= 0;
    const uint64_t longest = audio ? c.plan().max_tokens() : c.model().hparams()->context_length();
    KES_RETURN_IF_ERROR(c.Expect(rows >= longest, [&] {
      return "position table has " + std::to_string(rows) + " rows, expected at least " +
             (audio ? "the window's " : "context_length ") + std::to_string(longest);
    }));
  } else {
    // The encoder writes segment 0 for every token of a single text.
    KES_RETURN_IF_ERROR(c.Expect(c.InputIs(0, fb::IoRole::TokenTypes),
                                 "input must be the plan's token ids, positions or token types"));
  }
  const float scale = c.op().params_as_Embed()->scale();
  KES_RETURN_IF_ERROR(c.Expect(std::isfinite(scale), "scale must be finite"));
  return c.Activation(c.Out(0), table.shape()->Get(1), "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Tensor& table = b.Weight(0);
  EmbedArgs a{};
  StepFn run = RunPacked<uint8_t>;
  const auto erase = [](auto lookup) { return reinterpret_cast<ErasedLookup>(lookup); };
  const DTypeRow& row = *FindDType(table.dtype());  // Check allows weight dtypes only
  switch (row.kernels) {
    case KernelFamily::kF16:
      a.lookup = erase(ops::ResolveEmbedF16());
      run = RunDense<hwy::float16_t>;
      break;
    case KernelFamily::kBF16:
      a.lookup = erase(ops::ResolveEmbedBF16());
      run = RunDense<hwy::bfloat16_t>;
      break;
    case KernelFamily::kQ8_0:  // one row dequantized per token: plain code, nothing to dispatch
      a.lookup = erase(&ops::EmbedQ8);
      break;
    case KernelFamily::kQ4_0: a.lookup = erase(&ops::EmbedQ4); break;
    case KernelFamily::kF32:
      a.lookup = erase(ops::ResolveEmbedF32());
      run = RunDense<float>;
      break;
    case KernelFamily::kF32Panels:  // a tied output projection's panels: a strided copy
      a.lookup = erase(&ops::EmbedF32Panels);
      run = RunPacked<float>;
      break;
    case KernelFamily::kKeptBlocks: a.lookup = BlockLookup(*row.block); break;
    case KernelFamily::kNone: break;
  }
  a.table = b.WeightData(0);
  a.vocab = table.shape()->Get(0);
  a.dim = table.shape()->Get(1);
  a.tokens = reinterpret_cast<const int32_t*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.scale = b.op().params_as_Embed()->scale();
  step->Set(run, Parallelism::kMultiToken, a);
}

}  // namespace

const OpKind kEmbedOp = OpKind(fb::OpParams::Embed, Check, Bind).Operands(1, 1).Weights(1, 1);

}  // namespace kestrel
