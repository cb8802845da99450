// Gemma 3 (text): hyper-parameters, weights and plans from a GGUF file written by llama.cpp.
//
// Per layer: RMSNorm -> Q, K, V -> QK-norm -> RoPE (theta per layer kind) -> attention (sliding
// window on local layers) -> output projection -> RMSNorm -> residual; RMSNorm -> GeGLU FFN ->
// RMSNorm -> residual. Embeddings scaled by sqrt(d_model); the LM head is the embedding table.
// Norm weights in the GGUF already include Gemma's +1.
#include <cmath>
#include <string>

#include "converters/arch/arch.h"

namespace kestrel {
namespace {

struct Gemma3Config {
  uint32_t n_layers, d_model, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, context;
  uint32_t window;                        // sliding window of local layers
  std::vector<bool> sliding;              // per layer
  float eps, theta_global, theta_local;
  float freq_scale_global = 1.0f;         // linear RoPE scaling on global layers
};

struct LayerWeights {
  uint32_t attn_norm, q, k, v, q_norm, k_norm, o, post_attn_norm;
  uint32_t ffn_norm, gate, up, down, post_ffn_norm;
};

struct Gemma3Weights {
  uint32_t embedding, output_norm;
  std::vector<LayerWeights> layers;
};

Status ReadConfig(const gguf::File& f, Gemma3Config* c) {
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.block_count", 1024, &c->n_layers));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.embedding_length", 1 << 16, &c->d_model));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.head_count", 1024, &c->n_heads));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.head_count_kv", 1024, &c->n_kv_heads));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.key_length", 1024, &c->head_dim));
  uint32_t value_length = c->head_dim;
  if (f.Has("gemma3.attention.value_length")) {
    KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.value_length", 1024, &value_length));
  }
  KES_CHECK_OR_RETURN(value_length == c->head_dim && c->head_dim % 2 == 0,
                      "expected equal, even key and value lengths, found " +
                          std::to_string(c->head_dim) + " and " + std::to_string(value_length));
  KES_CHECK_OR_RETURN(c->n_heads % c->n_kv_heads == 0,
                      "head_count " + std::to_string(c->n_heads) +
                          " is not a multiple of head_count_kv " + std::to_string(c->n_kv_heads));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.feed_forward_length", 1 << 20, &c->ffn_dim));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.context_length", 1 << 24, &c->context));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.sliding_window", 1 << 24, &c->window));
  double eps, theta;
  KES_RETURN_IF_ERROR(f.GetFloat("gemma3.attention.layer_norm_rms_epsilon", &eps));
  KES_RETURN_IF_ERROR(f.GetFloat("gemma3.rope.freq_base", &theta));
  KES_CHECK_OR_RETURN(eps > 0 && theta > 0, "epsilon and rope.freq_base must be positive");
  c->eps = static_cast<float>(eps);
  c->theta_global = static_cast<float>(theta);
  // llama.cpp's default for Gemma 3's local layers when the file does not say.
  double theta_local = 10000.0;
  if (f.Has("gemma3.rope.freq_base_swa")) {
    KES_RETURN_IF_ERROR(f.GetFloat("gemma3.rope.freq_base_swa", &theta_local));
  }
  c->theta_local = static_cast<float>(theta_local);
  if (f.Has("gemma3.rope.scaling.type")) {
    std::string type;
    KES_RETURN_IF_ERROR(f.GetString("gemma3.rope.scaling.type", &type));
    if (type == "linear") {
      double factor;
      KES_RETURN_IF_ERROR(f.GetFloat("gemma3.rope.scaling.factor", &factor));
      KES_CHECK_OR_RETURN(factor > 0, "rope.scaling.factor must be positive");
      c->freq_scale_global = static_cast<float>(1.0 / factor);
    } else {
      KES_CHECK_OR_RETURN(type == "none", "unsupported rope.scaling.type \"" + type + "\"");
    }
  }
  // Every sixth layer is global unless the file gives the pattern.
  int64_t pattern = 6;
  c->sliding.assign(c->n_layers, false);
  gguf::ValueType type;
  if (f.Has("gemma3.attention.sliding_window_pattern") &&
      f.GetType("gemma3.attention.sliding_window_pattern", &type).ok() &&
      type == gguf::ValueType::ARRAY) {
    std::vector<int64_t> flags;
    KES_RETURN_IF_ERROR(f.GetIntArray("gemma3.attention.sliding_window_pattern", &flags));
    KES_CHECK_OR_RETURN(flags.size() == c->n_layers,
                        "sliding_window_pattern: expected one flag per layer (" +
                            std::to_string(c->n_layers) + "), found " +
                            std::to_string(flags.size()));
    for (uint32_t l = 0; l < c->n_layers; ++l) c->sliding[l] = flags[l] != 0;
    return OkStatus();
  }
  if (f.Has("gemma3.attention.sliding_window_pattern")) {
    KES_RETURN_IF_ERROR(f.GetInt("gemma3.attention.sliding_window_pattern", &pattern));
    KES_CHECK_OR_RETURN(pattern >= 1, "sliding_window_pattern must be >= 1");
  }
  for (uint32_t l = 0; l < c->n_layers; ++l) c->sliding[l] = (l % pattern) != (pattern - 1);
  return OkStatus();
}

