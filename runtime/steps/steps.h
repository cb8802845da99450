// The op kinds of the plan contract, one per file in this folder (<op>_step.cc: its check, bind
// and run), and the table that finds them by union member.
//
// To add an op: a table in schema/kestrel.fbs's OpParams union, a <op>_step.cc here defining its
// OpKind, a line in KESTREL_OP_KINDS below, and a PlanBuilder call in converters/kes_model.h.
#pragma once

#include "runtime/op_kind.h"

namespace kestrel {

#define KESTREL_OP_KINDS(X) \
  X(Embed)                  \
  X(RmsNorm)                \
  X(MatMul)                 \
  X(Rope)                   \
  X(KvStore)                \
  X(Attention)              \
  X(GatedActivation)        \
  X(Add)                    \
  X(QuantizeRows)           \
  X(SequenceAttention)      \
  X(LayerNorm)              \
  X(Activate)               \
  X(Pool)                   \
  X(Im2Col)

#define KESTREL_DECLARE_OP_KIND(name) extern const OpKind k##name##Op;
KESTREL_OP_KINDS(KESTREL_DECLARE_OP_KIND)
#undef KESTREL_DECLARE_OP_KIND

// The entry for an op's union member; nullptr for NONE and for members this build lacks.
const OpKind* FindOpKind(fb::OpParams params);

// The elements of each head a Rope op turns: its rotary_dim, or the whole head when that is 0.
size_t RotaryDims(const fb::Rope& rope);

// The frequency factors ([RotaryDims / 2] divisors) a Rope op turns by in a session of
// `context_length` tokens: none, its one weight, or with LongRoPE (long_factors_above > 0) the
// long factors when the context is longer than that, else the short ones. The Rope step and the
// attention step that re-rotates its keys both ask here, so they cannot disagree.
const float* RopeFrequencyFactors(const Model& model, const fb::Op& rope, size_t context_length);

}  // namespace kestrel
