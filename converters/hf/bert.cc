// BERT (Hugging Face BertModel, model_type "bert"), RoBERTa ("roberta") and XLM-RoBERTa
// ("xlm-roberta": bge-m3, multilingual-e5) as an encoder plan: learned word, position and
// token-type embeddings, LayerNorm, then post-norm blocks of bidirectional self-attention and a
// GELU feed-forward network, all with biases; then pooling per sequence. A sequence-classification
// checkpoint (BertForSequenceClassification, XLMRobertaForSequenceClassification: cross-encoder
// rerankers) ends instead in its head, dense + tanh + a linear layer on the first token, scoring
// each sequence.
#include <algorithm>
#include <cmath>
#include <string>

#include "converters/hf/hf_config.h"
#include "converters/hf/hf_import.h"
#include "converters/store_weights.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

struct BertConfig {
  uint32_t vocab, d_model, n_layers, n_heads, head_dim, ffn_dim, max_positions, type_vocab;
  float eps;
  // RoBERTa numbers positions from pad_token_id + 1 (its position ids skip the padding index):
  // the first position_offset rows of the table are never read, and a sequence has
  // max_positions - position_offset of them.
  uint32_t position_offset = 0;
  std::string model_type;  // the .kes architecture
};

struct BertLayer {
  uint32_t q, q_bias, k, k_bias, v, v_bias, o, o_bias, attn_norm, attn_norm_bias;
  uint32_t up, up_bias, down, down_bias, ffn_norm, ffn_norm_bias;
  // The smoothing factors of each matmul input (PlanBuilder::kNone: none): Q, K and V share one.
  uint32_t qkv_factor, o_factor, up_factor, down_factor;
};

Status ReadBertConfig(const HfConfig& config, BertConfig* c) {
  std::string type;
  KES_RETURN_IF_ERROR(config.String("model_type", &type));
  c->model_type = type;
  KES_RETURN_IF_ERROR(config.Uint("vocab_size", 1 << 24, &c->vocab));
  KES_RETURN_IF_ERROR(config.Uint("hidden_size", 1 << 16, &c->d_model));
  KES_RETURN_IF_ERROR(config.Uint("num_hidden_layers", 1024, &c->n_layers));
  KES_RETURN_IF_ERROR(config.Uint("num_attention_heads", 1024, &c->n_heads));
  KES_RETURN_IF_ERROR(config.Uint("intermediate_size", 1 << 20, &c->ffn_dim));
  KES_RETURN_IF_ERROR(config.Uint("max_position_embeddings", 65536, &c->max_positions));
  c->type_vocab = 2;
  if (config.Has("type_vocab_size")) {
    KES_RETURN_IF_ERROR(config.Uint("type_vocab_size", 1024, &c->type_vocab));
  }
  double eps = 1e-12;
  if (config.Has("layer_norm_eps"))
    KES_RETURN_IF_ERROR(config.PositiveFloat("layer_norm_eps", &eps));
  c->eps = static_cast<float>(eps);
  if (type == "xlm-roberta" || type == "roberta") {
    uint32_t pad = 1;  // RoBERTa's <pad>
    if (config.Has("pad_token_id")) {
      KES_RETURN_IF_ERROR(config.Uint("pad_token_id", c->vocab - 1, &pad, /*min=*/0));
    }
    c->position_offset = pad + 1;
    KES_CHECK_OR_RETURN(c->max_positions > c->position_offset,
                        config.path() + ": max_position_embeddings " +
                            std::to_string(c->max_positions) + " leaves no position after the " +
                            std::to_string(c->position_offset) +
                            " that RoBERTa skips (pad_token_id + 1)");
  }
  KES_CHECK_OR_RETURN(c->d_model % c->n_heads == 0,
                      config.path() + ": hidden_size " + std::to_string(c->d_model) +
                          " is not a multiple of num_attention_heads " +
                          std::to_string(c->n_heads));
  c->head_dim = c->d_model / c->n_heads;
  std::string act = "gelu", positions = "absolute";
  if (config.Has("hidden_act")) KES_RETURN_IF_ERROR(config.String("hidden_act", &act));
  KES_CHECK_OR_RETURN(act == "gelu", config.path() + ": hidden_act \"" + act +
                                         "\" is not supported (supported: gelu, the erf form)");
  if (config.Has("position_embedding_type")) {
    KES_RETURN_IF_ERROR(config.String("position_embedding_type", &positions));
  }
  KES_CHECK_OR_RETURN(positions == "absolute", config.path() + ": position_embedding_type \"" +
                                                   positions +
                                                   "\" is not supported (supported: absolute)");
  return OkStatus();
}

