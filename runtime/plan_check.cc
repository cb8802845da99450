#include "runtime/plan_check.h"

#include <limits>
#include <string>

#include "runtime/format.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// Largest step any plan may take; bounds arena arithmetic.
constexpr uint64_t kMaxStepTokens = 1 << 16;

class OpChecker {
 public:
  OpChecker(const fb::Model& model, const fb::Plan& plan, const fb::Op& op, uint32_t index)
      : model_(model), plan_(plan), op_(op),
        where_(std::string("plan '") + plan.name()->str() + "' op " + Num(index) + " (" +
               fb::EnumNameOpCode(op.code()) + ")") {}

  Status Counts(uint32_t inputs, uint32_t outputs, uint32_t weights, uint32_t iargs,
                uint32_t fargs) const {
    const auto count = [](const auto* v) -> uint64_t { return v ? v->size() : 0; };
    const uint64_t found[5] = {count(op_.inputs()), count(op_.outputs()), count(op_.weights()),
                               count(op_.iargs()), count(op_.fargs())};
    const uint64_t expected[5] = {inputs, outputs, weights, iargs, fargs};
    const char* what[5] = {"inputs", "outputs", "weights", "integer arguments",
                           "float arguments"};
    for (int i = 0; i < 5; ++i) {
      KES_CHECK_OR_RETURN(found[i] == expected[i], where_ + ": expected " + Num(expected[i]) +
                                                       " " + what[i] + ", found " +
                                                       Num(found[i]));
    }
    for (const auto* ids : {op_.inputs(), op_.outputs()}) {
      if (!ids) continue;
      for (uint32_t id : *ids) {
        KES_CHECK_OR_RETURN(id < plan_.buffers()->size(),
                            where_ + ": buffer id " + Num(id) + " is out of range (plan has " +
                                Num(plan_.buffers()->size()) + " buffers)");
      }
    }
    if (op_.weights()) {
      for (uint32_t id : *op_.weights()) {
        KES_CHECK_OR_RETURN(id < model_.tensors()->size(),
                            where_ + ": tensor id " + Num(id) + " is out of range (model has " +
                                Num(model_.tensors()->size()) + " tensors)");
      }
    }
    return OkStatus();
  }

  const fb::Buffer& In(uint32_t i) const { return *plan_.buffers()->Get(op_.inputs()->Get(i)); }
  const fb::Buffer& Out(uint32_t i) const {
    return *plan_.buffers()->Get(op_.outputs()->Get(i));
  }
  const fb::Tensor& Weight(uint32_t i) const {
    return *model_.tensors()->Get(op_.weights()->Get(i));
  }
  int64_t IArg(uint32_t i) const { return op_.iargs()->Get(i); }
  float FArg(uint32_t i) const { return op_.fargs()->Get(i); }

  Status Expect(bool cond, const std::string& message) const {
    return cond ? OkStatus() : Status::Error(where_ + ": " + message);
  }
  // A per-token f32 activation of row_elems elements.
  Status Activation(const fb::Buffer& b, uint64_t row_elems, const char* role) const {
    KES_RETURN_IF_ERROR(Expect(b.dtype() == fb::DType::F32,
                               std::string(role) + " '" + b.name()->str() +
                                   "': expected dtype f32, found " + DTypeName(b.dtype())));
    KES_RETURN_IF_ERROR(Expect(b.per_token(), std::string(role) + " '" + b.name()->str() +
                                                  "': expected one row per token"));
    return Expect(b.row_elems() == row_elems,
                  std::string(role) + " '" + b.name()->str() + "': expected rows of " +
                      Num(row_elems) + " elements, found " + Num(b.row_elems()));
  }
  // A per-token Q8_ACT buffer (activations quantized by QuantizeRows) of row_elems elements.
  Status QuantizedActivation(const fb::Buffer& b, uint64_t row_elems, const char* role) const {
    KES_RETURN_IF_ERROR(Expect(b.dtype() == fb::DType::Q8_ACT && b.per_token(),
                               std::string(role) + " '" + b.name()->str() +
                                   "': expected per-token q8-activations, found " +
                                   DTypeName(b.dtype())));
    return Expect(b.row_elems() == row_elems,
                  std::string(role) + " '" + b.name()->str() + "': expected rows of " +
                      Num(row_elems) + " elements, found " + Num(b.row_elems()));
  }
  Status Tensor2D(const fb::Tensor& t, const char* role) const {
    KES_RETURN_IF_ERROR(Expect(t.shape()->size() == 2, std::string(role) + " '" +
                                                            t.name()->str() +
                                                            "': expected 2 dimensions, found " +
                                                            Num(t.shape()->size())));
    return OkStatus();
  }
  Status F32Vector(const fb::Tensor& t, uint64_t n, const char* role) const {
    return Expect(t.dtype() == fb::DType::F32 && t.shape()->size() == 1 && t.shape()->Get(0) == n,
                  std::string(role) + " '" + t.name()->str() + "': expected f32 [" + Num(n) +
                      "], found " + DTypeName(t.dtype()) + " with " + Num(t.shape()->size()) +
                      " dimensions, first " + Num(t.shape()->Get(0)));
  }

