#include "converters/ct2/whisper_convert.h"

#include <cmath>
#include <string>
#include <vector>

#include "converters/ct2/whisper_tokenizer.h"
#include "converters/store_weights.h"

namespace kestrel::ct2 {
namespace {

constexpr float kLayerNormEps = 1e-5f;  // Whisper's nn.LayerNorm default
constexpr uint32_t kConvKernel = 3;
// The first convolution keeps the frame rate (two log-mel frames per encoder position), the
// second halves it.
constexpr uint32_t kFramesPerPosition = 2;

std::string ShapeOf(const Variable& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

class WhisperReader {
 public:
  WhisperReader(const File& file, const ConvertOptions& options, KesModel* out)
      : file_(file), options_(options), out_(out) {}

  // The variable `name` with exactly `shape`.
  Status Get(const std::string& name, const std::vector<uint32_t>& shape, const Variable** v) {
    *v = file_.Find(name);
    KES_CHECK_OR_RETURN(*v != nullptr, "model.bin has no variable '" + name + "'");
    KES_CHECK_OR_RETURN((*v)->shape == shape, "model.bin: '" + name + "': expected shape " +
                                                  ShapeOf(Variable{"", DType::F32, shape, 0,
                                                                   nullptr, 0}) +
                                                  ", found " + ShapeOf(**v));
    return OkStatus();
  }

  Status Values(const std::string& name, const std::vector<uint32_t>& shape,
                std::vector<float>* values) {
    const Variable* v;
    KES_RETURN_IF_ERROR(Get(name, shape, &v));
    return file_.ReadF32(*v, values).WithContext("model.bin: '" + name + "'");
  }

  // The dtype --weights asks for; keep: the file's own float type.
  fb::DType MatrixDType(const Variable& v) const {
    if (!options_.keep_types) return options_.weight_dtype;
    return v.dtype == DType::F16 ? fb::DType::F16
           : v.dtype == DType::BF16 ? fb::DType::BF16 : fb::DType::F32;
  }

  Status Store(const std::string& name, const std::vector<float>& values, fb::DType dtype,
               std::vector<uint64_t> shape, uint32_t* id) {
    return StoreWeights(name, values, dtype, shape, out_, id);
  }

  Status Vector(const std::string& name, uint32_t n, uint32_t* id) {
    std::vector<float> values;
    KES_RETURN_IF_ERROR(Values(name, {n}, &values));
    return Store(name, values, fb::DType::F32, {n}, id);
  }

  Status Matrix(const std::string& name, uint32_t rows, uint32_t cols, uint32_t* id) {
    const Variable* v;
    KES_RETURN_IF_ERROR(Get(name, {rows, cols}, &v));
    std::vector<float> values;
    KES_RETURN_IF_ERROR(file_.ReadF32(*v, &values).WithContext("model.bin: '" + name + "'"));
    return Store(name, values, MatrixDType(*v), {rows, cols}, id);
  }

  // A Conv1d weight [out, in, kernel] as the matrix [out, kernel * in] that multiplies Im2Col's
  // kernel-major rows.
  Status Convolution(const std::string& name, uint32_t out_channels, uint32_t in_channels,
                     uint32_t* weight, uint32_t* bias) {
    std::vector<float> w;
    KES_RETURN_IF_ERROR(Values(name + "/weight", {out_channels, in_channels, kConvKernel}, &w));
    std::vector<float> rows(w.size());
    for (size_t o = 0; o < out_channels; ++o) {
      for (size_t c = 0; c < in_channels; ++c) {
        for (size_t j = 0; j < kConvKernel; ++j) {
          rows[(o * kConvKernel + j) * in_channels + c] = w[(o * in_channels + c) * kConvKernel + j];
        }
      }
    }
    const fb::DType dtype =
        !options_.keep_types && options_.weight_dtype == fb::DType::F32 ? fb::DType::F32
                                                                         : fb::DType::F16;
    KES_RETURN_IF_ERROR(Store(name + "/weight", rows, dtype,
                              {out_channels, uint64_t{kConvKernel} * in_channels}, weight));
    return Vector(name + "/bias", out_channels, bias);
  }

  // CTranslate2 fuses the self-attention's q, k and v into linear_0 ([3d, d], bias [3d]): split
  // into three matrices, so each is a plain MatMul into its own buffer.
  Status FusedQkv(const std::string& name, uint32_t d, uint32_t weights[3], uint32_t biases[3]) {
    const Variable* v;
    KES_RETURN_IF_ERROR(Get(name + "/weight", {3 * d, d}, &v));
    std::vector<float> w, b;
    KES_RETURN_IF_ERROR(file_.ReadF32(*v, &w).WithContext("model.bin: '" + name + "/weight'"));
    KES_RETURN_IF_ERROR(Values(name + "/bias", {3 * d}, &b));
    const char* parts[3] = {"q", "k", "v"};
    for (size_t p = 0; p < 3; ++p) {
      const size_t rows = d, begin = p * rows * d;
      std::vector<float> part(w.begin() + static_cast<std::ptrdiff_t>(begin),
                              w.begin() + static_cast<std::ptrdiff_t>(begin + rows * d));
      KES_RETURN_IF_ERROR(Store(name + "/" + parts[p] + "/weight", part, MatrixDType(*v), {d, d},
                                &weights[p]));
      std::vector<float> part_bias(b.begin() + static_cast<std::ptrdiff_t>(p * d),
                                   b.begin() + static_cast<std::ptrdiff_t>((p + 1) * d));
      KES_RETURN_IF_ERROR(Store(name + "/" + parts[p] + "/bias", part_bias, fb::DType::F32, {d},
                                &biases[p]));
    }
    return OkStatus();
  }

 private:
  const File& file_;
  const ConvertOptions& options_;
  KesModel* out_;
};

struct EncoderLayer {
  uint32_t attn_norm, attn_norm_bias, qkv[3], qkv_bias[3], o, o_bias;
  uint32_t ffn_norm, ffn_norm_bias, up, up_bias, down, down_bias;
};

}  // namespace

Status ConvertWhisper(const std::string& folder, const File& file, const ConvertOptions& options,
                      KesModel* out) {
  KES_CHECK_OR_RETURN(file.spec() == "WhisperSpec",
                      "model.bin holds a " + file.spec() +
                          "; Kestrel converts CTranslate2's WhisperSpec only");
  WhisperReader r(file, options, out);

  // The shapes come from the weights themselves; everything else is checked against them.
  const Variable* conv1 = file.Find("encoder/conv1/weight");
  const Variable* positions = file.Find("encoder/position_encodings/encodings");
  const Variable* embeddings = file.Find("decoder/embeddings/weight");
  const Variable* heads = file.Find("encoder/num_heads");
  KES_CHECK_OR_RETURN(conv1 && positions && embeddings && heads,
                      "model.bin: expected encoder/conv1/weight, encoder/position_encodings/"
                      "encodings, encoder/num_heads and decoder/embeddings/weight");
  KES_CHECK_OR_RETURN(conv1->shape.size() == 3 && conv1->shape[2] == kConvKernel &&
                          positions->shape.size() == 2 && embeddings->shape.size() == 2,
                      "model.bin: expected encoder/conv1/weight [d, n_mels, 3], position "
                      "encodings [positions, d] and decoder embeddings [vocabulary, d]; found " +
                          ShapeOf(*conv1) + ", " + ShapeOf(*positions) + ", " +
                          ShapeOf(*embeddings));
  const uint32_t d = conv1->shape[0], n_mels = conv1->shape[1];
  const uint32_t n_positions = positions->shape[0], vocab = embeddings->shape[0];
  int64_t n_heads = 0;
  KES_RETURN_IF_ERROR(file.ReadScalarInt(*heads, &n_heads).WithContext("encoder/num_heads"));
  KES_CHECK_OR_RETURN(n_heads >= 1 && d % n_heads == 0 && d / n_heads <= 1024 &&
                          positions->shape[1] == d && n_positions >= 1 &&
                          n_positions <= 65536,
                      "model.bin: expected a width divisible into heads of at most 1024 and up to "
                      "65536 positions, found width " + std::to_string(d) + ", " +
                          std::to_string(n_heads) + " heads, positions " + ShapeOf(*positions));
  uint32_t n_layers = 0;
  while (file.Find("encoder/layer_" + std::to_string(n_layers) + "/ffn/linear_0/weight")) {
    ++n_layers;
  }
  KES_CHECK_OR_RETURN(n_layers >= 1, "model.bin: no encoder layers (encoder/layer_0/...)");
  const Variable* up0 = file.Find("encoder/layer_0/ffn/linear_0/weight");
  KES_CHECK_OR_RETURN(up0->shape.size() == 2 && up0->shape[1] == d,
                      "model.bin: encoder/layer_0/ffn/linear_0/weight: expected [ffn, " +
                          std::to_string(d) + "], found " + ShapeOf(*up0));
  const uint32_t ffn = up0->shape[0];
  const uint32_t head_dim = d / static_cast<uint32_t>(n_heads);

  uint32_t conv1_w, conv1_b, conv2_w, conv2_b, position_table, final_norm, final_norm_bias;
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv1", d, n_mels, &conv1_w, &conv1_b));
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv2", d, d, &conv2_w, &conv2_b));
  std::vector<float> table;
  KES_RETURN_IF_ERROR(
      r.Values("encoder/position_encodings/encodings", {n_positions, d}, &table));
  KES_RETURN_IF_ERROR(r.Store("encoder/position_encodings/encodings", table, fb::DType::F32,
                              {n_positions, d}, &position_table));
  std::vector<EncoderLayer> layers(n_layers);
  for (uint32_t l = 0; l < n_layers; ++l) {
    const std::string p = "encoder/layer_" + std::to_string(l) + "/";
    EncoderLayer& w = layers[l];
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/layer_norm/gamma", d, &w.attn_norm));
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/layer_norm/beta", d, &w.attn_norm_bias));
    KES_RETURN_IF_ERROR(r.FusedQkv(p + "self_attention/linear_0", d, w.qkv, w.qkv_bias));
    KES_RETURN_IF_ERROR(r.Matrix(p + "self_attention/linear_1/weight", d, d, &w.o));
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/linear_1/bias", d, &w.o_bias));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/layer_norm/gamma", d, &w.ffn_norm));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/layer_norm/beta", d, &w.ffn_norm_bias));
    KES_RETURN_IF_ERROR(r.Matrix(p + "ffn/linear_0/weight", ffn, d, &w.up));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/linear_0/bias", ffn, &w.up_bias));
    KES_RETURN_IF_ERROR(r.Matrix(p + "ffn/linear_1/weight", d, ffn, &w.down));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/linear_1/bias", d, &w.down_bias));
  }
  KES_RETURN_IF_ERROR(r.Vector("encoder/layer_norm/gamma", d, &final_norm));
  KES_RETURN_IF_ERROR(r.Vector("encoder/layer_norm/beta", d, &final_norm_bias));

