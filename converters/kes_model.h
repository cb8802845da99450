// A model being converted: the FlatBuffer object tree plus the bytes of every tensor. Architecture
// code fills it; PlanArena and WriteKes finish and write it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

struct KesModel {
  fb::ModelT meta;
  std::vector<std::vector<uint8_t>> tensor_bytes;  // parallel to meta.tensors

  // Adds a tensor; shape is outermost first. Returns its id.
  uint32_t AddTensor(const std::string& name, fb::DType dtype, std::vector<uint64_t> shape,
                     std::vector<uint8_t> bytes);
};

// Builds one plan: buffers are declared as values, ops refer to them by id.
class PlanBuilder {
 public:
  // model: the tensors the plan's ops will use (their dtypes decide how matmuls are fed).
  PlanBuilder(const KesModel& model, std::string name, uint32_t max_tokens);

  // A per-token f32 activation: [tokens, row_elems].
  uint32_t Activation(const std::string& name, uint64_t row_elems);
  // A fixed-size f32 buffer: [rows, row_elems].
  uint32_t Fixed(const std::string& name, uint64_t rows, uint64_t row_elems);
  // The i32 token ids the runtime writes before running the plan.
  uint32_t TokenInput();

  void Op(fb::OpCode code, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
          std::vector<uint32_t> weights, std::vector<int64_t> iargs = {},
          std::vector<float> fargs = {});
  // output = input x weight^T, preceded by a QuantizeRows op when the weight is block-quantized.
  // last_row_only: only the last token's row of input (the LM head in prefill).
  void MatMul(uint32_t input, uint32_t output, uint32_t weight, bool last_row_only = false);
  void SetLogits(uint32_t buffer) { plan_->logits_output = buffer; }

  std::unique_ptr<fb::PlanT> Finish() { return std::move(plan_); }

 private:
  uint32_t AddBuffer(const std::string& name, fb::DType dtype, uint64_t row_elems, bool per_token,
                     uint64_t fixed_rows);
  const KesModel& model_;
  std::unique_ptr<fb::PlanT> plan_;
  std::map<uint32_t, uint32_t> quantized_;  // f32 buffer -> its current Q8_ACT copy
};

// Places every buffer of every plan in the arena: a buffer lives from the first op that touches
// it to the last (the token input from the start, the logits to the end); buffers whose
// lifetimes overlap never share bytes. Greedy by size, as TFLM and ExecuTorch plan. Plans run
// one at a time, so each plan is planned on its own and the model needs the largest.
Status PlanArena(fb::ModelT* meta);

// Assigns tensor offsets in the weight blob and writes the .kes file. The file appears only when
// complete (written to a temporary name, then renamed).
Status WriteKes(KesModel* model, const std::string& path);

}  // namespace kestrel
