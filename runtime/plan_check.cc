#include "runtime/plan_check.h"

#include <limits>
#include <string>

#include "runtime/format.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// Largest step any plan may take; bounds arena arithmetic.
constexpr uint64_t kMaxStepTokens = 1 << 16;

// Operand counts and id ranges, the same for every op kind; then the kind's own check.
Status CheckOp(const fb::Model& model, const fb::Plan& plan, const fb::Op& op, uint32_t index) {
  // Messages are built only for an error: checking a good file allocates nothing.
  const auto where = [&] { return "plan '" + plan.name()->str() + "' op " + Num(index); };
  const OpKind* kind = FindOpKind(op.params_type());
  KES_CHECK_OR_RETURN(kind != nullptr && op.params() != nullptr,
                      where() + ": unknown op kind " +
                          Num(static_cast<uint64_t>(op.params_type())) +
                          " (a newer Kestrel wrote this file?)");
  const auto what = [&] { return where() + " (" + fb::EnumNameOpParams(op.params_type()) + ")"; };
  const auto count = [](const auto* v) -> uint64_t { return v ? v->size() : 0; };
  const uint64_t found[3] = {count(op.inputs()), count(op.outputs()), count(op.weights())};
  const uint64_t low[3] = {kind->inputs, kind->outputs, kind->min_weights};
  const uint64_t high[3] = {kind->inputs + kind->optional_inputs, kind->outputs, kind->max_weights};
  const char* names[3] = {"inputs", "outputs", "weights"};
  for (int i = 0; i < 3; ++i) {
    KES_CHECK_OR_RETURN(
        found[i] >= low[i] && found[i] <= high[i],
        what() + ": expected " +
            (low[i] == high[i] ? Num(low[i]) : Num(low[i]) + " to " + Num(high[i])) + " " +
            names[i] + ", found " + Num(found[i]));
  }
  for (const auto* ids : {op.inputs(), op.outputs()}) {
    if (!ids) continue;
    for (uint32_t id : *ids) {
      KES_CHECK_OR_RETURN(id < plan.buffers()->size(),
                          what() + ": buffer id " + Num(id) + " is out of range (plan has " +
                              Num(plan.buffers()->size()) + " buffers)");
    }
  }
  if (op.weights()) {
    for (uint32_t id : *op.weights()) {
      KES_CHECK_OR_RETURN(id < model.tensors()->size(),
                          what() + ": tensor id " + Num(id) + " is out of range (model has " +
                              Num(model.tensors()->size()) + " tensors)");
    }
  }
  return kind->check(OpCheck(model, plan, op, index));
}

Status CheckBuffer(const fb::Plan& plan, const fb::Buffer& b, uint32_t id,
                   uint64_t activation_bytes) {
  const auto where = [&] { return "plan '" + plan.name()->str() + "' buffer " + Num(id); };
  KES_CHECK_OR_RETURN(b.name() != nullptr, where() + ": has no name");
  KES_CHECK_OR_RETURN(
      b.dtype() == fb::DType::F32 || b.dtype() == fb::DType::I32 || b.dtype() == fb::DType::Q8_ACT,
      where() + ": expected dtype f32, i32 or q8-activations, found code " +
          Num(static_cast<uint64_t>(b.dtype())));
  const uint64_t rows = b.per_token() ? plan.max_tokens() : b.fixed_rows();
  KES_CHECK_OR_RETURN(
      rows > 0 && rows <= kMaxStepTokens,
      where() + ": expected 1.." + Num(kMaxStepTokens) + " rows, found " + Num(rows));
  KES_CHECK_OR_RETURN(b.row_elems() > 0 && b.row_elems() <= (uint64_t{1} << 32),
                      where() + ": row length " + Num(b.row_elems()) + " out of range");
  const uint64_t row_bytes = RowBytes(b.dtype(), b.row_elems());
  KES_CHECK_OR_RETURN(row_bytes != 0, where() + ": rows of " + Num(b.row_elems()) +
                                          " elements are not whole 32-element blocks");
  const uint64_t need = rows * row_bytes;
  KES_CHECK_OR_RETURN(b.size() >= need, where() + ": expected at least " + Num(need) +
                                            " bytes, found " + Num(b.size()));
  KES_CHECK_OR_RETURN(
      b.arena_offset() % kKesAlignment == 0,
      where() + ": arena offset " + Num(b.arena_offset()) + " is not 64-byte aligned");
  KES_CHECK_OR_RETURN(
      b.arena_offset() <= activation_bytes && b.size() <= activation_bytes - b.arena_offset(),
      where() + ": bytes [" + Num(b.arena_offset()) + ", " + Num(b.arena_offset() + b.size()) +
          ") exceed the activation region of " + Num(activation_bytes) + " bytes");
  return OkStatus();
}

