#include "converters/kes_model.h"

#include "runtime/format.h"

namespace kestrel {

uint32_t KesModel::AddTensor(const std::string& name, fb::DType dtype, std::vector<uint64_t> shape,
                             std::vector<uint8_t> bytes) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = dtype;
  t->shape = std::move(shape);
  t->size = bytes.size();
  meta.tensors.push_back(std::move(t));
  tensor_bytes.push_back(std::move(bytes));
  return static_cast<uint32_t>(meta.tensors.size() - 1);
}

PlanBuilder::PlanBuilder(const KesModel& model, std::string name, uint32_t max_tokens)
    : model_(model), plan_(std::make_unique<fb::PlanT>()) {
  plan_->name = std::move(name);
  plan_->max_tokens = max_tokens;
}

uint32_t PlanBuilder::AddBuffer(const std::string& name, fb::DType dtype, uint64_t row_elems,
                                bool per_token, uint64_t fixed_rows) {
  auto b = std::make_unique<fb::BufferT>();
  b->name = name;
  b->dtype = dtype;
  b->row_elems = row_elems;
  b->per_token = per_token;
  b->fixed_rows = fixed_rows;
  const uint64_t rows = per_token ? plan_->max_tokens : fixed_rows;
  b->size = AlignUp(rows * RowBytes(dtype, row_elems), kKesAlignment);
  plan_->buffers.push_back(std::move(b));
  return static_cast<uint32_t>(plan_->buffers.size() - 1);
}

uint32_t PlanBuilder::Activation(const std::string& name, uint64_t row_elems) {
  return AddBuffer(name, fb::DType::F32, row_elems, true, 0);
}

uint32_t PlanBuilder::Fixed(const std::string& name, uint64_t rows, uint64_t row_elems) {
  return AddBuffer(name, fb::DType::F32, row_elems, false, rows);
}

uint32_t PlanBuilder::TokenInput() {
  plan_->token_input = AddBuffer("tokens", fb::DType::I32, 1, true, 0);
  return plan_->token_input;
}

void PlanBuilder::MatMul(uint32_t input, uint32_t output, uint32_t weight, bool last_row_only) {
  const fb::TensorT& w = *model_.meta.tensors[weight];
  if (IsBlockQuantized(w.dtype)) {
    // One quantized copy per value of the input, shared by every matmul that reads it (Q, K
    // and V; gate and up); Op() forgets it when an op writes the input again.
    auto it = quantized_.find(input);
    if (it == quantized_.end()) {
      const fb::BufferT& in = *plan_->buffers[input];
      const uint32_t q = AddBuffer(in.name + ".q8", fb::DType::Q8_ACT, in.row_elems, true, 0);
      Op(fb::OpCode::QuantizeRows, {input}, {q}, {});
      it = quantized_.emplace(input, q).first;
    }
    input = it->second;
  }
  Op(fb::OpCode::MatMul, {input}, {output}, {weight}, {last_row_only ? 1 : 0});
}

void PlanBuilder::Op(fb::OpCode code, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                     std::vector<uint32_t> weights, std::vector<int64_t> iargs,
                     std::vector<float> fargs) {
  for (uint32_t out : outputs) quantized_.erase(out);
  auto op = std::make_unique<fb::OpT>();
  op->code = code;
  op->inputs = std::move(inputs);
  op->outputs = std::move(outputs);
  op->weights = std::move(weights);
  op->iargs = std::move(iargs);
  op->fargs = std::move(fargs);
  plan_->ops.push_back(std::move(op));
}

}  // namespace kestrel