// The checkpoint's tensors in the .kes (matrices in options' dtype, smoothed where
// input_maxima calibrated them; vectors and the small tables f32), by id.
struct BertWeights {
  uint32_t word, position, token_type, embed_norm, embed_norm_bias;
  std::vector<BertLayer> layers;
  // A sequence-classification head, or kNone: dense [d, d] + tanh, then out [labels, d].
  uint32_t head_dense = PlanBuilder::kNone, head_dense_bias, head_out, head_out_bias;
  uint32_t labels = 0;
};

// Where the encoder's tensors sit: BertModel and XLMRobertaModel save them bare, their
// For* task classes under "bert." or "roberta.".
std::string EncoderPrefix(const HfCheckpoint& ckpt) {
  for (const char* prefix : {"bert.", "roberta."}) {
    if (ckpt.weights->Find(std::string(prefix) + "embeddings.word_embeddings.weight"))
      return prefix;
  }
  return "";
}

// The tensors of a sequence-classification head, if the checkpoint has one: BERT's pooler
// (dense + tanh on [CLS]) and "classifier", RoBERTa's "classifier.dense" and
// "classifier.out_proj". Empty names: no head (an embedding model; a BertModel's unused
// pooler is not one).
struct HeadNames {
  std::string dense, out;
};
HeadNames ClassifierHead(const HfCheckpoint& ckpt, const std::string& prefix) {
  if (ckpt.weights->Find("classifier.out_proj.weight")) {
    return {"classifier.dense", "classifier.out_proj"};
  }
  if (ckpt.weights->Find("classifier.weight")) return {prefix + "pooler.dense", "classifier"};
  return {};
}

