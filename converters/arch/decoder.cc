#include "converters/arch/decoder.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "converters/gguf_tokenizer.h"
#include "ops/rope.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

enum class PlanKind {
  kLastLogits,  // prefill, decode: the logits of the step's last token
  kAllLogits,   // score: the logits of every token
  kEmbeddings,  // encode: the step's tokens are whole texts; one pooled embedding per text
};

// The forward pass over one step of tokens. Generating plans keep keys and values in the KV
// cache and attend over it; an embedding model's encode plan attends within each text of the
// step (causally unless the file says otherwise; positions from its Positions input), and pools
// output_norm's rows; max_batch is its texts per step.
std::unique_ptr<fb::PlanT> BuildPlan(const char* name, uint32_t max_tokens, PlanKind kind,
                                     const DecoderConfig& c, const DecoderWeights& w,
                                     const KesModel& m, uint32_t max_batch = 0) {
  PlanBuilder b(m, name, max_tokens);
  const uint32_t d = c.d_model, q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const float eps = c.norm_eps;
  const bool encode = kind == PlanKind::kEmbeddings;

  const uint32_t tokens = b.TokenInput();
  const uint32_t positions = encode ? b.PositionInput() : PlanBuilder::kNone;
  const uint32_t sequences = encode ? b.SequenceInput(max_batch) : PlanBuilder::kNone;
  uint32_t x = b.Activation("embedding", d);  // [tokens, d_model]
  b.Embed(tokens, x, w.embedding, c.embed_scale);

  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const DecoderLayerWeights& lw = w.layers[l];
    const std::string p = "blk." + Num(l) + ".";
    const bool sliding = c.sliding[l];
    const float theta = sliding ? c.rope_theta_local : c.rope_theta;
    const float freq_scale = sliding ? 1.0f : c.rope_freq_scale;

    const uint32_t attn_in = b.Activation(p + "attn_in", d);  // [tokens, d_model]
    b.RmsNorm(x, attn_in, lw.attn_norm, d, eps);
    const uint32_t q = b.Activation(p + "q", q_dim);   // [tokens, n_heads * head_dim]
    const uint32_t k = b.Activation(p + "k", kv_dim);  // [tokens, n_kv_heads * head_dim]
    const uint32_t v = b.Activation(p + "v", kv_dim);
    b.MatMul(attn_in, q, lw.q, lw.q_bias);
    b.MatMul(attn_in, k, lw.k, lw.k_bias);
    b.MatMul(attn_in, v, lw.v, lw.v_bias);
    if (c.qk_norm) {
      b.RmsNorm(q, q, lw.q_norm, c.head_dim, eps);
      b.RmsNorm(k, k, lw.k_norm, c.head_dim, eps);
    }
    if (!c.no_rope[l]) {
      fb::RopeT rope;
      rope.style = c.rope_style;
      rope.head_dim = c.head_dim;
      rope.theta = theta;
      rope.freq_scale = freq_scale;
      rope.long_factors_above = c.long_rope_above;
      rope.rotary_dim = c.rotary_dims;
      rope.magnitude = c.rope_magnitude;
      rope.n_heads = c.n_heads;
      b.Rope(q, rope, w.rope_freqs, w.rope_long_freqs, positions);
      rope.n_heads = c.n_kv_heads;
      b.Rope(k, rope, w.rope_freqs, w.rope_long_freqs, positions);
    }
    const uint32_t attn = b.Activation(p + "attn", q_dim);  // [tokens, n_heads * head_dim]
    if (encode) {
      b.SequenceAttention(q, k, v, sequences, attn, c.n_heads, c.n_kv_heads, c.head_dim,
                          c.attention_scale, c.causal);
    } else {
      b.KvStore(l, k, v);
      b.Attention(l, q, attn, c.n_heads, c.n_kv_heads, c.head_dim, c.attention_scale,
                  sliding ? c.window : 0, c.attn_softcap);
    }
    const uint32_t attn_out = b.Activation(p + "attn_out", d);
    b.MatMul(attn, attn_out, lw.o);
    if (c.post_norms) b.RmsNorm(attn_out, attn_out, lw.post_attn_norm, d, eps);
    const uint32_t mid = b.Activation(p + "residual_mid", d);
    b.Add(x, attn_out, mid);

    const uint32_t ffn_in = b.Activation(p + "ffn_in", d);
    b.RmsNorm(mid, ffn_in, lw.ffn_norm, d, eps);
    const uint32_t gate = b.Activation(p + "gate", c.ffn_dim);  // [tokens, ffn_dim]
    const uint32_t up = b.Activation(p + "up", c.ffn_dim);
    b.MatMul(ffn_in, gate, lw.gate);
    b.MatMul(ffn_in, up, lw.up);
    b.GatedActivation(c.activation, gate, up, gate);
    const uint32_t ffn_out = b.Activation(p + "ffn_out", d);
    b.MatMul(gate, ffn_out, lw.down);
    if (c.post_norms) b.RmsNorm(ffn_out, ffn_out, lw.post_ffn_norm, d, eps);
    const uint32_t out = b.Activation(p + "out", d);
    b.Add(mid, ffn_out, out);
    x = out;
  }
  const uint32_t final_norm = b.Activation("output_norm", d);
  b.RmsNorm(x, final_norm, w.output_norm, d, eps);
  if (encode) {
    // The embedding of each text, unit length (Qwen3-Embedding's Normalize module; llama.cpp's
    // embedding tools normalize by default too).
    const uint32_t pooled = b.Fixed("embeddings_out", max_batch, d);
    b.Pool(c.pooling, /*normalize=*/true, final_norm, sequences, pooled);
    b.EmbeddingsOutput(pooled);
    return b.Finish();
  }
  const bool all_logits = kind == PlanKind::kAllLogits;
  const uint32_t logits = all_logits ? b.Activation("logits", c.vocab)  // [tokens, vocab]
                                     : b.Fixed("logits", 1, c.vocab);   // [1, vocab]
  b.MatMul(final_norm, logits, w.output, PlanBuilder::kNone, !all_logits);
  if (c.final_softcap > 0) b.Activate(fb::Activation::SoftCap, logits, logits, c.final_softcap);
  b.LogitsOutput(logits);
  return b.Finish();
}

