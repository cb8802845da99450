#include <string>

#include "runtime/format.h"
#include "runtime/op_kind.h"
#include "runtime/plan_check.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

OpCheck::OpCheck(const fb::Model& model, const fb::Plan& plan, const fb::Op& op, uint32_t index)
    : model_(model), plan_(plan), op_(op), index_(index) {}

std::string OpCheck::Where() const {
  return std::string("plan '") + plan_.name()->str() + "' op " + Num(index_) + " (" +
         fb::EnumNameOpParams(op_.params_type()) + ")";
}

Status OpCheck::Fail(const std::string& message) const {
  return Status::Error(Where() + ": " + message);
}

Status OpCheck::Expect(bool condition, const std::string& message) const {
  return condition ? OkStatus() : Fail(message);
}

Status OpCheck::Expect(bool condition, const char* message) const {
  return condition ? OkStatus() : Fail(message);
}

// The helpers below test first and build their messages only for an error.
Status OpCheck::Activation(const fb::Buffer& b, uint64_t row_elems, const char* role) const {
  if (b.dtype() != fb::DType::F32) {
    return Fail(std::string(role) + " '" + b.name()->str() + "': expected dtype f32, found " +
                DTypeName(b.dtype()));
  }
  if (!b.per_token()) {
    return Fail(std::string(role) + " '" + b.name()->str() + "': expected one row per token");
  }
  if (b.row_elems() != row_elems) {
    return Fail(std::string(role) + " '" + b.name()->str() + "': expected rows of " +
                Num(row_elems) + " elements, found " + Num(b.row_elems()));
  }
  return OkStatus();
}

Status OpCheck::QuantizedActivation(const fb::Buffer& b, uint64_t row_elems,
                                    const char* role) const {
  if (b.dtype() != fb::DType::Q8_ACT || !b.per_token()) {
    return Fail(std::string(role) + " '" + b.name()->str() +
                "': expected per-token q8-activations, found " + DTypeName(b.dtype()));
  }
  if (b.row_elems() != row_elems) {
    return Fail(std::string(role) + " '" + b.name()->str() + "': expected rows of " +
                Num(row_elems) + " elements, found " + Num(b.row_elems()));
  }
  return OkStatus();
}

Status OpCheck::Matrix(const fb::Tensor& t, const char* role) const {
  if (t.shape()->size() == 2) return OkStatus();
  return Fail(std::string(role) + " '" + t.name()->str() + "': expected 2 dimensions, found " +
              Num(t.shape()->size()));
}

Status OpCheck::F32Vector(const fb::Tensor& t, uint64_t n, const char* role) const {
  if (t.dtype() == fb::DType::F32 && t.shape()->size() == 1 && t.shape()->Get(0) == n) {
    return OkStatus();
  }
  return Fail(std::string(role) + " '" + t.name()->str() + "': expected f32 [" + Num(n) +
              "], found " + DTypeName(t.dtype()) + " with " + Num(t.shape()->size()) +
              " dimensions, first " + Num(t.shape()->Get(0)));
}

Status OpCheck::KvLayer(uint32_t layer, const fb::KvLayer** out) const {
  const auto* layers = model_.kv()->layers();
  KES_RETURN_IF_ERROR(Expect(layers != nullptr, "the model has no KV cache"));
  if (layer >= layers->size()) {
    return Fail("KV layer " + Num(layer) + " out of range (" + Num(layers->size()) + " layers)");
  }
  *out = layers->Get(layer);
  return OkStatus();
}

bool OpCheck::InputIs(uint32_t i, fb::IoRole role) const {
  const int64_t id = FindPlanIo(plan_, role);
  return id >= 0 && static_cast<uint64_t>(id) == op_.inputs()->Get(i);
}

Status OpCheck::SequenceTable(uint32_t i) const {
  if (InputIs(i, fb::IoRole::Sequences)) return OkStatus();
  return Fail("input " + Num(i) + " '" + In(i).name()->str() +
              "': expected the plan's sequence table");
}

Status OpCheck::PerSequence(const fb::Buffer& b, uint64_t row_elems, const char* role) const {
  const int64_t table = FindPlanIo(plan_, fb::IoRole::Sequences);
  KES_RETURN_IF_ERROR(Expect(table >= 0, "the plan has no sequence table"));
  const uint64_t sequences = plan_.buffers()->Get(static_cast<uint32_t>(table))->fixed_rows();
  if (b.dtype() == fb::DType::F32 && !b.per_token() && b.fixed_rows() == sequences &&
      b.row_elems() == row_elems) {
    return OkStatus();
  }
  return Fail(std::string(role) + " '" + b.name()->str() + "': expected f32 [" + Num(sequences) +
              ", " + Num(row_elems) + "] (a row per sequence), found " + DTypeName(b.dtype()) +
              (b.per_token() ? " per token" : "") + " rows of " + Num(b.row_elems()));
}

}  // namespace kestrel