Status ImportBertWeights(const HfCheckpoint& ckpt, const ConvertOptions& options,
                         const ChannelMaxima* input_maxima, const BertConfig& c, KesModel* out,
                         BertWeights* w) {
  const std::string prefix = EncoderPrefix(ckpt);
  const auto matrix_dtype = [&](const std::string& name, fb::DType* dtype) {
    return ckpt.WeightDType(prefix + name, options, dtype);
  };
  const auto weight = [&](const std::string& name, fb::DType dtype, std::vector<uint64_t> shape,
                          uint32_t* id) {
    return ckpt.Import(prefix + name, dtype, shape, out, id);
  };
  const auto matrix = [&](const std::string& name, uint64_t rows, uint64_t cols, uint32_t* id) {
    fb::DType dtype;
    KES_RETURN_IF_ERROR(matrix_dtype(name, &dtype));
    return weight(name, dtype, {rows, cols}, id);
  };
  const auto vector = [&](const std::string& name, uint64_t n, uint32_t* id) {
    return weight(name, fb::DType::F32, {n}, id);
  };
  // Matrices [rows, cols] that read one input. Block-quantized ones are smoothed when the inputs
  // were calibrated: column j times s_j, and *factor the f32 tensor `factor_name` of 1 / s_j for
  // the input's quantization (else kNone).
  struct Spec {
    std::string name;
    uint64_t rows;
    uint32_t* id;
  };
  const auto input_matrices = [&](const std::vector<Spec>& specs, uint64_t cols,
                                  const std::string& factor_name, uint32_t* factor) -> Status {
    *factor = PlanBuilder::kNone;
    fb::DType dtype;
    KES_RETURN_IF_ERROR(matrix_dtype(specs[0].name, &dtype));
    if (input_maxima == nullptr || !IsBlockQuantized(dtype)) {
      // f32 matmul weights go in panels of 16 rows (ops/matmul_f32_panels.h): their kernel needs
      // no reduction across lanes, faster at MiniLM's shapes than rows (docs/kernels.md).
      const fb::DType stored = dtype == fb::DType::F32 ? fb::DType::F32_PANELS : dtype;
      for (const Spec& m : specs) KES_RETURN_IF_ERROR(weight(m.name, stored, {m.rows, cols}, m.id));
      return OkStatus();
    }
    const auto calibrated = input_maxima->find(prefix + specs[0].name);
    KES_CHECK_OR_RETURN(calibrated != input_maxima->end() && calibrated->second.size() == cols,
                        "calibration recorded no input of '" + prefix + specs[0].name + "'");
    std::vector<std::vector<float>> values(specs.size());
    std::vector<const std::vector<float>*> group;
    for (size_t i = 0; i < specs.size(); ++i) {
      KES_RETURN_IF_ERROR(ckpt.Read(prefix + specs[i].name, {specs[i].rows, cols}, &values[i]));
      group.push_back(&values[i]);
    }
    const std::vector<float> s = SmoothingScales(calibrated->second, group);
    for (size_t i = 0; i < specs.size(); ++i) {
      for (size_t e = 0; e < values[i].size(); ++e) values[i][e] *= s[e % cols];
      KES_RETURN_IF_ERROR(StoreWeights(prefix + specs[i].name, values[i], dtype,
                                       {specs[i].rows, cols}, out, specs[i].id));
    }
    std::vector<float> inverse(cols);
    for (size_t j = 0; j < cols; ++j) inverse[j] = 1.0f / s[j];
    return StoreWeights(prefix + factor_name, inverse, fb::DType::F32, {cols}, out, factor);
  };

  const uint32_t d = c.d_model;
  KES_RETURN_IF_ERROR(matrix("embeddings.word_embeddings.weight", c.vocab, d, &w->word));
  // The small tables stay f32: they are read once per token, not streamed like matrices.
  // Position p of a sequence reads row p + position_offset: the rows before are left out.
  std::vector<float> positions;
  KES_RETURN_IF_ERROR(ckpt.Read(prefix + "embeddings.position_embeddings.weight",
                                {c.max_positions, d}, &positions));
  positions.erase(positions.begin(), positions.begin() + size_t{c.position_offset} * d);
  KES_RETURN_IF_ERROR(StoreWeights(prefix + "embeddings.position_embeddings.weight", positions,
                                   fb::DType::F32, {c.max_positions - c.position_offset, d}, out,
                                   &w->position));
  KES_RETURN_IF_ERROR(weight("embeddings.token_type_embeddings.weight", fb::DType::F32,
                             {c.type_vocab, d}, &w->token_type));
  KES_RETURN_IF_ERROR(vector("embeddings.LayerNorm.weight", d, &w->embed_norm));
  KES_RETURN_IF_ERROR(vector("embeddings.LayerNorm.bias", d, &w->embed_norm_bias));
  w->layers.resize(c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    BertLayer& lw = w->layers[l];
    KES_RETURN_IF_ERROR(input_matrices({{p + "attention.self.query.weight", d, &lw.q},
                                        {p + "attention.self.key.weight", d, &lw.k},
                                        {p + "attention.self.value.weight", d, &lw.v}},
                                       d, p + "attention.self.input_factor", &lw.qkv_factor));
    KES_RETURN_IF_ERROR(input_matrices({{p + "attention.output.dense.weight", d, &lw.o}}, d,
                                       p + "attention.output.dense.input_factor", &lw.o_factor));
    KES_RETURN_IF_ERROR(input_matrices({{p + "intermediate.dense.weight", c.ffn_dim, &lw.up}}, d,
                                       p + "intermediate.dense.input_factor", &lw.up_factor));
    KES_RETURN_IF_ERROR(input_matrices({{p + "output.dense.weight", d, &lw.down}}, c.ffn_dim,
                                       p + "output.dense.input_factor", &lw.down_factor));
    const std::tuple<std::string, uint64_t, uint32_t*> vectors[] = {
        {"attention.self.query.bias", d, &lw.q_bias},
        {"attention.self.key.bias", d, &lw.k_bias},
        {"attention.self.value.bias", d, &lw.v_bias},
        {"attention.output.dense.bias", d, &lw.o_bias},
        {"attention.output.LayerNorm.weight", d, &lw.attn_norm},
        {"attention.output.LayerNorm.bias", d, &lw.attn_norm_bias},
        {"intermediate.dense.bias", c.ffn_dim, &lw.up_bias},
        {"output.dense.bias", d, &lw.down_bias},
        {"output.LayerNorm.weight", d, &lw.ffn_norm},
        {"output.LayerNorm.bias", d, &lw.ffn_norm_bias}};
    for (const auto& [name, n, id] : vectors) KES_RETURN_IF_ERROR(vector(p + name, n, id));
  }
  const HeadNames head = ClassifierHead(ckpt, prefix);
  if (!head.out.empty()) {
    const safetensors::Checkpoint::Tensor* out_proj = ckpt.weights->Find(head.out + ".weight");
    KES_CHECK_OR_RETURN(out_proj->info->shape.size() == 2 && out_proj->info->shape[0] >= 1 &&
                            out_proj->info->shape[0] <= 1024 && out_proj->info->shape[1] == d,
                        "tensor '" + head.out + ".weight': expected shape [labels, " +
                            std::to_string(d) + "], found " + ShapeString(out_proj->info->shape));
    w->labels = static_cast<uint32_t>(out_proj->info->shape[0]);
    // The head reads one row per sequence: f32 costs nothing and keeps the scores exact.
    const auto f32_matrix = [&](const std::string& name, uint64_t rows, uint32_t* id) {
      return ckpt.Import(name, fb::DType::F32, {rows, d}, out, id);
    };
    KES_RETURN_IF_ERROR(f32_matrix(head.dense + ".weight", d, &w->head_dense));
    KES_RETURN_IF_ERROR(
        ckpt.Import(head.dense + ".bias", fb::DType::F32, {d}, out, &w->head_dense_bias));
    KES_RETURN_IF_ERROR(f32_matrix(head.out + ".weight", w->labels, &w->head_out));
    KES_RETURN_IF_ERROR(
        ckpt.Import(head.out + ".bias", fb::DType::F32, {w->labels}, out, &w->head_out_bias));
  }
  return OkStatus();
}