Status ReadRopeScaling(const gguf::File& f, DecoderConfig* c) {
  const std::string key = c->arch + ".rope.scaling.type";
  if (!f.Has(key)) return OkStatus();
  std::string type;
  KES_RETURN_IF_ERROR(f.GetString(key, &type));
  if (type == "none") return OkStatus();
  KES_CHECK_OR_RETURN(type == "linear",
                      key + ": unsupported RoPE scaling \"" + type +
                          "\" (supported: none, linear, and Llama 3 frequency factors "
                          "in rope_freqs.weight)");
  double factor;
  KES_RETURN_IF_ERROR(f.GetFloat(c->arch + ".rope.scaling.factor", &factor));
  KES_CHECK_OR_RETURN(
      factor > 0 && std::isfinite(factor),
      c->arch + ".rope.scaling.factor must be positive, found " + std::to_string(factor));
  c->rope_freq_scale = static_cast<float>(1.0 / factor);
  return OkStatus();
}

// <arch>.pooling_type, llama.cpp's enum: 0 none (a generating model), 1 mean, 2 cls, 3 last
// (Qwen3-Embedding), 4 rank (a reranker's classifier head).
Status ReadPooling(const gguf::File& f, DecoderConfig* c) {
  const std::string key = c->arch + ".pooling_type";
  if (!f.Has(key)) return OkStatus();
  int64_t type = 0;
  KES_RETURN_IF_ERROR(f.GetInt(key, &type));
  switch (type) {
    case 0: return OkStatus();
    case 1: c->pooling = fb::PoolMode::Mean; break;
    case 2: c->pooling = fb::PoolMode::Cls; break;
    case 3: c->pooling = fb::PoolMode::Last; break;
    default:
      return Status::Error(key + " is " + std::to_string(type) +
                           ": expected 0 (none), 1 (mean), 2 (cls) or 3 (last); rerankers (4, "
                           "rank) are not supported");
  }
  c->embedding = true;
  return OkStatus();
}

// What an embedding model's encode plan cannot do, and a generating model's causal attention.
Status CheckAttentionKind(const gguf::File& f, DecoderConfig* c) {
  const std::string key = c->arch + ".attention.causal";
  if (f.Has(key)) KES_RETURN_IF_ERROR(f.GetBool(key, &c->causal));
  if (!c->embedding) {
    KES_CHECK_OR_RETURN(c->causal, key +
                                       " is false in a model without pooling_type: expected "
                                       "causal attention for generation");
    return OkStatus();
  }
  const bool sliding = std::find(c->sliding.begin(), c->sliding.end(), true) != c->sliding.end();
  KES_CHECK_OR_RETURN(!sliding && c->attn_softcap == 0 && c->long_rope_above == 0,
                      "an embedding model (" + c->arch +
                          ".pooling_type) with sliding-window "
                          "attention, attention soft-capping or LongRoPE is not supported");
  return OkStatus();
}