 private:
  const fb::Model& model_;
  const fb::Plan& plan_;
  const fb::Op& op_;
  std::string where_;
};

Status CheckOp(const fb::Model& model, const fb::Plan& plan, const fb::Op& op, uint32_t index) {
  OpChecker c(model, plan, op, index);
  const auto* kv_layers = model.kv()->layers();
  switch (op.code()) {
    case fb::OpCode::Embed: {
      KES_RETURN_IF_ERROR(c.Counts(1, 1, 1, 0, 1));
      const fb::Buffer& tokens = c.In(0);
      KES_RETURN_IF_ERROR(c.Expect(tokens.dtype() == fb::DType::I32 && tokens.row_elems() == 1 &&
                                       tokens.per_token(),
                                   "input must be the i32 token ids, one per row"));
      const fb::Tensor& table = c.Weight(0);
      KES_RETURN_IF_ERROR(c.Tensor2D(table, "embedding table"));
      KES_RETURN_IF_ERROR(c.Expect(table.shape()->Get(0) == model.hparams()->vocab_size(),
                                   "embedding table has " + Num(table.shape()->Get(0)) +
                                       " rows, expected vocab_size " +
                                       Num(model.hparams()->vocab_size())));
      return c.Activation(c.Out(0), table.shape()->Get(1), "output");
    }
    case fb::OpCode::RmsNorm: {
      KES_RETURN_IF_ERROR(c.Counts(1, 1, 1, 1, 1));
      const int64_t dim = c.IArg(0);
      const uint64_t row = c.In(0).row_elems();
      KES_RETURN_IF_ERROR(c.Expect(dim > 0 && row % static_cast<uint64_t>(dim) == 0,
                                   "norm length " + std::to_string(dim) +
                                       " does not divide rows of " + Num(row)));
      KES_RETURN_IF_ERROR(c.Expect(c.FArg(0) > 0.0f, "epsilon must be positive"));
      KES_RETURN_IF_ERROR(c.F32Vector(c.Weight(0), static_cast<uint64_t>(dim), "gamma"));
      KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
      return c.Activation(c.Out(0), row, "output");
    }
    case fb::OpCode::MatMul: {
      KES_RETURN_IF_ERROR(c.Counts(1, 1, 1, 1, 0));
      const fb::Tensor& w = c.Weight(0);
      KES_RETURN_IF_ERROR(c.Tensor2D(w, "weight"));
      const bool quantized = w.dtype() == fb::DType::Q8_0 || w.dtype() == fb::DType::Q4_0;
      KES_RETURN_IF_ERROR(quantized ? c.QuantizedActivation(c.In(0), w.shape()->Get(1), "input")
                                    : c.Activation(c.In(0), w.shape()->Get(1), "input"));
      const int64_t last_row_only = c.IArg(0);
      KES_RETURN_IF_ERROR(c.Expect(last_row_only == 0 || last_row_only == 1,
                                   "last-row flag must be 0 or 1, found " +
                                       std::to_string(last_row_only)));
      const fb::Buffer& y = c.Out(0);
      if (last_row_only) {
        return c.Expect(y.dtype() == fb::DType::F32 && !y.per_token() && y.fixed_rows() == 1 &&
                            y.row_elems() == w.shape()->Get(0),
                        "last-row output must be one f32 row of " + Num(w.shape()->Get(0)));
      }
      return c.Activation(y, w.shape()->Get(0), "output");
    }
    case fb::OpCode::RopeNeox: {
      KES_RETURN_IF_ERROR(c.Counts(1, 0, 0, 2, 2));
      const int64_t heads = c.IArg(0), head_dim = c.IArg(1);
      KES_RETURN_IF_ERROR(c.Expect(heads > 0 && head_dim > 0 && head_dim % 2 == 0 &&
                                       head_dim <= 1024,
                                   "expected heads > 0 and an even head_dim <= 1024, found " +
                                       std::to_string(heads) + " x " + std::to_string(head_dim)));
      KES_RETURN_IF_ERROR(c.Expect(c.FArg(0) > 0.0f && c.FArg(1) > 0.0f,
                                   "theta and frequency scale must be positive"));
      return c.Activation(c.In(0), static_cast<uint64_t>(heads * head_dim), "input");
    }
    case fb::OpCode::KvStore:
    case fb::OpCode::Attention: {
      const bool store = op.code() == fb::OpCode::KvStore;
      KES_RETURN_IF_ERROR(store ? c.Counts(2, 0, 0, 1, 0) : c.Counts(1, 1, 0, 4, 1));
      const int64_t layer = c.IArg(0);
      KES_RETURN_IF_ERROR(c.Expect(layer >= 0 && static_cast<uint64_t>(layer) < kv_layers->size(),
                                   "KV layer " + std::to_string(layer) + " out of range (" +
                                       Num(kv_layers->size()) + " layers)"));
      const fb::KvLayer& kv = *kv_layers->Get(static_cast<uint32_t>(layer));
      const uint64_t kv_row = uint64_t{kv.n_kv_heads()} * kv.head_dim();
      if (store) {
        KES_RETURN_IF_ERROR(c.Activation(c.In(0), kv_row, "keys"));
        return c.Activation(c.In(1), kv_row, "values");
      }
      const int64_t heads = c.IArg(1), kv_heads = c.IArg(2), head_dim = c.IArg(3);
      KES_RETURN_IF_ERROR(c.Expect(kv_heads == kv.n_kv_heads() && head_dim == kv.head_dim(),
                                   "heads do not match the KV layer"));
      KES_RETURN_IF_ERROR(c.Expect(heads > 0 && heads <= 65536 && heads % kv_heads == 0,
                                   "query heads " + std::to_string(heads) +
                                       " must be a multiple of KV heads " +
                                       std::to_string(kv_heads)));
      KES_RETURN_IF_ERROR(c.Activation(c.In(0), static_cast<uint64_t>(heads * head_dim), "query"));
      return c.Activation(c.Out(0), static_cast<uint64_t>(heads * head_dim), "output");
    }
    case fb::OpCode::QuantizeRows: {
      KES_RETURN_IF_ERROR(c.Counts(1, 1, 0, 0, 0));
      const uint64_t row = c.In(0).row_elems();
      KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "input"));
      return c.QuantizedActivation(c.Out(0), row, "output");
    }
    case fb::OpCode::GeluTanhMul:
    case fb::OpCode::Add: {
      KES_RETURN_IF_ERROR(c.Counts(2, 1, 0, 0, 0));
      const uint64_t row = c.In(0).row_elems();
      KES_RETURN_IF_ERROR(c.Activation(c.In(0), row, "first input"));
      KES_RETURN_IF_ERROR(c.Activation(c.In(1), row, "second input"));
      return c.Activation(c.Out(0), row, "output");
    }
  }
  return Status::Error(std::string("plan '") + plan.name()->str() + "' op " + Num(index) +
                       ": unknown op code " + Num(static_cast<uint64_t>(op.code())));
}

