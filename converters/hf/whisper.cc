// Whisper from a Hugging Face checkpoint (openai/whisper-*: config.json, model.safetensors,
// tokenizer.json): the audio encoder and the text decoder, as from a CTranslate2 folder
// (converters/arch/whisper.h). A checkpoint without decoder tensors (WhisperEncoder alone)
// converts to the encoder.
#include <string>
#include <vector>

#include "converters/arch/whisper.h"
#include "converters/ct2/whisper_tokenizer.h"
#include "converters/hf/hf_config.h"
#include "converters/store_weights.h"

namespace kestrel {

Status ConvertWhisperCheckpoint(const HfCheckpoint& ckpt, const ConvertOptions& options,
                                KesModel* out) {
  const HfConfig& c = ckpt.config;
  std::string activation;
  KES_RETURN_IF_ERROR(c.String("activation_function", &activation));
  KES_CHECK_OR_RETURN(activation == "gelu", c.path() + ": activation_function \"" + activation +
                                                "\" is not supported (Whisper's is \"gelu\")");
  WhisperShape shape;
  KES_RETURN_IF_ERROR(c.Uint("d_model", 1 << 16, &shape.d_model));
  KES_RETURN_IF_ERROR(c.Uint("encoder_layers", 1024, &shape.n_layers));
  KES_RETURN_IF_ERROR(c.Uint("encoder_attention_heads", 1 << 16, &shape.n_heads));
  KES_RETURN_IF_ERROR(c.Uint("encoder_ffn_dim", 1 << 20, &shape.ffn));
  KES_RETURN_IF_ERROR(c.Uint("num_mel_bins", 512, &shape.n_mels));
  KES_RETURN_IF_ERROR(c.Uint("max_source_positions", 65536, &shape.n_positions));
  KES_RETURN_IF_ERROR(c.Uint("vocab_size", 1 << 24, &shape.vocab));
  KES_RETURN_IF_ERROR(CheckWhisperShape(shape).WithContext(c.path()));

  // WhisperForConditionalGeneration's names, or WhisperModel's without "model.".
  std::string prefix =
      ckpt.weights->Find("model.encoder.conv1.weight") ? "model.encoder." : "encoder.";
  const uint32_t d = shape.d_model, ffn = shape.ffn;
  const auto matrix = [&](const std::string& name, uint64_t rows, uint64_t cols, uint32_t* id) {
    fb::DType dtype;
    KES_RETURN_IF_ERROR(ckpt.WeightDType(prefix + name, options, &dtype));
    return ckpt.Import(prefix + name, WhisperMatrixDType(dtype), {rows, cols}, out, id);
  };
  const auto vector = [&](const std::string& name, uint64_t n, uint32_t* id) {
    return ckpt.Import(prefix + name, fb::DType::F32, {n}, out, id);
  };
  const auto convolution = [&](const std::string& name, uint32_t in_channels, uint32_t* weight,
                               uint32_t* bias) {
    const std::string full = prefix + name + ".weight";
    const safetensors::Checkpoint::Tensor* t = ckpt.weights->Find(full);
    KES_CHECK_OR_RETURN(t != nullptr,
                        ckpt.folder + ": the checkpoint has no tensor '" + full + "'");
    const std::vector<uint64_t> expected = {d, in_channels, kWhisperConvKernel};
    KES_CHECK_OR_RETURN(t->info->shape == expected,
                        "tensor '" + full + "': expected shape " + ShapeString(expected) +
                            " (from config.json), found " + ShapeString(t->info->shape));
    std::vector<float> values;
    KES_RETURN_IF_ERROR(ckpt.weights->ReadF32(full, &values));
    KES_RETURN_IF_ERROR(StoreWeights(full, ConvolutionAsMatrix(values, d, in_channels),
                                     WhisperConvolutionDType(options),
                                     {d, uint64_t{kWhisperConvKernel} * in_channels}, out, weight));
    return vector(name + ".bias", d, bias);
  };
  // An attention block under `p` (its projections) with the LayerNorm `norm`: the encoder's and
  // the decoder's self-attention and the decoder's cross-attention.
  const auto attention = [&](const std::string& p, const std::string& norm,
                             WhisperAttentionWeights* a) -> Status {
    KES_RETURN_IF_ERROR(vector(norm + ".weight", d, &a->norm));
    KES_RETURN_IF_ERROR(vector(norm + ".bias", d, &a->norm_bias));
    KES_RETURN_IF_ERROR(matrix(p + ".q_proj.weight", d, d, &a->q));
    KES_RETURN_IF_ERROR(vector(p + ".q_proj.bias", d, &a->q_bias));
    KES_RETURN_IF_ERROR(matrix(p + ".k_proj.weight", d, d, &a->k));
    a->k_bias = PlanBuilder::kNone;  // Whisper's keys have no bias
    KES_RETURN_IF_ERROR(matrix(p + ".v_proj.weight", d, d, &a->v));
    KES_RETURN_IF_ERROR(vector(p + ".v_proj.bias", d, &a->v_bias));
    KES_RETURN_IF_ERROR(matrix(p + ".out_proj.weight", d, d, &a->o));
    return vector(p + ".out_proj.bias", d, &a->o_bias);
  };
  // The feed-forward block of layer prefix `p` (final_layer_norm, fc1 [n, d], fc2 [d, n]).
  const auto feed_forward = [&](const std::string& p, uint32_t n,
                                WhisperFeedForwardWeights* f) -> Status {
    KES_RETURN_IF_ERROR(vector(p + "final_layer_norm.weight", d, &f->norm));
    KES_RETURN_IF_ERROR(vector(p + "final_layer_norm.bias", d, &f->norm_bias));
    KES_RETURN_IF_ERROR(matrix(p + "fc1.weight", n, d, &f->up));
    KES_RETURN_IF_ERROR(vector(p + "fc1.bias", n, &f->up_bias));
    KES_RETURN_IF_ERROR(matrix(p + "fc2.weight", d, n, &f->down));
    return vector(p + "fc2.bias", d, &f->down_bias);
  };

  WhisperEncoderWeights w;
  KES_RETURN_IF_ERROR(convolution("conv1", shape.n_mels, &w.conv1, &w.conv1_bias));
  KES_RETURN_IF_ERROR(convolution("conv2", d, &w.conv2, &w.conv2_bias));
  KES_RETURN_IF_ERROR(ckpt.Import(prefix + "embed_positions.weight", fb::DType::F32,
                                  {shape.n_positions, d}, out, &w.positions));
  w.layers.resize(shape.n_layers);
  for (uint32_t l = 0; l < shape.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    WhisperEncoderLayerWeights& lw = w.layers[l];
    KES_RETURN_IF_ERROR(attention(p + "self_attn", p + "self_attn_layer_norm", &lw.attn));
    KES_RETURN_IF_ERROR(feed_forward(p, ffn, &lw.ffn));
  }
  KES_RETURN_IF_ERROR(vector("layer_norm.weight", d, &w.final_norm));
  KES_RETURN_IF_ERROR(vector("layer_norm.bias", d, &w.final_norm_bias));
  BuildWhisperEncoder(shape, w, out);

  prefix = prefix == "model.encoder." ? "model.decoder." : "decoder.";
  if (ckpt.weights->Find(prefix + "embed_tokens.weight") != nullptr) {
    WhisperDecoderShape dec;
    KES_RETURN_IF_ERROR(c.Uint("decoder_layers", 1024, &dec.n_layers));
    KES_RETURN_IF_ERROR(c.Uint("decoder_attention_heads", 1 << 16, &dec.n_heads));
    KES_RETURN_IF_ERROR(c.Uint("decoder_ffn_dim", 1 << 20, &dec.ffn));
    KES_RETURN_IF_ERROR(c.Uint("max_target_positions", 65536, &dec.n_text_positions));
    KES_CHECK_OR_RETURN(dec.n_heads > 0 && d % dec.n_heads == 0 && dec.n_layers > 0 &&
                            dec.ffn > 0 && dec.n_text_positions > 0,
                        c.path() +
                            ": expected decoder_layers, decoder_ffn_dim and "
                            "max_target_positions above 0 and decoder_attention_heads "
                            "dividing d_model " +
                            std::to_string(d));
    // The output projection (proj_out) is tied to the token embeddings: one tensor serves both.
    WhisperDecoderWeights dw;
    KES_RETURN_IF_ERROR(matrix("embed_tokens.weight", shape.vocab, d, &dw.embeddings));
    KES_RETURN_IF_ERROR(ckpt.Import(prefix + "embed_positions.weight", fb::DType::F32,
                                    {dec.n_text_positions, d}, out, &dw.positions));
    dw.layers.resize(dec.n_layers);
    for (uint32_t l = 0; l < dec.n_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      WhisperDecoderLayerWeights& lw = dw.layers[l];
      KES_RETURN_IF_ERROR(attention(p + "self_attn", p + "self_attn_layer_norm", &lw.self));
      KES_RETURN_IF_ERROR(attention(p + "encoder_attn", p + "encoder_attn_layer_norm", &lw.cross));
      KES_RETURN_IF_ERROR(feed_forward(p, dec.ffn, &lw.ffn));
    }
    KES_RETURN_IF_ERROR(vector("layer_norm.weight", d, &dw.final_norm));
    KES_RETURN_IF_ERROR(vector("layer_norm.bias", d, &dw.final_norm_bias));
    BuildWhisperDecoder(shape, dec, dw, out);
  }
  out->meta.tokenizer = std::make_unique<fb::TokenizerT>();
  return ct2::ReadWhisperTokenizer(ckpt.folder, shape.vocab, out->meta.tokenizer.get());
}

}  // namespace kestrel