Status ReadFloat(const gguf::File& f, const std::string& key, float* out) {
  double v;
  KES_RETURN_IF_ERROR(f.GetFloat(key, &v));
  KES_CHECK_OR_RETURN(v > 0 && std::isfinite(v),
                      key + ": expected a positive number, found " + std::to_string(v));
  *out = static_cast<float>(v);
  return OkStatus();
}

}  // namespace

Status ReadSlidingLayers(const gguf::File& f, int64_t default_pattern, DecoderConfig* c) {
  const std::string key = c->arch + ".attention.sliding_window_pattern";
  gguf::ValueType type;
  if (f.Has(key) && f.GetType(key, &type).ok() && type == gguf::ValueType::ARRAY) {
    std::vector<int64_t> flags;
    KES_RETURN_IF_ERROR(f.GetIntArray(key, &flags));
    KES_CHECK_OR_RETURN(flags.size() == c->n_layers, key + ": expected one flag per layer (" +
                                                         std::to_string(c->n_layers) + "), found " +
                                                         std::to_string(flags.size()));
    for (uint32_t l = 0; l < c->n_layers; ++l) c->sliding[l] = flags[l] != 0;
    return OkStatus();
  }
  int64_t pattern = default_pattern;
  if (f.Has(key)) {
    KES_RETURN_IF_ERROR(f.GetInt(key, &pattern));
    KES_CHECK_OR_RETURN(pattern >= 1, key + " must be >= 1");
  }
  for (uint32_t l = 0; l < c->n_layers; ++l) c->sliding[l] = (l % pattern) != (pattern - 1);
  return OkStatus();
}

Status ReadDecoderConfig(const gguf::File& f, DecoderConfig* c) {
  const std::string& a = c->arch;
  KES_RETURN_IF_ERROR(GetDimension(f, a + ".block_count", 1024, &c->n_layers));
  KES_RETURN_IF_ERROR(GetDimension(f, a + ".embedding_length", 1 << 16, &c->d_model));
  KES_RETURN_IF_ERROR(GetDimension(f, a + ".attention.head_count", 1024, &c->n_heads));
  c->n_kv_heads = c->n_heads;
  if (f.Has(a + ".attention.head_count_kv")) {
    KES_RETURN_IF_ERROR(GetDimension(f, a + ".attention.head_count_kv", 1024, &c->n_kv_heads));
  }
  KES_CHECK_OR_RETURN(c->n_heads % c->n_kv_heads == 0, "head_count " + Num(c->n_heads) +
                                                           " is not a multiple of head_count_kv " +
                                                           Num(c->n_kv_heads));
  c->head_dim = c->d_model / c->n_heads;
  if (f.Has(a + ".attention.key_length")) {
    KES_RETURN_IF_ERROR(GetDimension(f, a + ".attention.key_length", 1024, &c->head_dim));
  }
  uint32_t value_length = c->head_dim;
  if (f.Has(a + ".attention.value_length")) {
    KES_RETURN_IF_ERROR(GetDimension(f, a + ".attention.value_length", 1024, &value_length));
  }
  KES_CHECK_OR_RETURN(value_length == c->head_dim && c->head_dim % 2 == 0,
                      "expected equal, even key and value lengths, found " + Num(c->head_dim) +
                          " and " + Num(value_length));
  if (f.Has(a + ".rope.dimension_count")) {
    uint32_t rot = 0;
    KES_RETURN_IF_ERROR(GetDimension(f, a + ".rope.dimension_count", 1024, &rot));
    KES_CHECK_OR_RETURN(rot > 0 && rot % 2 == 0 && rot <= c->head_dim,
                        a +
                            ".rope.dimension_count: expected an even count of at most the head "
                            "size " +
                            Num(c->head_dim) + ", found " + Num(rot));
    if (rot < c->head_dim) c->rotary_dims = rot;
  }
  KES_RETURN_IF_ERROR(GetDimension(f, a + ".feed_forward_length", 1 << 20, &c->ffn_dim));
  KES_RETURN_IF_ERROR(GetDimension(f, a + ".context_length", 1 << 24, &c->context));
  KES_RETURN_IF_ERROR(ReadFloat(f, a + ".attention.layer_norm_rms_epsilon", &c->norm_eps));
  if (f.Has(a + ".rope.freq_base")) {
    KES_RETURN_IF_ERROR(ReadFloat(f, a + ".rope.freq_base", &c->rope_theta));
  }
  c->attention_scale = 1.0f / std::sqrt(static_cast<float>(c->head_dim));
  if (f.Has(a + ".attention.scale")) {
    KES_RETURN_IF_ERROR(ReadFloat(f, a + ".attention.scale", &c->attention_scale));
  }
  c->sliding.assign(c->n_layers, false);
  c->no_rope.assign(c->n_layers, false);
  c->rope_freq_factors = f.FindTensor("rope_freqs.weight") != nullptr;
  KES_RETURN_IF_ERROR(ReadPooling(f, c));
  return ReadRopeScaling(f, c);
}