Status ImportWeights(const gguf::File& f, const Gemma3Config& c, fb::DType dtype, KesModel* m,
                     Gemma3Weights* w) {
  const uint64_t d = c.d_model, q_dim = uint64_t{c.n_heads} * c.head_dim,
                 kv_dim = uint64_t{c.n_kv_heads} * c.head_dim, ffn = c.ffn_dim;
  KES_RETURN_IF_ERROR(ImportTensor(f, "token_embd.weight", dtype, {c.vocab, d}, m, &w->embedding));
  KES_RETURN_IF_ERROR(
      ImportTensor(f, "output_norm.weight", fb::DType::F32, {d}, m, &w->output_norm));
  w->layers.resize(c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& lw = w->layers[l];
    const auto norm = [&](const char* name, uint64_t n, uint32_t* id) {
      return ImportTensor(f, p + name, fb::DType::F32, {n}, m, id);
    };
    const auto matrix = [&](const char* name, uint64_t out, uint64_t in, uint32_t* id) {
      return ImportTensor(f, p + name, dtype, {out, in}, m, id);
    };
    KES_RETURN_IF_ERROR(norm("attn_norm.weight", d, &lw.attn_norm));
    KES_RETURN_IF_ERROR(matrix("attn_q.weight", q_dim, d, &lw.q));
    KES_RETURN_IF_ERROR(matrix("attn_k.weight", kv_dim, d, &lw.k));
    KES_RETURN_IF_ERROR(matrix("attn_v.weight", kv_dim, d, &lw.v));
    KES_RETURN_IF_ERROR(norm("attn_q_norm.weight", c.head_dim, &lw.q_norm));
    KES_RETURN_IF_ERROR(norm("attn_k_norm.weight", c.head_dim, &lw.k_norm));
    KES_RETURN_IF_ERROR(matrix("attn_output.weight", d, q_dim, &lw.o));
    KES_RETURN_IF_ERROR(norm("post_attention_norm.weight", d, &lw.post_attn_norm));
    KES_RETURN_IF_ERROR(norm("ffn_norm.weight", d, &lw.ffn_norm));
    KES_RETURN_IF_ERROR(matrix("ffn_gate.weight", ffn, d, &lw.gate));
    KES_RETURN_IF_ERROR(matrix("ffn_up.weight", ffn, d, &lw.up));
    KES_RETURN_IF_ERROR(matrix("ffn_down.weight", d, ffn, &lw.down));
    KES_RETURN_IF_ERROR(norm("post_ffw_norm.weight", d, &lw.post_ffn_norm));
  }
  return OkStatus();
}

