// A model being converted: the FlatBuffer object tree plus the bytes of every tensor. Architecture
// code fills it; PlanArena and WriteKes finish and write it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

class AtomicOutput;  // runtime/output_file.h
class ScratchFile;   // converters/scratch_file.h

// One tensor's bytes, wherever the model holds them.
struct TensorBytesView {
  const uint8_t* data;
  size_t size;
};

struct KesModel {
  KesModel();
  ~KesModel();
  KesModel(const KesModel&) = delete;
  KesModel& operator=(const KesModel&) = delete;

  fb::ModelT meta;
  // Parallel to meta.tensors: each tensor's bytes, or, once SpillTensorsTo was called, an empty
  // vector (the bytes are in the scratch file).
  std::vector<std::vector<uint8_t>> tensor_bytes;
  // Called by AddTensor with the number of tensors and their bytes so far (kestrel-convert's
  // progress line).
  std::function<void(size_t tensors, uint64_t bytes)> on_tensor_added;
  uint64_t bytes_added = 0;

  // From now on, AddTensor appends each tensor's bytes to an unlinked scratch file in `folder`
  // instead of holding them: the weights are then file pages the kernel can write out and drop,
  // so a conversion's anonymous memory stays near its largest tensor instead of the whole .kes.
  // Only before the first AddTensor.
  Status SpillTensorsTo(const std::string& folder);
  // Adds a tensor; shape is outermost first. Returns its id. A failure to spill the bytes (a full
  // disk) is kept and returned by MapTensors.
  uint32_t AddTensor(const std::string& name, fb::DType dtype, std::vector<uint64_t> shape,
                     std::vector<uint8_t> bytes);
  // Makes every tensor's bytes readable through Tensor (maps the scratch file); once all tensors
  // are added, before the first Tensor call.
  Status MapTensors();
  TensorBytesView Tensor(size_t id) const;

 private:
  std::unique_ptr<ScratchFile> spill_;
  std::vector<uint64_t> spill_offsets_;  // parallel to meta.tensors once spilling
  Status spill_error_;
};

// Builds one plan with typed calls, one per op kind of the plan contract (schema/kestrel.fbs):
// buffers are declared as values, ops refer to them by id. Shapes in the comments: [tokens, n] is
// a per-token buffer of n-element rows.
class PlanBuilder {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // an optional weight left out

  // model: the tensors the plan's ops will use (their dtypes decide how matmuls are fed).
  PlanBuilder(const KesModel& model, std::string name, uint32_t max_tokens);

  // A per-token f32 activation: [tokens, row_elems].
  uint32_t Activation(const std::string& name, uint64_t row_elems);
  // A fixed-size f32 buffer: [rows, row_elems].
  uint32_t Fixed(const std::string& name, uint64_t rows, uint64_t row_elems);
  // The plan's token-ids input (i32, one per token), written by the runtime before each step.
  uint32_t TokenInput();
  // Declares `buffer` as the plan's logits output.
  void LogitsOutput(uint32_t buffer);
  // Encoder inputs, written by the runtime before each step: i32 per token, its position within
  // its sequence or its segment (token type).
  uint32_t PositionInput();
  uint32_t TokenTypeInput();
  // The sequence table of an encoder step: up to max_sequences rows of (start, length).
  uint32_t SequenceInput(uint32_t max_sequences);
  // Declares `buffer` (a Fixed buffer with a row per sequence) as the plan's embeddings output.
  void EmbeddingsOutput(uint32_t buffer);
  // Declares `buffer` (a Fixed buffer with a row per sequence) as the plan's scores output (a
  // cross-encoder's classification head).
  void ScoresOutput(uint32_t buffer);
  // A speech encoder's input: f32 per token, feature frames end to end (row_elems per token).
  uint32_t AudioFeaturesInput(uint64_t row_elems);
  // Declares `buffer` (per token, d_model) as the plan's hidden-states output.
  void HiddenStatesOutput(uint32_t buffer);
  // An encoder-decoder's cross_kv input: the encoder's hidden states, f32 per token.
  uint32_t HiddenStatesInput(uint64_t row_elems);