// The encode plan: steps of step_tokens tokens in up to max_batch sequences, then the
// sentence-transformers pooling (and normalization) the checkpoint asks for.
void AddBertEncodePlan(const BertConfig& c, const BertWeights& w,
                       const SentenceEmbeddingConfig& sentence, uint32_t max_batch,
                       uint32_t step_tokens, KesModel* out) {
  const uint32_t d = c.d_model;
  PlanBuilder b(*out, "encode", step_tokens);
  const uint32_t tokens = b.TokenInput();
  const uint32_t positions = b.PositionInput();
  const uint32_t types = b.TokenTypeInput();
  const uint32_t sequences = b.SequenceInput(max_batch);
  const uint32_t words = b.Activation("word_embedding", d);
  const uint32_t pos = b.Activation("position_embedding", d);
  const uint32_t seg = b.Activation("token_type_embedding", d);
  b.Embed(tokens, words, w.word, 1.0f);
  b.Embed(positions, pos, w.position, 1.0f);
  b.Embed(types, seg, w.token_type, 1.0f);
  b.Add(words, pos, words);
  b.Add(words, seg, words);
  uint32_t x = b.Activation("embeddings", d);
  b.LayerNorm(words, x, w.embed_norm, w.embed_norm_bias, c.eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const BertLayer& lw = w.layers[l];
    const std::string p = "layer." + std::to_string(l) + ".";
    const uint32_t q = b.Activation(p + "q", d), k = b.Activation(p + "k", d),
                   v = b.Activation(p + "v", d);
    b.MatMul(x, q, lw.q, lw.q_bias, false, lw.qkv_factor);
    b.MatMul(x, k, lw.k, lw.k_bias, false, lw.qkv_factor);
    b.MatMul(x, v, lw.v, lw.v_bias, false, lw.qkv_factor);
    const uint32_t attn = b.Activation(p + "attn", d);
    b.SequenceAttention(q, k, v, sequences, attn, c.n_heads, c.n_heads, c.head_dim, scale);
    const uint32_t attn_out = b.Activation(p + "attn_out", d);
    b.MatMul(attn, attn_out, lw.o, lw.o_bias, false, lw.o_factor);
    b.Add(x, attn_out, attn_out);
    const uint32_t mid = b.Activation(p + "mid", d);
    b.LayerNorm(attn_out, mid, lw.attn_norm, lw.attn_norm_bias, c.eps);
    const uint32_t up = b.Activation(p + "up", c.ffn_dim);
    b.MatMul(mid, up, lw.up, lw.up_bias, false, lw.up_factor);
    b.Activate(fb::Activation::GeluErf, up, up);
    const uint32_t down = b.Activation(p + "down", d);
    b.MatMul(up, down, lw.down, lw.down_bias, false, lw.down_factor);
    b.Add(mid, down, down);
    const uint32_t y = b.Activation(p + "out", d);
    b.LayerNorm(down, y, lw.ffn_norm, lw.ffn_norm_bias, c.eps);
    x = y;
  }
  if (w.head_dense != PlanBuilder::kNone) {
    // The head runs on every token and the first token's scores are kept: a matmul over the
    // step's rows is what the plan has, and one more d x d product per token is about 1/(12 *
    // layers) of the encoder's work. tanh is SoftCap with cap 1.
    const uint32_t h = b.Activation("head.dense", d);
    b.MatMul(x, h, w.head_dense, w.head_dense_bias);
    b.Activate(fb::Activation::SoftCap, h, h, 1.0f);
    const uint32_t token_scores = b.Activation("head.scores", w.labels);
    b.MatMul(h, token_scores, w.head_out, w.head_out_bias);
    const uint32_t scores = b.Fixed("scores_out", max_batch, w.labels);
    b.Pool(fb::PoolMode::Cls, false, token_scores, sequences, scores);
    b.ScoresOutput(scores);
  } else {
    const uint32_t pooled = b.Fixed("embeddings_out", max_batch, d);
    b.Pool(sentence.pooling, sentence.normalize, x, sequences, pooled);
    b.EmbeddingsOutput(pooled);
  }
  out->meta.plans.push_back(b.Finish());
}

}  // namespace