  fb::ModelT& meta = out->meta;
  meta.architecture = "whisper";
  meta.hparams = std::make_unique<fb::HyperParamsT>();
  fb::HyperParamsT& hp = *meta.hparams;
  hp.n_layers = n_layers;
  hp.d_model = d;
  hp.n_heads = hp.n_kv_heads = static_cast<uint32_t>(n_heads);
  hp.head_dim = head_dim;
  hp.ffn_dim = ffn;
  hp.vocab_size = vocab;
  hp.context_length = n_positions;  // the encoder's positions (a 30-second window)
  hp.norm_eps = kLayerNormEps;
  meta.kv = std::make_unique<fb::KvLayoutT>();  // the decoder's cache comes with the decoder
  meta.kv->dtype = fb::DType::F32;
  meta.tokenizer = std::make_unique<fb::TokenizerT>();
  KES_RETURN_IF_ERROR(ReadWhisperTokenizer(folder, vocab, meta.tokenizer.get()));

  // One step is one window: n_positions positions, two log-mel frames each.
  PlanBuilder b(*out, "encode_audio", n_positions);
  const uint32_t features = b.AudioFeaturesInput(uint64_t{kFramesPerPosition} * n_mels);
  const uint32_t position_ids = b.PositionInput();
  const uint32_t sequences = b.SequenceInput(1);
  const uint32_t cols1 = b.Activation("conv1.cols", uint64_t{kFramesPerPosition} * kConvKernel * n_mels);
  b.Im2Col(features, cols1, kConvKernel, 1, 1, n_mels);
  const uint32_t c1 = b.Activation("conv1", uint64_t{kFramesPerPosition} * d);
  b.FramesMatMul(cols1, c1, conv1_w, conv1_b, kFramesPerPosition);
  b.Activate(fb::Activation::GeluErf, c1, c1);
  const uint32_t cols2 = b.Activation("conv2.cols", uint64_t{kConvKernel} * d);
  b.Im2Col(c1, cols2, kConvKernel, kFramesPerPosition, 1, d);
  uint32_t x = b.Activation("conv2", d);
  b.MatMul(cols2, x, conv2_w, conv2_b);
  b.Activate(fb::Activation::GeluErf, x, x);
  const uint32_t pos = b.Activation("positions", d);
  b.Embed(position_ids, pos, position_table, 1.0f);
  b.Add(x, pos, x);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (uint32_t l = 0; l < n_layers; ++l) {
    const EncoderLayer& w = layers[l];
    const std::string p = "layer." + std::to_string(l) + ".";
    const uint32_t h = b.Activation(p + "attn_norm", d);
    b.LayerNorm(x, h, w.attn_norm, w.attn_norm_bias, kLayerNormEps);
    const uint32_t q = b.Activation(p + "q", d), k = b.Activation(p + "k", d),
                   v = b.Activation(p + "v", d);
    b.MatMul(h, q, w.qkv[0], w.qkv_bias[0]);
    b.MatMul(h, k, w.qkv[1], w.qkv_bias[1]);
    b.MatMul(h, v, w.qkv[2], w.qkv_bias[2]);
    const uint32_t attn = b.Activation(p + "attn", d);
    b.SequenceAttention(q, k, v, sequences, attn, hp.n_heads, hp.n_heads, head_dim, scale);
    const uint32_t after_attn = b.Activation(p + "after_attn", d);
    b.MatMul(attn, after_attn, w.o, w.o_bias);
    b.Add(x, after_attn, after_attn);
    const uint32_t h2 = b.Activation(p + "ffn_norm", d);
    b.LayerNorm(after_attn, h2, w.ffn_norm, w.ffn_norm_bias, kLayerNormEps);
    const uint32_t up = b.Activation(p + "up", ffn);
    b.MatMul(h2, up, w.up, w.up_bias);
    b.Activate(fb::Activation::GeluErf, up, up);
    const uint32_t y = b.Activation(p + "out", d);
    b.MatMul(up, y, w.down, w.down_bias);
    b.Add(after_attn, y, y);
    x = y;
  }
  const uint32_t hidden = b.Activation("hidden_states", d);
  b.LayerNorm(x, hidden, final_norm, final_norm_bias, kLayerNormEps);
  b.HiddenStatesOutput(hidden);
  meta.plans.push_back(b.Finish());
  return OkStatus();
}

}  // namespace kestrel::ct2
