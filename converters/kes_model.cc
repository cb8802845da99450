#include "converters/kes_model.h"

#include "converters/scratch_file.h"

#include "ops/matmul_blocks.h"
#include "runtime/dtype_table.h"
#include "runtime/format.h"

namespace kestrel {

KesModel::KesModel() = default;
KesModel::~KesModel() = default;

Status KesModel::SpillTensorsTo(const std::string& folder) {
  KES_CHECK_OR_RETURN(meta.tensors.empty() && !spill_,
                      "internal error: tensors spilled after some were added");
  return ScratchFile::Create(folder, &spill_);
}

uint32_t KesModel::AddTensor(const std::string& name, fb::DType dtype, std::vector<uint64_t> shape,
                             std::vector<uint8_t> bytes) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = dtype;
  t->shape = std::move(shape);
  t->size = bytes.size();
  bytes_added += bytes.size();
  meta.tensors.push_back(std::move(t));
  if (spill_) {
    spill_offsets_.push_back(spill_->size());
    if (spill_error_.ok()) spill_error_ = spill_->Append(bytes.data(), bytes.size());
    bytes = std::vector<uint8_t>();  // frees them (`= {}` would keep the capacity)
  }
  tensor_bytes.push_back(std::move(bytes));
  if (on_tensor_added) on_tensor_added(meta.tensors.size(), bytes_added);
  return static_cast<uint32_t>(meta.tensors.size() - 1);
}

Status KesModel::MapTensors() {
  KES_CHECK_OR_RETURN(meta.tensors.size() == tensor_bytes.size(),
                      "tensor table and tensor data disagree");
  if (!spill_ || spill_->data() != nullptr) return OkStatus();
  KES_RETURN_IF_ERROR(spill_error_);
  // A model whose tensors are all empty wrote nothing, and there is nothing to map.
  return spill_->size() == 0 ? OkStatus() : spill_->Map();
}