Status ConvertBert(const HfCheckpoint& ckpt, const ConvertOptions& options,
                   const HfEncoderOptions& encoder, const ChannelMaxima* input_maxima,
                   KesModel* out) {
  BertConfig c;
  KES_RETURN_IF_ERROR(ReadBertConfig(ckpt.config, &c));
  const uint32_t positions = c.max_positions - c.position_offset;
  const uint32_t max_seq = encoder.max_seq_length         ? encoder.max_seq_length
                           : ckpt.sentence.max_seq_length ? ckpt.sentence.max_seq_length
                                                          : positions;
  // Names where the length came from: a flag and a file are fixed in different places.
  const std::string max_seq_source = encoder.max_seq_length ? "--max-seq-length"
                                     : ckpt.sentence.max_seq_length
                                         ? "sentence_bert_config.json's max_seq_length"
                                         : "max_position_embeddings";
  KES_CHECK_OR_RETURN(max_seq >= 3 && max_seq <= positions,
                      max_seq_source + " " + std::to_string(max_seq) + ": expected 3.." +
                          std::to_string(positions) + " (config.json's max_position_embeddings" +
                          (c.position_offset ? " less the " + std::to_string(c.position_offset) +
                                                   " positions RoBERTa skips)"
                                             : ")"));
  KES_CHECK_OR_RETURN(options.max_batch >= 1 && uint64_t{options.max_batch} * max_seq <= 65536,
                      "a step of " + std::to_string(options.max_batch) + " sequences of " +
                          std::to_string(max_seq) + " tokens exceeds 65536 tokens");
  BertWeights w;
  KES_RETURN_IF_ERROR(ImportBertWeights(ckpt, options, input_maxima, c, out, &w));
  StartModel(
      c.model_type,
      {c.n_layers, c.d_model, c.n_heads, c.n_heads, c.head_dim, c.ffn_dim, c.vocab, max_seq, c.eps},
      &out->meta);  // no KV cache
  const uint32_t step_tokens =
      std::min(options.max_batch * max_seq, std::max(max_seq, encoder.step_tokens));
  AddBertEncodePlan(c, w, ckpt.sentence, options.max_batch, step_tokens, out);
  return OkStatus();
}

}  // namespace kestrel