// Each role's contract, checked generically on the plan's named inputs and outputs.
Status CheckIo(const fb::Model& model, const fb::Plan& plan, const fb::PlanIo* io, bool input) {
  const auto where = [&] {
    return "plan '" + plan.name()->str() + "' " + (input ? "input" : "output");
  };
  KES_CHECK_OR_RETURN(io != nullptr && io->name() != nullptr, where() + " has no name");
  const auto what = [&] { return where() + " '" + io->name()->str() + "'"; };
  KES_CHECK_OR_RETURN(io->buffer() < plan.buffers()->size(),
                      what() + ": buffer id " + Num(io->buffer()) + " out of range");
  const fb::Buffer& b = *plan.buffers()->Get(io->buffer());
  switch (io->role()) {
    case fb::IoRole::TokenIds:
    case fb::IoRole::TokenTypes:
    case fb::IoRole::Positions:
      KES_CHECK_OR_RETURN(input,
                          what() + ": " + fb::EnumNameIoRole(io->role()) + " can only be an input");
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::I32 && b.row_elems() == 1 && b.per_token(),
                          what() + ": expected i32, one value per token");
      return OkStatus();
    case fb::IoRole::Sequences:
      KES_CHECK_OR_RETURN(input, what() + ": the sequence table can only be an input");
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::I32 && b.row_elems() == 2 && !b.per_token(),
                          what() + ": expected a fixed i32 table of (start, length) rows");
      return OkStatus();
    case fb::IoRole::Embeddings:
    case fb::IoRole::Scores:
      KES_CHECK_OR_RETURN(
          !input, what() + ": " + fb::EnumNameIoRole(io->role()) + " can only be an output");
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::F32 && !b.per_token(),
                          what() + ": expected fixed f32 rows, one per sequence");
      return OkStatus();
    case fb::IoRole::AudioFeatures:
      KES_CHECK_OR_RETURN(input, what() + ": audio features can only be an input");
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::F32 && b.per_token() && b.row_elems() > 0,
                          what() + ": expected f32 feature rows, one per token");
      return OkStatus();
    case fb::IoRole::HiddenStates:  // an encoder's output, the cross_kv plan's input
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::F32 && b.per_token() &&
                              b.row_elems() == model.hparams()->d_model(),
                          what() + ": expected f32 rows of d_model " +
                              Num(model.hparams()->d_model()) + ", one per token");
      return OkStatus();
    case fb::IoRole::Logits:
      KES_CHECK_OR_RETURN(!input, what() + ": logits can only be an output");
      KES_CHECK_OR_RETURN(b.dtype() == fb::DType::F32 &&
                              b.row_elems() == model.hparams()->vocab_size() &&
                              (b.per_token() || b.fixed_rows() == 1),
                          what() + ": logits must be f32 rows of vocab_size " +
                              Num(model.hparams()->vocab_size()) + ", one per token or one in all");
      return OkStatus();
  }
  return Status::Error(what() + ": unknown role " + Num(static_cast<uint64_t>(io->role())));
}

Status CheckPlanIo(const fb::Model& model, const fb::Plan& plan) {
  const auto where = [&] { return "plan '" + plan.name()->str() + "'"; };
  bool seen[256] = {};
  // A plan that only fills KV layers (cross_kv) leaves its result in the cache, not an output.
  bool stores_kv = false;
  for (const fb::Op* op : *plan.ops()) stores_kv |= op->params_type() == fb::OpParams::KvStore;
  for (bool input : {true, false}) {
    const auto* list = input ? plan.inputs() : plan.outputs();
    if (!input && stores_kv && (list == nullptr || list->size() == 0)) continue;
    KES_CHECK_OR_RETURN(list != nullptr && list->size() > 0,
                        where() + " declares no " + (input ? "inputs" : "outputs"));
    for (const fb::PlanIo* io : *list) {
      KES_RETURN_IF_ERROR(CheckIo(model, plan, io, input));
      const auto role = static_cast<uint8_t>(io->role());
      KES_CHECK_OR_RETURN(!seen[role], where() + ": more than one " +
                                           fb::EnumNameIoRole(io->role()) + " input or output");
      seen[role] = true;
    }
  }
  // An encoder's step is a batch of sequences: the pooled output has a row per table row.
  const int64_t sequences = FindPlanIo(plan, fb::IoRole::Sequences);
  for (const fb::IoRole pooled : {fb::IoRole::Embeddings, fb::IoRole::Scores}) {
    const int64_t out = FindPlanIo(plan, pooled);
    if (out < 0) continue;
    const std::string name = fb::EnumNameIoRole(pooled);
    KES_CHECK_OR_RETURN(sequences >= 0, where() + ": " + name + " output without a sequence table");
    const uint64_t table_rows = plan.buffers()->Get(static_cast<uint32_t>(sequences))->fixed_rows();
    const uint64_t rows = plan.buffers()->Get(static_cast<uint32_t>(out))->fixed_rows();
    KES_CHECK_OR_RETURN(rows == table_rows, where() + ": expected one " + name +
                                                " row per sequence (" + Num(table_rows) +
                                                "), found " + Num(rows));
  }
  KES_CHECK_OR_RETURN(
      FindPlanIo(plan, fb::IoRole::Embeddings) < 0 || FindPlanIo(plan, fb::IoRole::Scores) < 0,
      where() + ": both an embeddings and a scores output (expected one)");
  return OkStatus();
}