TensorBytesView KesModel::Tensor(size_t id) const {
  if (!spill_) return {tensor_bytes[id].data(), tensor_bytes[id].size()};
  return {spill_->data() == nullptr ? nullptr : spill_->data() + spill_offsets_[id],
          static_cast<size_t>(meta.tensors[id]->size)};
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

namespace {

fb::PlanIoT* NewIo(std::vector<std::unique_ptr<fb::PlanIoT>>* list, const std::string& name,
                   fb::IoRole role, uint32_t buffer) {
  auto io = std::make_unique<fb::PlanIoT>();
  io->name = name;
  io->role = role;
  io->buffer = buffer;
  list->push_back(std::move(io));
  return list->back().get();
}

}  // namespace

uint32_t PlanBuilder::AddInput(const std::string& name, fb::IoRole role, fb::DType dtype,
                               uint64_t row_elems, bool per_token, uint64_t fixed_rows) {
  const uint32_t id = AddBuffer(name, dtype, row_elems, per_token, fixed_rows);
  NewIo(&plan_->inputs, name, role, id);
  return id;
}

uint32_t PlanBuilder::TokenInput() {
  return AddInput("tokens", fb::IoRole::TokenIds, fb::DType::I32, 1, true, 0);
}

void PlanBuilder::LogitsOutput(uint32_t buffer) {
  NewIo(&plan_->outputs, "logits", fb::IoRole::Logits, buffer);
}

uint32_t PlanBuilder::PositionInput() {
  return AddInput("positions", fb::IoRole::Positions, fb::DType::I32, 1, true, 0);
}

uint32_t PlanBuilder::TokenTypeInput() {
  return AddInput("token_types", fb::IoRole::TokenTypes, fb::DType::I32, 1, true, 0);
}

uint32_t PlanBuilder::SequenceInput(uint32_t max_sequences) {
  return AddInput("sequences", fb::IoRole::Sequences, fb::DType::I32, 2, false, max_sequences);
}

void PlanBuilder::EmbeddingsOutput(uint32_t buffer) {
  NewIo(&plan_->outputs, "embeddings", fb::IoRole::Embeddings, buffer);
}

void PlanBuilder::ScoresOutput(uint32_t buffer) {
  NewIo(&plan_->outputs, "scores", fb::IoRole::Scores, buffer);
}

uint32_t PlanBuilder::AudioFeaturesInput(uint64_t row_elems) {
  return AddInput("audio_features", fb::IoRole::AudioFeatures, fb::DType::F32, row_elems, true, 0);
}

void PlanBuilder::HiddenStatesOutput(uint32_t buffer) {
  NewIo(&plan_->outputs, "hidden_states", fb::IoRole::HiddenStates, buffer);
}

uint32_t PlanBuilder::HiddenStatesInput(uint64_t row_elems) {
  return AddInput("hidden_states", fb::IoRole::HiddenStates, fb::DType::F32, row_elems, true, 0);
}

template <typename Params>
void PlanBuilder::AddOp(Params params, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                        std::vector<uint32_t> weights) {
  for (uint32_t out : outputs) {
    quantized_.erase(quantized_.lower_bound({out, 0}), quantized_.upper_bound({out, kNone}));
  }
  auto op = std::make_unique<fb::OpT>();
  op->params.Set(std::move(params));
  op->inputs = std::move(inputs);
  op->outputs = std::move(outputs);
  op->weights = std::move(weights);
  plan_->ops.push_back(std::move(op));
}

void PlanBuilder::Embed(uint32_t tokens, uint32_t out, uint32_t table, float scale) {
  fb::EmbedT params;
  params.scale = scale;
  AddOp(std::move(params), {tokens}, {out}, {table});
}

void PlanBuilder::RmsNorm(uint32_t in, uint32_t out, uint32_t gamma, uint32_t dim, float eps) {
  fb::RmsNormT params;
  params.dim = dim;
  params.eps = eps;
  AddOp(std::move(params), {in}, {out}, {gamma});
}

void PlanBuilder::MatMul(uint32_t in, uint32_t out, uint32_t weight, uint32_t bias,
                         bool last_row_only, uint32_t input_factor) {
  const fb::TensorT& w = *model_.meta.tensors[weight];
  if (IsBlockQuantized(w.dtype)) {
    // One quantized copy per value of the input (and factors), shared by every matmul that
    // reads it (Q, K and V; gate and up); AddOp forgets it when an op writes the input again.
    auto it = quantized_.find({in, input_factor});
    if (it == quantized_.end()) {
      const fb::BufferT& x = *plan_->buffers[in];
      const uint32_t q = AddBuffer(x.name + ".q8", fb::DType::Q8_ACT, x.row_elems, true, 0);
      std::vector<uint32_t> factors;
      if (input_factor != kNone) factors.push_back(input_factor);
      // A scale per 256 where the first reader's kernels are fastest with it (the K-quants:
      // ops/matmul_blocks.h); later readers of the copy are correct with either.
      fb::QuantizeRowsT params;
      ops::GgmlBlockType block;
      if (input_factor == kNone && x.row_elems % 256 == 0 && KeptBlockType(w.dtype, &block)) {
        params.scale_block = static_cast<uint32_t>(ops::PreferredActivationScaleBlock(block));
      }
      AddOp(std::move(params), {in}, {q}, std::move(factors));
      it = quantized_.emplace(std::make_pair(in, input_factor), q).first;
    }
    in = it->second;
  }
  fb::MatMulT params;
  params.last_row_only = last_row_only;
  AddMatMul(std::move(params), in, out, weight, bias);
}

void PlanBuilder::FramesMatMul(uint32_t in, uint32_t out, uint32_t weight, uint32_t bias,
                               uint32_t rows_per_token) {
  fb::MatMulT params;
  params.rows_per_token = rows_per_token;
  AddMatMul(std::move(params), in, out, weight, bias);
}

void PlanBuilder::AddMatMul(fb::MatMulT params, uint32_t in, uint32_t out, uint32_t weight,
                            uint32_t bias) {
  std::vector<uint32_t> weights = {weight};
  if (bias != kNone) weights.push_back(bias);
  AddOp(std::move(params), {in}, {out}, std::move(weights));
}

void PlanBuilder::Im2Col(uint32_t in, uint32_t out, uint32_t kernel, uint32_t stride,
                         uint32_t padding, uint32_t channels) {
  fb::Im2ColT params;
  params.kernel = kernel;
  params.stride = stride;
  params.padding = padding;
  params.channels = channels;
  AddOp(std::move(params), {in}, {out}, {});
}

void PlanBuilder::Rope(uint32_t x, fb::RopeT params, uint32_t freq_factors, uint32_t long_factors,
                       uint32_t positions) {
  std::vector<uint32_t> weights;
  if (freq_factors != kNone) weights.push_back(freq_factors);
  if (long_factors != kNone) {
    weights.push_back(long_factors);
  } else {
    params.long_factors_above = 0;
  }
  std::vector<uint32_t> inputs = {x};
  if (positions != kNone) inputs.push_back(positions);
  AddOp(std::move(params), std::move(inputs), {}, std::move(weights));
}

void PlanBuilder::KvStore(uint32_t layer, uint32_t k, uint32_t v) {
  fb::KvStoreT params;
  params.layer = layer;
  AddOp(std::move(params), {k, v}, {}, {});
}

void PlanBuilder::Attention(uint32_t layer, uint32_t q, uint32_t out, uint32_t n_heads,
                            uint32_t n_kv_heads, uint32_t head_dim, float scale, uint32_t window,
                            float logit_softcap) {
  AddAttention(window > 0 ? fb::AttentionMask::SlidingWindow : fb::AttentionMask::Causal, window,
               layer, q, out, n_heads, n_kv_heads, head_dim, scale, logit_softcap);
}

void PlanBuilder::CrossAttention(uint32_t layer, uint32_t q, uint32_t out, uint32_t n_heads,
                                 uint32_t n_kv_heads, uint32_t head_dim, float scale) {
  AddAttention(fb::AttentionMask::Cross, 0, layer, q, out, n_heads, n_kv_heads, head_dim, scale);
}

void PlanBuilder::AddAttention(fb::AttentionMask mask, uint32_t window, uint32_t layer, uint32_t q,
                               uint32_t out, uint32_t n_heads, uint32_t n_kv_heads,
                               uint32_t head_dim, float scale, float logit_softcap) {
  fb::AttentionT params;
  params.layer = layer;
  params.n_heads = n_heads;
  params.n_kv_heads = n_kv_heads;
  params.head_dim = head_dim;
  params.scale = scale;
  params.mask = mask;
  params.window = window;
  params.logit_softcap = logit_softcap;
  AddOp(std::move(params), {q}, {out}, {});
}

void PlanBuilder::GatedActivation(fb::Activation activation, uint32_t gate, uint32_t up,
                                  uint32_t out) {
  fb::GatedActivationT params;
  params.activation = activation;
  AddOp(std::move(params), {gate, up}, {out}, {});
}

void PlanBuilder::Add(uint32_t a, uint32_t b, uint32_t out) {
  AddOp(fb::AddT{}, {a, b}, {out}, {});
}

void PlanBuilder::LayerNorm(uint32_t in, uint32_t out, uint32_t gamma, uint32_t beta, float eps) {
  fb::LayerNormT params;
  params.eps = eps;
  AddOp(std::move(params), {in}, {out}, {gamma, beta});
}

void PlanBuilder::Activate(fb::Activation activation, uint32_t in, uint32_t out, float cap) {
  fb::ActivateT params;
  params.activation = activation;
  params.cap = cap;
  AddOp(std::move(params), {in}, {out}, {});
}

void PlanBuilder::SequenceAttention(uint32_t q, uint32_t k, uint32_t v, uint32_t sequences,
                                    uint32_t out, uint32_t n_heads, uint32_t n_kv_heads,
                                    uint32_t head_dim, float scale, bool causal) {
  fb::SequenceAttentionT params;
  params.n_heads = n_heads;
  params.n_kv_heads = n_kv_heads;
  params.head_dim = head_dim;
  params.scale = scale;
  params.causal = causal;
  AddOp(std::move(params), {q, k, v, sequences}, {out}, {});
}

void PlanBuilder::Pool(fb::PoolMode mode, bool normalize, uint32_t in, uint32_t sequences,
                       uint32_t out) {
  fb::PoolT params;
  params.mode = mode;
  params.normalize = normalize;
  AddOp(std::move(params), {in, sequences}, {out}, {});
}

fb::HyperParamsT& StartModel(const std::string& architecture, const ModelShape& shape,
                             fb::ModelT* meta) {
  meta->architecture = architecture;
  meta->hparams = std::make_unique<fb::HyperParamsT>();
  fb::HyperParamsT& hp = *meta->hparams;
  hp.n_layers = shape.n_layers;
  hp.d_model = shape.d_model;
  hp.n_heads = shape.n_heads;
  hp.n_kv_heads = shape.n_kv_heads;
  hp.head_dim = shape.head_dim;
  hp.ffn_dim = shape.ffn_dim;
  hp.vocab_size = shape.vocab_size;
  hp.context_length = shape.context_length;
  hp.norm_eps = shape.norm_eps;
  meta->kv = std::make_unique<fb::KvLayoutT>();
  meta->kv->dtype = fb::DType::F32;
  return hp;
}

}  // namespace kestrel
