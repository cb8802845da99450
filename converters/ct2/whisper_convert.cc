#include "converters/ct2/whisper_convert.h"

#include <string>
#include <vector>

#include "converters/arch/whisper.h"
#include "converters/ct2/whisper_tokenizer.h"
#include "converters/store_weights.h"

namespace kestrel::ct2 {
namespace {

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

  Status Convolution(const std::string& name, uint32_t out_channels, uint32_t in_channels,
                     uint32_t* weight, uint32_t* bias) {
    std::vector<float> w;
    KES_RETURN_IF_ERROR(
        Values(name + "/weight", {out_channels, in_channels, kWhisperConvKernel}, &w));
    KES_RETURN_IF_ERROR(Store(name + "/weight", ConvolutionAsMatrix(w, out_channels, in_channels),
                              WhisperConvolutionDType(options_),
                              {out_channels, uint64_t{kWhisperConvKernel} * in_channels}, weight));
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
  KES_CHECK_OR_RETURN(conv1->shape.size() == 3 && conv1->shape[2] == kWhisperConvKernel &&
                          positions->shape.size() == 2 && embeddings->shape.size() == 2,
                      "model.bin: expected encoder/conv1/weight [d, n_mels, 3], position "
                      "encodings [positions, d] and decoder embeddings [vocabulary, d]; found " +
                          ShapeOf(*conv1) + ", " + ShapeOf(*positions) + ", " +
                          ShapeOf(*embeddings));
  WhisperShape shape;
  shape.d_model = conv1->shape[0];
  shape.n_mels = conv1->shape[1];
  shape.n_positions = positions->shape[0];
  shape.vocab = embeddings->shape[0];
  const uint32_t d = shape.d_model;
  int64_t n_heads = 0;
  KES_RETURN_IF_ERROR(file.ReadScalarInt(*heads, &n_heads).WithContext("encoder/num_heads"));
  KES_CHECK_OR_RETURN(n_heads >= 1 && n_heads <= 65536 && positions->shape[1] == d,
                      "model.bin: expected 1 to 65536 encoder heads and positions of width " +
                          std::to_string(d) + ", found " + std::to_string(n_heads) +
                          " heads and positions " + ShapeOf(*positions));
  shape.n_heads = static_cast<uint32_t>(n_heads);
  while (file.Find("encoder/layer_" + std::to_string(shape.n_layers) + "/ffn/linear_0/weight")) {
    ++shape.n_layers;
  }
  const Variable* up0 = file.Find("encoder/layer_0/ffn/linear_0/weight");
  KES_CHECK_OR_RETURN(up0 != nullptr && up0->shape.size() == 2 && up0->shape[1] == d,
                      "model.bin: expected encoder/layer_0/ffn/linear_0/weight [ffn, " +
                          std::to_string(d) + "]");
  shape.ffn = up0->shape[0];
  KES_RETURN_IF_ERROR(CheckWhisperShape(shape).WithContext("model.bin"));
  const uint32_t ffn = shape.ffn;

  WhisperEncoderWeights w;
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv1", d, shape.n_mels, &w.conv1, &w.conv1_bias));
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv2", d, d, &w.conv2, &w.conv2_bias));
  std::vector<float> table;
  KES_RETURN_IF_ERROR(
      r.Values("encoder/position_encodings/encodings", {shape.n_positions, d}, &table));
  KES_RETURN_IF_ERROR(r.Store("encoder/position_encodings/encodings", table, fb::DType::F32,
                              {shape.n_positions, d}, &w.positions));
  w.layers.resize(shape.n_layers);
  for (uint32_t l = 0; l < shape.n_layers; ++l) {
    const std::string p = "encoder/layer_" + std::to_string(l) + "/";
    WhisperEncoderLayerWeights& lw = w.layers[l];
    uint32_t qkv[3], qkv_bias[3];
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/layer_norm/gamma", d, &lw.attn_norm));
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/layer_norm/beta", d, &lw.attn_norm_bias));
    KES_RETURN_IF_ERROR(r.FusedQkv(p + "self_attention/linear_0", d, qkv, qkv_bias));
    lw.q = qkv[0], lw.k = qkv[1], lw.v = qkv[2];
    lw.q_bias = qkv_bias[0], lw.k_bias = qkv_bias[1], lw.v_bias = qkv_bias[2];
    KES_RETURN_IF_ERROR(r.Matrix(p + "self_attention/linear_1/weight", d, d, &lw.o));
    KES_RETURN_IF_ERROR(r.Vector(p + "self_attention/linear_1/bias", d, &lw.o_bias));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/layer_norm/gamma", d, &lw.ffn_norm));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/layer_norm/beta", d, &lw.ffn_norm_bias));
    KES_RETURN_IF_ERROR(r.Matrix(p + "ffn/linear_0/weight", ffn, d, &lw.up));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/linear_0/bias", ffn, &lw.up_bias));
    KES_RETURN_IF_ERROR(r.Matrix(p + "ffn/linear_1/weight", d, ffn, &lw.down));
    KES_RETURN_IF_ERROR(r.Vector(p + "ffn/linear_1/bias", d, &lw.down_bias));
  }
  KES_RETURN_IF_ERROR(r.Vector("encoder/layer_norm/gamma", d, &w.final_norm));
  KES_RETURN_IF_ERROR(r.Vector("encoder/layer_norm/beta", d, &w.final_norm_bias));

  BuildWhisperEncoder(shape, w, out);
  out->meta.tokenizer = std::make_unique<fb::TokenizerT>();
  KES_RETURN_IF_ERROR(ReadWhisperTokenizer(folder, shape.vocab, out->meta.tokenizer.get()));
  return OkStatus();
}

}  // namespace kestrel::ct2