// The plan's index inputs (token ids, positions, token types, the sequence table) index tables
// and rows without a check at run time: their values were checked when the runtime wrote them.
// So no op may write bytes of such a buffer before its last reader has run (the reader itself
// included): a file whose buffers overlap that way would turn activations into indices. Other
// overlaps only give wrong numbers inside the arena, and the converter's planner never makes
// them for buffers that are live together.
Status CheckIndexInputsKept(const fb::Plan& plan) {
  const auto where = [&] { return "plan '" + plan.name()->str() + "'"; };
  const auto overlap = [](const fb::Buffer& a, const fb::Buffer& b) {
    return a.arena_offset() < b.arena_offset() + b.size() &&
           b.arena_offset() < a.arena_offset() + a.size();
  };
  for (const fb::PlanIo* io : *plan.inputs()) {
    const uint32_t index = io->buffer();
    const fb::Buffer& kept = *plan.buffers()->Get(index);
    int64_t last_reader = -1;
    for (uint32_t i = 0; i < plan.ops()->size(); ++i) {
      const auto* inputs = plan.ops()->Get(i)->inputs();
      if (!inputs) continue;
      for (uint32_t id : *inputs) {
        if (id == index) last_reader = i;
      }
    }
    for (int64_t i = 0; i <= last_reader; ++i) {
      const auto* outputs = plan.ops()->Get(static_cast<uint32_t>(i))->outputs();
      if (!outputs) continue;
      for (uint32_t id : *outputs) {
        KES_CHECK_OR_RETURN(id != index && !overlap(*plan.buffers()->Get(id), kept),
                            where() + " op " + Num(static_cast<uint64_t>(i)) + ": output buffer " +
                                Num(id) + " overlaps input '" + io->name()->str() + "' (buffer " +
                                Num(index) + ") before op " +
                                Num(static_cast<uint64_t>(last_reader)) + " reads it");
      }
    }
  }
  return OkStatus();
}

}  // namespace

Status CheckPlan(const fb::Model& model, const fb::Plan& plan) {
  KES_CHECK_OR_RETURN(plan.name() != nullptr, "a plan has no name");
  const auto where = [&] { return "plan '" + plan.name()->str() + "'"; };
  KES_CHECK_OR_RETURN(plan.max_tokens() >= 1 && plan.max_tokens() <= kMaxStepTokens,
                      where() + ": max_tokens " + Num(plan.max_tokens()) + " out of range");
  KES_CHECK_OR_RETURN(plan.buffers() != nullptr && plan.ops() != nullptr,
                      where() + ": buffers or ops missing");
  KES_CHECK_OR_RETURN(plan.activation_bytes() <= model.activation_bytes(),
                      where() + ": needs " + Num(plan.activation_bytes()) +
                          " activation bytes, more than the model's " +
                          Num(model.activation_bytes()));
  for (uint32_t i = 0; i < plan.buffers()->size(); ++i) {
    KES_RETURN_IF_ERROR(CheckBuffer(plan, *plan.buffers()->Get(i), i, plan.activation_bytes()));
  }
  KES_RETURN_IF_ERROR(CheckPlanIo(model, plan));
  for (uint32_t i = 0; i < plan.ops()->size(); ++i) {
    KES_RETURN_IF_ERROR(CheckOp(model, plan, *plan.ops()->Get(i), i));
  }
  return CheckIndexInputsKept(plan);
}

int64_t FindPlanIo(const fb::Plan& plan, fb::IoRole role) {
  for (const auto* list : {plan.inputs(), plan.outputs()}) {
    if (list == nullptr) continue;
    for (const fb::PlanIo* io : *list) {
      if (io->role() == role) return io->buffer();
    }
  }
  return -1;
}

}  // namespace kestrel