Status ImportDecoderWeights(const gguf::File& f, const DecoderConfig& c,
                            const ConvertOptions& options, KesModel* m, DecoderWeights* w) {
  const uint64_t d = c.d_model, q_dim = uint64_t{c.n_heads} * c.head_dim,
                 kv_dim = uint64_t{c.n_kv_heads} * c.head_dim, ffn = c.ffn_dim;
  // A matmul or embedding weight, stored as --weights says.
  const auto weight = [&](const std::string& name, uint64_t rows, uint64_t cols, uint32_t* id) {
    fb::DType dtype;
    KES_RETURN_IF_ERROR(WeightDType(f, name, options, &dtype));
    return ImportTensor(f, name, dtype, {rows, cols}, m, id);
  };
  KES_RETURN_IF_ERROR(weight("token_embd.weight", c.vocab, d, &w->embedding));
  KES_RETURN_IF_ERROR(
      ImportTensor(f, "output_norm.weight", fb::DType::F32, {d}, m, &w->output_norm));
  w->output = w->embedding;
  if (!c.embedding && f.FindTensor("output.weight") != nullptr) {  // an embedder has no LM head
    KES_RETURN_IF_ERROR(weight("output.weight", c.vocab, d, &w->output));
  }
  // One factor per pair of the rotated part of a head.
  const uint64_t factors = ops::RotatedDims(c.rotary_dims, c.head_dim) / 2;
  if (c.rope_freq_factors) {
    KES_RETURN_IF_ERROR(
        ImportTensor(f, "rope_freqs.weight", fb::DType::F32, {factors}, m, &w->rope_freqs));
  }
  if (c.long_rope_above > 0) {
    KES_RETURN_IF_ERROR(
        ImportTensor(f, "rope_factors_short.weight", fb::DType::F32, {factors}, m, &w->rope_freqs));
    KES_RETURN_IF_ERROR(ImportTensor(f, "rope_factors_long.weight", fb::DType::F32, {factors}, m,
                                     &w->rope_long_freqs));
  }
  w->layers.resize(c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + Num(l) + ".";
    DecoderLayerWeights& lw = w->layers[l];
    const auto vector = [&](const char* name, uint64_t n, uint32_t* id) {
      return ImportTensor(f, p + name, fb::DType::F32, {n}, m, id);
    };
    const auto matrix = [&](const char* name, uint64_t out, uint64_t in, uint32_t* id) {
      return weight(p + name, out, in, id);
    };
    const auto bias = [&](const char* name, uint64_t n, uint32_t* id) {
      return f.FindTensor(p + name) != nullptr ? vector(name, n, id) : OkStatus();
    };
    // Rows [first, first + n) of fused matrix `name` ([total, in]) as the matrix `part`.
    const auto rows = [&](const char* name, uint64_t total, uint64_t first, uint64_t n, uint64_t in,
                          const char* part, uint32_t* id) {
      fb::DType dtype;
      KES_RETURN_IF_ERROR(WeightDType(f, p + name, options, &dtype));
      return ImportTensorRows(f, p + name, total, first, n, in, dtype, p + part, m, id);
    };
    KES_RETURN_IF_ERROR(vector("attn_norm.weight", d, &lw.attn_norm));
    if (f.FindTensor(p + "attn_qkv.weight") != nullptr) {
      const uint64_t qkv = q_dim + 2 * kv_dim;
      const char* fused = "attn_qkv.weight";
      KES_RETURN_IF_ERROR(rows(fused, qkv, 0, q_dim, d, "attn_q.weight", &lw.q));
      KES_RETURN_IF_ERROR(rows(fused, qkv, q_dim, kv_dim, d, "attn_k.weight", &lw.k));
      KES_RETURN_IF_ERROR(rows(fused, qkv, q_dim + kv_dim, kv_dim, d, "attn_v.weight", &lw.v));
    } else {
      KES_RETURN_IF_ERROR(matrix("attn_q.weight", q_dim, d, &lw.q));
      KES_RETURN_IF_ERROR(matrix("attn_k.weight", kv_dim, d, &lw.k));
      KES_RETURN_IF_ERROR(matrix("attn_v.weight", kv_dim, d, &lw.v));
    }
    KES_RETURN_IF_ERROR(bias("attn_q.bias", q_dim, &lw.q_bias));
    KES_RETURN_IF_ERROR(bias("attn_k.bias", kv_dim, &lw.k_bias));
    KES_RETURN_IF_ERROR(bias("attn_v.bias", kv_dim, &lw.v_bias));
    if (c.qk_norm) {
      KES_RETURN_IF_ERROR(vector("attn_q_norm.weight", c.head_dim, &lw.q_norm));
      KES_RETURN_IF_ERROR(vector("attn_k_norm.weight", c.head_dim, &lw.k_norm));
    }
    KES_RETURN_IF_ERROR(matrix("attn_output.weight", d, q_dim, &lw.o));
    KES_RETURN_IF_ERROR(vector("ffn_norm.weight", d, &lw.ffn_norm));
    if (c.fused_gate_up) {  // the gate's rows first, as ggml's swiglu reads them
      KES_RETURN_IF_ERROR(rows("ffn_up.weight", 2 * ffn, 0, ffn, d, "ffn_gate.weight", &lw.gate));
      KES_RETURN_IF_ERROR(rows("ffn_up.weight", 2 * ffn, ffn, ffn, d, "ffn_up.weight", &lw.up));
    } else {
      KES_RETURN_IF_ERROR(matrix("ffn_gate.weight", ffn, d, &lw.gate));
      KES_RETURN_IF_ERROR(matrix("ffn_up.weight", ffn, d, &lw.up));
    }
    KES_RETURN_IF_ERROR(matrix("ffn_down.weight", d, ffn, &lw.down));
    if (c.post_norms) {
      KES_RETURN_IF_ERROR(vector("post_attention_norm.weight", d, &lw.post_attn_norm));
      KES_RETURN_IF_ERROR(vector("post_ffw_norm.weight", d, &lw.post_ffn_norm));
    }
  }
  return OkStatus();
}