  // out [tokens, d] = table[tokens] * scale; table [vocab, d].
  void Embed(uint32_t tokens, uint32_t out, uint32_t table, float scale);
  // out = in normalized per `dim`-element vector, times gamma [dim]. out may be in.
  void RmsNorm(uint32_t in, uint32_t out, uint32_t gamma, uint32_t dim, float eps);
  // out [tokens, N] = in [tokens, K] x weight [N, K]^T (+ bias [N]), preceded by a QuantizeRows
  // op when the weight is block-quantized. last_row_only: only the step's last token's row (the
  // LM head in prefill); out is then a Fixed buffer of one row. input_factor: an f32 [K] tensor
  // the input is multiplied by, channel by channel, as it is quantized (smoothing: the weight's
  // input channels carry the inverse); only for block-quantized weights.
  void MatMul(uint32_t in, uint32_t out, uint32_t weight, uint32_t bias = kNone,
              bool last_row_only = false, uint32_t input_factor = kNone);
  // The same with `rows_per_token` rows of K in each token row of in (and of N in out): the
  // frames of a convolution. Float weights only.
  void FramesMatMul(uint32_t in, uint32_t out, uint32_t weight, uint32_t bias,
                    uint32_t rows_per_token);
  // out [tokens, f_out * kernel * channels] = the kernel windows of in [tokens, f_in * channels]
  // (frames of `channels` values, f_in = stride * f_out), for a convolution as a matmul.
  void Im2Col(uint32_t in, uint32_t out, uint32_t kernel, uint32_t stride, uint32_t padding,
              uint32_t channels);
  // Rotates x [tokens, n_heads * head_dim] in place as `params` say (freq_factors
  // [rotary / 2] or kNone; with long_factors, the factors of a session longer than
  // params.long_factors_above: LongRoPE). positions: kNone (the step's), or an encoder plan's
  // Positions input.
  void Rope(uint32_t x, fb::RopeT params, uint32_t freq_factors = kNone,
            uint32_t long_factors = kNone, uint32_t positions = kNone);
  // Writes k, v [tokens, n_kv_heads * head_dim] into KV layer `layer`.
  void KvStore(uint32_t layer, uint32_t k, uint32_t v);
  // out [tokens, n_heads * head_dim] = attention of q over KV layer `layer`; window > 0 makes the
  // mask a sliding window of that many positions; logit_softcap > 0 soft-caps the scaled scores.
  void Attention(uint32_t layer, uint32_t q, uint32_t out, uint32_t n_heads, uint32_t n_kv_heads,
                 uint32_t head_dim, float scale, uint32_t window, float logit_softcap = 0.0f);
  // out [tokens, n_heads * head_dim] = attention of q over every key of cross-attention KV layer
  // `layer` (the encoder's positions), whatever the tokens' positions.
  void CrossAttention(uint32_t layer, uint32_t q, uint32_t out, uint32_t n_heads,
                      uint32_t n_kv_heads, uint32_t head_dim, float scale);
  // out = activation(gate) * up, all [tokens, n]. out may be gate or up.
  void GatedActivation(fb::Activation activation, uint32_t gate, uint32_t up, uint32_t out);
  // out = a + b, all [tokens, n].
  void Add(uint32_t a, uint32_t b, uint32_t out);
  // out = LayerNorm(in) * gamma + beta, all [tokens, n]; gamma, beta [n]. out may be in.
  void LayerNorm(uint32_t in, uint32_t out, uint32_t gamma, uint32_t beta, float eps);
  // out = activation(in), element by element, all [tokens, n]. out may be in. cap: SoftCap's.
  void Activate(fb::Activation activation, uint32_t in, uint32_t out, float cap = 0.0f);
  // out [tokens, n_heads * head_dim]: attention of q over k, v within each sequence of the
  // table, bidirectional or causal.
  void SequenceAttention(uint32_t q, uint32_t k, uint32_t v, uint32_t sequences, uint32_t out,
                         uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, float scale,
                         bool causal = false);
  // out [max sequences, n]: one pooled (and, with normalize, unit-length) row per sequence.
  void Pool(fb::PoolMode mode, bool normalize, uint32_t in, uint32_t sequences, uint32_t out);

  std::unique_ptr<fb::PlanT> Finish() { return std::move(plan_); }

 private:
  uint32_t AddBuffer(const std::string& name, fb::DType dtype, uint64_t row_elems, bool per_token,
                     uint64_t fixed_rows);
  // A buffer the runtime writes before each step, declared as the plan's input `name` in `role`.
  uint32_t AddInput(const std::string& name, fb::IoRole role, fb::DType dtype, uint64_t row_elems,
                    bool per_token, uint64_t fixed_rows);
  // params: one of the schema's op tables (fb::RmsNormT, ...), which sets the op kind.
  void AddMatMul(fb::MatMulT params, uint32_t in, uint32_t out, uint32_t weight, uint32_t bias);
  void AddAttention(fb::AttentionMask mask, uint32_t window, uint32_t layer, uint32_t q,
                    uint32_t out, uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim,
                    float scale, float logit_softcap = 0.0f);
  template <typename Params>
  void AddOp(Params params, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
             std::vector<uint32_t> weights);
  const KesModel& model_;
  std::unique_ptr<fb::PlanT> plan_;
  // (f32 buffer, input factor or kNone) -> its current Q8_ACT copy
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> quantized_;
};

// The hyper-parameters every architecture writes (schema HyperParams), in its order.
struct ModelShape {
  uint32_t n_layers, d_model, n_heads, n_kv_heads, head_dim, ffn_dim, vocab_size;
  uint32_t context_length;  // schema HyperParams: a decoder's trained, an encoder's longest text
  float norm_eps;
};
// Starts meta for `architecture`: its hyper-parameters from shape (RoPE and sliding-window
// fields 0, for a decoder to set in the returned table) and an f32 KV layout with no layers yet.
fb::HyperParamsT& StartModel(const std::string& architecture, const ModelShape& shape,
                             fb::ModelT* meta);

// Places every buffer of every plan in the arena: a buffer lives from the first op that touches
// it to the last (the token input from the start, the logits to the end); buffers whose
// lifetimes overlap never share bytes. Greedy by size, as TFLM and ExecuTorch plan. Plans run
// one at a time, so each plan is planned on its own and the model needs the largest.
Status PlanArena(fb::ModelT* meta);

// Assigns tensor offsets in the weight blob and writes the .kes file. The file appears only when
// complete (written to a unique temporary name, synced, then renamed: runtime/output_file.h).
Status WriteKes(KesModel* model, const std::string& path);
// The same into `out`, finished but not committed: the caller checks out->temp_path() (Model::Open)
// before out->Commit() puts it in place, so a file that fails the check never replaces one.
Status WriteKes(KesModel* model, AtomicOutput* out);
// The same bytes WriteKes writes, in memory (tests and fuzzing; tensor offsets set likewise).
Status KesBytes(KesModel* model, std::vector<uint8_t>* out);

}  // namespace kestrel