// The forward pass over one step of tokens. all_logits: logits for every token (the "score"
// plan) instead of only the last one.
std::unique_ptr<fb::PlanT> BuildPlan(const char* name, uint32_t max_tokens, bool all_logits,
                                     const Gemma3Config& c, const Gemma3Weights& w,
                                     const KesModel& m) {
  using fb::OpCode;
  PlanBuilder b(m, name, max_tokens);
  const uint64_t d = c.d_model, q_dim = uint64_t{c.n_heads} * c.head_dim,
                 kv_dim = uint64_t{c.n_kv_heads} * c.head_dim;
  const int64_t heads = c.n_heads, kv_heads = c.n_kv_heads, head_dim = c.head_dim;
  const float eps = c.eps;
  const float query_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  const uint32_t tokens = b.TokenInput();
  uint32_t x = b.Activation("embedding", d);  // [tokens, d_model]
  b.Op(OpCode::Embed, {tokens}, {x}, {w.embedding}, {}, {std::sqrt(static_cast<float>(d))});

  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const bool sliding = c.sliding[l];
    const float theta = sliding ? c.theta_local : c.theta_global;
    const float freq_scale = sliding ? 1.0f : c.freq_scale_global;

    const uint32_t attn_in = b.Activation(p + "attn_in", d);  // [tokens, d_model]
    b.Op(OpCode::RmsNorm, {x}, {attn_in}, {lw.attn_norm}, {int64_t(d)}, {eps});
    const uint32_t q = b.Activation(p + "q", q_dim);  // [tokens, n_heads * head_dim]
    const uint32_t k = b.Activation(p + "k", kv_dim);  // [tokens, n_kv_heads * head_dim]
    const uint32_t v = b.Activation(p + "v", kv_dim);
    b.MatMul(attn_in, q, lw.q);
    b.MatMul(attn_in, k, lw.k);
    b.MatMul(attn_in, v, lw.v);
    b.Op(OpCode::RmsNorm, {q}, {q}, {lw.q_norm}, {head_dim}, {eps});
    b.Op(OpCode::RmsNorm, {k}, {k}, {lw.k_norm}, {head_dim}, {eps});
    b.Op(OpCode::RopeNeox, {q}, {}, {}, {heads, head_dim}, {theta, freq_scale});
    b.Op(OpCode::RopeNeox, {k}, {}, {}, {kv_heads, head_dim}, {theta, freq_scale});
    b.Op(OpCode::KvStore, {k, v}, {}, {}, {int64_t(l)});
    const uint32_t attn = b.Activation(p + "attn", q_dim);  // [tokens, n_heads * head_dim]
    b.Op(OpCode::Attention, {q}, {attn}, {}, {int64_t(l), heads, kv_heads, head_dim},
         {query_scale});
    const uint32_t attn_out = b.Activation(p + "attn_out", d);
    b.MatMul(attn, attn_out, lw.o);
    b.Op(OpCode::RmsNorm, {attn_out}, {attn_out}, {lw.post_attn_norm}, {int64_t(d)}, {eps});
    const uint32_t mid = b.Activation(p + "residual_mid", d);
    b.Op(OpCode::Add, {x, attn_out}, {mid}, {});

    const uint32_t ffn_in = b.Activation(p + "ffn_in", d);
    b.Op(OpCode::RmsNorm, {mid}, {ffn_in}, {lw.ffn_norm}, {int64_t(d)}, {eps});
    const uint32_t gate = b.Activation(p + "gate", c.ffn_dim);  // [tokens, ffn_dim]
    const uint32_t up = b.Activation(p + "up", c.ffn_dim);
    b.MatMul(ffn_in, gate, lw.gate);
    b.MatMul(ffn_in, up, lw.up);
    b.Op(OpCode::GeluTanhMul, {gate, up}, {gate}, {});
    const uint32_t ffn_out = b.Activation(p + "ffn_out", d);
    b.MatMul(gate, ffn_out, lw.down);
    b.Op(OpCode::RmsNorm, {ffn_out}, {ffn_out}, {lw.post_ffn_norm}, {int64_t(d)}, {eps});
    const uint32_t out = b.Activation(p + "out", d);
    b.Op(OpCode::Add, {mid, ffn_out}, {out}, {});
    x = out;
  }
  const uint32_t final_norm = b.Activation("output_norm", d);
  b.Op(OpCode::RmsNorm, {x}, {final_norm}, {w.output_norm}, {int64_t(d)}, {eps});
  const uint32_t logits = all_logits ? b.Activation("logits", c.vocab)  // [tokens, vocab]
                                     : b.Fixed("logits", 1, c.vocab);   // [1, vocab]
  b.MatMul(final_norm, logits, w.embedding, !all_logits);
  b.SetLogits(logits);
  return b.Finish();
}

}  // namespace

Status ConvertGemma3(const gguf::File& f, const ConvertOptions& options, KesModel* m) {
  Gemma3Config c;
  KES_RETURN_IF_ERROR(ReadConfig(f, &c));
  auto tokenizer = std::make_unique<fb::TokenizerT>();
  KES_RETURN_IF_ERROR(ImportSpmTokenizer(f, tokenizer.get()));
  c.vocab = static_cast<uint32_t>(tokenizer->pieces.size());
  KES_CHECK_OR_RETURN(c.vocab > 0, "tokenizer has no tokens");

  Gemma3Weights w;
  KES_RETURN_IF_ERROR(ImportWeights(f, c, options.weight_dtype, m, &w));

  fb::ModelT& meta = m->meta;
  meta.architecture = "gemma3";
  if (f.Has("general.name")) KES_RETURN_IF_ERROR(f.GetString("general.name", &meta.name));
  meta.tokenizer = std::move(tokenizer);
  auto hp = std::make_unique<fb::HyperParamsT>();
  hp->n_layers = c.n_layers;
  hp->d_model = c.d_model;
  hp->n_heads = c.n_heads;
  hp->n_kv_heads = c.n_kv_heads;
  hp->head_dim = c.head_dim;
  hp->ffn_dim = c.ffn_dim;
  hp->vocab_size = c.vocab;
  hp->context_length = c.context;
  hp->rms_eps = c.eps;
  hp->rope_theta_global = c.theta_global;
  hp->rope_theta_local = c.theta_local;
  hp->sliding_window = c.window;
  meta.hparams = std::move(hp);

  meta.kv = std::make_unique<fb::KvLayoutT>();
  meta.kv->dtype = fb::DType::F32;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    auto layer = std::make_unique<fb::KvLayerT>();
    layer->n_kv_heads = c.n_kv_heads;
    layer->head_dim = c.head_dim;
    layer->window = c.sliding[l] ? c.window : 0;
    meta.kv->layers.push_back(std::move(layer));
  }
  meta.plans.push_back(BuildPlan("prefill", options.prefill_tokens, false, c, w, *m));
  meta.plans.push_back(BuildPlan("decode", 1, false, c, w, *m));
  meta.plans.push_back(BuildPlan("score", options.score_tokens, true, c, w, *m));
  return OkStatus();
}

}  // namespace kestrel