void AddDecoderPlans(const DecoderConfig& c, const DecoderWeights& w, const ConvertOptions& options,
                     KesModel* m) {
  fb::ModelT& meta = m->meta;
  // An embedding model's texts fit one encode step.
  const uint32_t context = c.embedding ? std::min(c.context, options.prefill_tokens) : c.context;
  fb::HyperParamsT& hp = StartModel(c.arch,
                                    {c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim,
                                     c.ffn_dim, c.vocab, context, c.norm_eps},
                                    &meta);
  hp.rope_theta = c.rope_theta;
  hp.rope_theta_local = c.window > 0 ? c.rope_theta_local : 0.0f;
  hp.sliding_window = c.window;
  if (c.embedding) {  // no KV cache: each step holds its texts' keys and values
    meta.plans.push_back(BuildPlan("encode", options.prefill_tokens, PlanKind::kEmbeddings, c, w,
                                   *m, options.max_batch));
    return;
  }
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    auto layer = std::make_unique<fb::KvLayerT>();
    layer->n_kv_heads = c.n_kv_heads;
    layer->head_dim = c.head_dim;
    layer->window = c.sliding[l] ? c.window : 0;
    meta.kv->layers.push_back(std::move(layer));
  }
  meta.plans.push_back(
      BuildPlan("prefill", options.prefill_tokens, PlanKind::kLastLogits, c, w, *m));
  meta.plans.push_back(BuildPlan("decode", 1, PlanKind::kLastLogits, c, w, *m));
  meta.plans.push_back(BuildPlan("score", options.score_tokens, PlanKind::kAllLogits, c, w, *m));
}

Status ConvertDecoder(const gguf::File& f, DecoderConfig c, const ConvertOptions& options,
                      KesModel* m) {
  auto tokenizer = std::make_unique<fb::TokenizerT>();
  KES_RETURN_IF_ERROR(ImportTokenizer(f, tokenizer.get()));
  c.vocab = static_cast<uint32_t>(tokenizer->pieces.size());
  KES_CHECK_OR_RETURN(c.vocab > 0, "tokenizer has no tokens");
  KES_RETURN_IF_ERROR(CheckAttentionKind(f, &c));
  DecoderWeights w;
  KES_RETURN_IF_ERROR(ImportDecoderWeights(f, c, options, m, &w));
  if (f.Has("general.name")) KES_RETURN_IF_ERROR(f.GetString("general.name", &m->meta.name));
  m->meta.tokenizer = std::move(tokenizer);
  AddDecoderPlans(c, w, options, m);
  return OkStatus();
}

}  // namespace kestrel
