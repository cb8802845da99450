#include "converters/arch/whisper.h"

#include <cmath>
#include <string>

namespace kestrel {
namespace {

// The first convolution keeps the frame rate (two log-mel frames per encoder position), the
// second halves it.
constexpr uint32_t kFramesPerPosition = 2;

// x + fc2(GELU(fc1(LayerNorm(x)))): the feed-forward half of every Whisper block. Returns the
// new residual buffer.
uint32_t FeedForward(PlanBuilder& b, const std::string& p, uint32_t x, uint32_t d, uint32_t ffn,
                     const WhisperFeedForwardWeights& f) {
  const uint32_t h = b.Activation(p + "ffn_norm", d);
  b.LayerNorm(x, h, f.norm, f.norm_bias, kWhisperLayerNormEps);
  const uint32_t hidden = b.Activation(p + "up", ffn);
  b.MatMul(h, hidden, f.up, f.up_bias);
  b.Activate(fb::Activation::GeluErf, hidden, hidden);
  const uint32_t y = b.Activation(p + "out", d);
  b.MatMul(hidden, y, f.down, f.down_bias);
  b.Add(x, y, y);
  return y;
}

// LayerNorm(x) into the buffer `norm`, then its q, k and v projections into p + "q", "k" and "v":
// the start of a self-attention block.
void SelfAttentionInputs(PlanBuilder& b, const std::string& p, const std::string& norm, uint32_t x,
                         uint32_t d, const WhisperAttentionWeights& a, uint32_t* q, uint32_t* k,
                         uint32_t* v) {
  const uint32_t h = b.Activation(p + norm, d);
  b.LayerNorm(x, h, a.norm, a.norm_bias, kWhisperLayerNormEps);
  *q = b.Activation(p + "q", d);
  *k = b.Activation(p + "k", d);
  *v = b.Activation(p + "v", d);
  b.MatMul(h, *q, a.q, a.q_bias);
  b.MatMul(h, *k, a.k, a.k_bias);
  b.MatMul(h, *v, a.v, a.v_bias);
}

// x + attn Wo + bo into the buffer `name`: the end of an attention block. Returns the new
// residual buffer.
uint32_t AttentionOutput(PlanBuilder& b, const std::string& name, uint32_t attn, uint32_t x,
                         uint32_t d, const WhisperAttentionWeights& a) {
  const uint32_t y = b.Activation(name, d);
  b.MatMul(attn, y, a.o, a.o_bias);
  b.Add(x, y, y);
  return y;
}

}  // namespace

Status CheckWhisperShape(const WhisperShape& s) {
  KES_CHECK_OR_RETURN(
      s.n_mels >= 1 && s.d_model >= 1 && s.n_heads >= 1 && s.d_model % s.n_heads == 0 &&
          s.d_model / s.n_heads <= 1024 && s.ffn >= 1 && s.n_layers >= 1 && s.vocab >= 1 &&
          s.n_positions >= 1 && s.n_positions <= 65536,
      "expected a width divisible into heads of at most 1024, at least one layer "
      "and 1 to 65536 positions; found width " +
          std::to_string(s.d_model) + ", " + std::to_string(s.n_heads) + " heads, " +
          std::to_string(s.n_layers) + " layers, " + std::to_string(s.n_positions) + " positions");
  return OkStatus();
}

std::vector<float> ConvolutionAsMatrix(const std::vector<float>& weight, size_t out_channels,
                                       size_t in_channels) {
  constexpr size_t k = kWhisperConvKernel;
  std::vector<float> rows(weight.size());
  for (size_t o = 0; o < out_channels; ++o) {
    for (size_t c = 0; c < in_channels; ++c) {
      for (size_t j = 0; j < k; ++j) {
        rows[(o * k + j) * in_channels + c] = weight[(o * in_channels + c) * k + j];
      }
    }
  }
  return rows;
}

fb::DType WhisperConvolutionDType(const ConvertOptions& options) {
  return WhisperMatrixDType(!options.keep_types && options.weight_dtype == fb::DType::F32
                                ? fb::DType::F32
                                : fb::DType::F16);
}

fb::DType WhisperMatrixDType(fb::DType dtype) {
  return dtype == fb::DType::F32 ? fb::DType::F32_PANELS : dtype;
}

void BuildWhisperEncoder(const WhisperShape& s, const WhisperEncoderWeights& w, KesModel* out) {
  const uint32_t d = s.d_model, head_dim = s.d_model / s.n_heads;
  fb::ModelT& meta = out->meta;
  // The context: the encoder's positions (a 30-second window). The decoder's KV layers come with
  // the decoder.
  StartModel("whisper",
             {s.n_layers, d, s.n_heads, s.n_heads, head_dim, s.ffn, s.vocab, s.n_positions,
              kWhisperLayerNormEps},
             &meta);

  PlanBuilder b(*out, "encode_audio", s.n_positions);
  const uint32_t features = b.AudioFeaturesInput(uint64_t{kFramesPerPosition} * s.n_mels);
  const uint32_t position_ids = b.PositionInput();
  const uint32_t sequences = b.SequenceInput(1);
  const uint32_t cols1 =
      b.Activation("conv1.cols", uint64_t{kFramesPerPosition} * kWhisperConvKernel * s.n_mels);
  b.Im2Col(features, cols1, kWhisperConvKernel, 1, 1, s.n_mels);
  const uint32_t c1 = b.Activation("conv1", uint64_t{kFramesPerPosition} * d);
  b.FramesMatMul(cols1, c1, w.conv1, w.conv1_bias, kFramesPerPosition);
  b.Activate(fb::Activation::GeluErf, c1, c1);
  const uint32_t cols2 = b.Activation("conv2.cols", uint64_t{kWhisperConvKernel} * d);
  b.Im2Col(c1, cols2, kWhisperConvKernel, kFramesPerPosition, 1, d);
  uint32_t x = b.Activation("conv2", d);
  b.MatMul(cols2, x, w.conv2, w.conv2_bias);
  b.Activate(fb::Activation::GeluErf, x, x);
  const uint32_t pos = b.Activation("positions", d);
  b.Embed(position_ids, pos, w.positions, 1.0f);
  b.Add(x, pos, x);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (uint32_t l = 0; l < s.n_layers; ++l) {
    const WhisperEncoderLayerWeights& lw = w.layers[l];
    const std::string p = "layer." + std::to_string(l) + ".";
    uint32_t q, k, v;
    SelfAttentionInputs(b, p, "attn_norm", x, d, lw.attn, &q, &k, &v);
    const uint32_t attn = b.Activation(p + "attn", d);
    b.SequenceAttention(q, k, v, sequences, attn, s.n_heads, s.n_heads, head_dim, scale);
    const uint32_t after_attn = AttentionOutput(b, p + "after_attn", attn, x, d, lw.attn);
    x = FeedForward(b, p, after_attn, d, s.ffn, lw.ffn);
  }
  const uint32_t hidden = b.Activation("hidden_states", d);
  b.LayerNorm(x, hidden, w.final_norm, w.final_norm_bias, kWhisperLayerNormEps);
  b.HiddenStatesOutput(hidden);
  meta.plans.push_back(b.Finish());
}

namespace {

void DecoderPlan(const WhisperShape& s, const WhisperDecoderShape& dec,
                 const WhisperDecoderWeights& w, const char* name, uint32_t max_tokens,
                 KesModel* out) {
  const uint32_t d = s.d_model, head_dim = s.d_model / dec.n_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  PlanBuilder b(*out, name, max_tokens);
  const uint32_t tokens = b.TokenInput();
  const uint32_t positions = b.PositionInput();
  uint32_t x = b.Activation("embeddings", d);
  b.Embed(tokens, x, w.embeddings, 1.0f);
  const uint32_t pos = b.Activation("positions", d);
  b.Embed(positions, pos, w.positions, 1.0f);
  b.Add(x, pos, x);
  for (uint32_t l = 0; l < dec.n_layers; ++l) {
    const WhisperDecoderLayerWeights& lw = w.layers[l];
    const std::string p = "layer." + std::to_string(l) + ".";
    // Self-attention over the ring of layer l, then cross-attention over layer n_layers + l.
    uint32_t q, k, v;
    SelfAttentionInputs(b, p, "self_norm", x, d, lw.self, &q, &k, &v);
    b.KvStore(l, k, v);
    const uint32_t attn = b.Activation(p + "self_attn", d);
    b.Attention(l, q, attn, dec.n_heads, dec.n_heads, head_dim, scale, 0);
    const uint32_t after_self = AttentionOutput(b, p + "after_self", attn, x, d, lw.self);
    const uint32_t hc = b.Activation(p + "cross_norm", d);
    b.LayerNorm(after_self, hc, lw.cross.norm, lw.cross.norm_bias, kWhisperLayerNormEps);
    const uint32_t qc = b.Activation(p + "cross_q", d);
    b.MatMul(hc, qc, lw.cross.q, lw.cross.q_bias);
    const uint32_t cross = b.Activation(p + "cross_attn", d);
    b.CrossAttention(dec.n_layers + l, qc, cross, dec.n_heads, dec.n_heads, head_dim, scale);
    const uint32_t after_cross =
        AttentionOutput(b, p + "after_cross", cross, after_self, d, lw.cross);
    x = FeedForward(b, p, after_cross, d, dec.ffn, lw.ffn);
  }
  const uint32_t final_x = b.Activation("final_norm", d);
  b.LayerNorm(x, final_x, w.final_norm, w.final_norm_bias, kWhisperLayerNormEps);
  const uint32_t logits = b.Fixed("logits", 1, s.vocab);
  b.MatMul(final_x, logits, w.embeddings, PlanBuilder::kNone, /*last_row_only=*/true);
  b.LogitsOutput(logits);
  out->meta.plans.push_back(b.Finish());
}

}  // namespace

void BuildWhisperDecoder(const WhisperShape& s, const WhisperDecoderShape& dec,
                         const WhisperDecoderWeights& w, KesModel* out) {
  const uint32_t head_dim = s.d_model / dec.n_heads;
  fb::KvLayoutT& kv = *out->meta.kv;
  for (uint32_t cross_length : {0u, s.n_positions}) {
    for (uint32_t l = 0; l < dec.n_layers; ++l) {
      auto layer = std::make_unique<fb::KvLayerT>();
      layer->n_kv_heads = dec.n_heads;
      layer->head_dim = head_dim;
      layer->cross_length = cross_length;
      kv.layers.push_back(std::move(layer));
    }
  }
  out->meta.hparams->context_length = dec.n_text_positions;

  PlanBuilder b(*out, "cross_kv", s.n_positions);
  const uint32_t states = b.HiddenStatesInput(s.d_model);
  for (uint32_t l = 0; l < dec.n_layers; ++l) {
    const WhisperAttentionWeights& cross = w.layers[l].cross;
    const std::string p = "layer." + std::to_string(l) + ".";
    const uint32_t k = b.Activation(p + "cross_k", s.d_model),
                   v = b.Activation(p + "cross_v", s.d_model);
    b.MatMul(states, k, cross.k, cross.k_bias);
    b.MatMul(states, v, cross.v, cross.v_bias);
    b.KvStore(dec.n_layers + l, k, v);
  }
  out->meta.plans.push_back(b.Finish());
  DecoderPlan(s, dec, w, "prefill", dec.n_text_positions, out);
  DecoderPlan(s, dec, w, "decode", 1, out);
}

}  // namespace kestrel