Status CheckBuffer(const fb::Plan& plan, const fb::Buffer& b, uint32_t id,
                   uint64_t activation_bytes) {
  const std::string where = "plan '" + plan.name()->str() + "' buffer " + Num(id);
  KES_CHECK_OR_RETURN(b.name() != nullptr, where + ": has no name");
  KES_CHECK_OR_RETURN(b.dtype() == fb::DType::F32 || b.dtype() == fb::DType::I32 ||
                          b.dtype() == fb::DType::Q8_ACT,
                      where + ": expected dtype f32, i32 or q8-activations, found code " +
                          Num(static_cast<uint64_t>(b.dtype())));
  const uint64_t rows = b.per_token() ? plan.max_tokens() : b.fixed_rows();
  KES_CHECK_OR_RETURN(rows > 0 && rows <= kMaxStepTokens,
                      where + ": expected 1.." + Num(kMaxStepTokens) + " rows, found " + Num(rows));
  KES_CHECK_OR_RETURN(b.row_elems() > 0 && b.row_elems() <= (uint64_t{1} << 32),
                      where + ": row length " + Num(b.row_elems()) + " out of range");
  const uint64_t row_bytes = RowBytes(b.dtype(), b.row_elems());
  KES_CHECK_OR_RETURN(row_bytes != 0, where + ": rows of " + Num(b.row_elems()) +
                                          " elements are not whole 32-element blocks");
  const uint64_t need = rows * row_bytes;
  KES_CHECK_OR_RETURN(b.size() >= need, where + ": expected at least " + Num(need) +
                                            " bytes, found " + Num(b.size()));
  KES_CHECK_OR_RETURN(b.arena_offset() % kKesAlignment == 0,
                      where + ": arena offset " + Num(b.arena_offset()) + " is not 64-byte aligned");
  KES_CHECK_OR_RETURN(b.arena_offset() <= activation_bytes &&
                          b.size() <= activation_bytes - b.arena_offset(),
                      where + ": bytes [" + Num(b.arena_offset()) + ", " +
                          Num(b.arena_offset() + b.size()) + ") exceed the activation region of " +
                          Num(activation_bytes) + " bytes");
  return OkStatus();
}

}  // namespace

Status CheckPlan(const fb::Model& model, const fb::Plan& plan) {
  KES_CHECK_OR_RETURN(plan.name() != nullptr, "a plan has no name");
  const std::string where = "plan '" + plan.name()->str() + "'";
  KES_CHECK_OR_RETURN(plan.max_tokens() >= 1 && plan.max_tokens() <= kMaxStepTokens,
                      where + ": max_tokens " + Num(plan.max_tokens()) + " out of range");
  KES_CHECK_OR_RETURN(plan.buffers() != nullptr && plan.ops() != nullptr,
                      where + ": buffers or ops missing");
  KES_CHECK_OR_RETURN(plan.activation_bytes() <= model.activation_bytes(),
                      where + ": needs " + Num(plan.activation_bytes()) +
                          " activation bytes, more than the model's " +
                          Num(model.activation_bytes()));
  for (uint32_t i = 0; i < plan.buffers()->size(); ++i) {
    KES_RETURN_IF_ERROR(
        CheckBuffer(plan, *plan.buffers()->Get(i), i, plan.activation_bytes()));
  }
  const uint32_t n_buffers = plan.buffers()->size();
  KES_CHECK_OR_RETURN(plan.token_input() < n_buffers && plan.logits_output() < n_buffers,
                      where + ": token input or logits output id out of range");
  const fb::Buffer& tokens = *plan.buffers()->Get(plan.token_input());
  KES_CHECK_OR_RETURN(tokens.dtype() == fb::DType::I32 && tokens.row_elems() == 1 &&
                          tokens.per_token(),
                      where + ": token input must be i32, one id per token");
  const fb::Buffer& logits = *plan.buffers()->Get(plan.logits_output());
  KES_CHECK_OR_RETURN(logits.dtype() == fb::DType::F32 &&
                          logits.row_elems() == model.hparams()->vocab_size(),
                      where + ": logits output must be f32 rows of vocab_size " +
                          Num(model.hparams()->vocab_size()));
  for (uint32_t i = 0; i < plan.ops()->size(); ++i) {
    KES_RETURN_IF_ERROR(CheckOp(model, plan, *plan.ops()->Get(i), i));
  }
  return OkStatus();
}

}  // namespace kestrel
