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
    KES_CHECK_OR_RETURN((*v)->shape == shape,
                        "model.bin: '" + name + "': expected shape " +
                            ShapeOf(Variable{"", DType::F32, shape, 0, nullptr, 0}) + ", found " +
                            ShapeOf(**v));
    return OkStatus();
  }

  Status Values(const std::string& name, const std::vector<uint32_t>& shape,
                std::vector<float>* values) {
    const Variable* v;
    KES_RETURN_IF_ERROR(Get(name, shape, &v));
    return file_.ReadF32(*v, values).WithContext("model.bin: '" + name + "'");
  }

  // The dtype --weights asks for (keep: the file's own float type), stored as Whisper stores it.
  fb::DType MatrixDType(const Variable& v) const {
    if (!options_.keep_types) return WhisperMatrixDType(options_.weight_dtype);
    return WhisperMatrixDType(v.dtype == DType::F16    ? fb::DType::F16
                              : v.dtype == DType::BF16 ? fb::DType::BF16
                                                       : fb::DType::F32);
  }

  Status Store(const std::string& name, const std::vector<float>& values, fb::DType dtype,
               std::vector<uint64_t> shape, uint32_t* id) {
    return StoreWeights(name, values, dtype, shape, out_, id);
  }

  // A small table read once per token (positions): f32 whatever --weights says.
  Status F32Table(const std::string& name, uint32_t rows, uint32_t cols, uint32_t* id) {
    std::vector<float> values;
    KES_RETURN_IF_ERROR(Values(name, {rows, cols}, &values));
    return Store(name, values, fb::DType::F32, {rows, cols}, id);
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

  // CTranslate2 fuses projections of one input: the self-attention's q, k and v (linear_0,
  // [3d, d]) and the cross-attention's k and v (linear_1, [2d, d]). Split into one matrix per
  // part, so each is a plain MatMul into its own buffer.
  Status FusedSplit(const std::string& name, uint32_t d, const std::vector<std::string>& parts,
                    uint32_t* weights, uint32_t* biases) {
    const uint32_t n = static_cast<uint32_t>(parts.size());
    const Variable* v;
    KES_RETURN_IF_ERROR(Get(name + "/weight", {n * d, d}, &v));
    std::vector<float> w, b;
    KES_RETURN_IF_ERROR(file_.ReadF32(*v, &w).WithContext("model.bin: '" + name + "/weight'"));
    KES_RETURN_IF_ERROR(Values(name + "/bias", {n * d}, &b));
    for (size_t p = 0; p < n; ++p) {
      const auto at = [](const std::vector<float>& x, size_t i) {
        return x.begin() + static_cast<std::ptrdiff_t>(i);
      };
      KES_RETURN_IF_ERROR(Store(name + "/" + parts[p] + "/weight",
                                std::vector<float>(at(w, p * d * d), at(w, (p + 1) * d * d)),
                                MatrixDType(*v), {d, d}, &weights[p]));
      KES_RETURN_IF_ERROR(Store(name + "/" + parts[p] + "/bias",
                                std::vector<float>(at(b, p * d), at(b, (p + 1) * d)),
                                fb::DType::F32, {d}, &biases[p]));
    }
    return OkStatus();
  }

  // A LayerNorm's gamma and beta.
  Status Norm(const std::string& name, uint32_t d, uint32_t* gamma, uint32_t* beta) {
    KES_RETURN_IF_ERROR(Vector(name + "/gamma", d, gamma));
    return Vector(name + "/beta", d, beta);
  }

  // A projection's weight [rows, cols] and bias [rows].
  Status Linear(const std::string& name, uint32_t rows, uint32_t cols, uint32_t* weight,
                uint32_t* bias) {
    KES_RETURN_IF_ERROR(Matrix(name + "/weight", rows, cols, weight));
    return Vector(name + "/bias", rows, bias);
  }

  // A self-attention block under `prefix` (".../self_attention/"): layer_norm, the fused q, k, v
  // projection linear_0 and the output projection linear_1.
  Status SelfAttention(const std::string& prefix, uint32_t d, WhisperAttentionWeights* a) {
    uint32_t qkv[3], qkv_bias[3];
    KES_RETURN_IF_ERROR(Norm(prefix + "layer_norm", d, &a->norm, &a->norm_bias));
    KES_RETURN_IF_ERROR(FusedSplit(prefix + "linear_0", d, {"q", "k", "v"}, qkv, qkv_bias));
    a->q = qkv[0], a->k = qkv[1], a->v = qkv[2];
    a->q_bias = qkv_bias[0], a->k_bias = qkv_bias[1], a->v_bias = qkv_bias[2];
    return Linear(prefix + "linear_1", d, d, &a->o, &a->o_bias);
  }

  // A feed-forward block under `prefix` (".../ffn/"): layer_norm, linear_0 [ffn, d] and
  // linear_1 [d, ffn].
  Status FeedForward(const std::string& prefix, uint32_t d, uint32_t ffn,
                     WhisperFeedForwardWeights* f) {
    KES_RETURN_IF_ERROR(Norm(prefix + "layer_norm", d, &f->norm, &f->norm_bias));
    KES_RETURN_IF_ERROR(Linear(prefix + "linear_0", ffn, d, &f->up, &f->up_bias));
    return Linear(prefix + "linear_1", d, ffn, &f->down, &f->down_bias);
  }

 private:
  const File& file_;
  const ConvertOptions& options_;
  KesModel* out_;
};

// The decoder's weights (decoder/...) and its plans.
Status ReadDecoder(const File& file, WhisperReader& r, const WhisperShape& shape, KesModel* out) {
  const uint32_t d = shape.d_model;
  WhisperDecoderShape dec;
  const Variable* heads = file.Find("decoder/num_heads");
  const Variable* positions = file.Find("decoder/position_encodings/encodings");
  KES_CHECK_OR_RETURN(heads != nullptr && positions != nullptr && positions->shape.size() == 2 &&
                          positions->shape[1] == d && positions->shape[0] >= 1 &&
                          positions->shape[0] <= 65536,
                      "model.bin: expected decoder/num_heads and decoder/position_encodings/"
                      "encodings [1..65536, " +
                          std::to_string(d) + "]");
  int64_t n_heads = 0;
  KES_RETURN_IF_ERROR(file.ReadScalarInt(*heads, &n_heads).WithContext("decoder/num_heads"));
  KES_CHECK_OR_RETURN(n_heads >= 1 && n_heads <= 65536 && d % n_heads == 0 && d / n_heads <= 1024,
                      "model.bin: decoder/num_heads " + std::to_string(n_heads) +
                          " does not divide the width " + std::to_string(d) +
                          " into heads of at most 1024");
  dec.n_heads = static_cast<uint32_t>(n_heads);
  dec.n_text_positions = positions->shape[0];
  while (file.Find("decoder/layer_" + std::to_string(dec.n_layers) + "/ffn/linear_0/weight")) {
    ++dec.n_layers;
  }
  const Variable* up0 = file.Find("decoder/layer_0/ffn/linear_0/weight");
  KES_CHECK_OR_RETURN(
      up0->shape.size() == 2 && up0->shape[1] == d && up0->shape[0] >= 1,
      "model.bin: expected decoder/layer_0/ffn/linear_0/weight [ffn, " + std::to_string(d) + "]");
  dec.ffn = up0->shape[0];

  WhisperDecoderWeights w;
  KES_RETURN_IF_ERROR(r.Matrix("decoder/embeddings/weight", shape.vocab, d, &w.embeddings));
  KES_RETURN_IF_ERROR(
      r.F32Table("decoder/position_encodings/encodings", dec.n_text_positions, d, &w.positions));
  w.layers.resize(dec.n_layers);
  for (uint32_t l = 0; l < dec.n_layers; ++l) {
    const std::string p = "decoder/layer_" + std::to_string(l) + "/";
    WhisperDecoderLayerWeights& lw = w.layers[l];
    uint32_t kv[2], kv_bias[2];
    KES_RETURN_IF_ERROR(r.SelfAttention(p + "self_attention/", d, &lw.self));
    KES_RETURN_IF_ERROR(r.Norm(p + "attention/layer_norm", d, &lw.cross.norm, &lw.cross.norm_bias));
    KES_RETURN_IF_ERROR(r.Linear(p + "attention/linear_0", d, d, &lw.cross.q, &lw.cross.q_bias));
    KES_RETURN_IF_ERROR(r.FusedSplit(p + "attention/linear_1", d, {"k", "v"}, kv, kv_bias));
    lw.cross.k = kv[0], lw.cross.v = kv[1], lw.cross.k_bias = kv_bias[0],
    lw.cross.v_bias = kv_bias[1];
    KES_RETURN_IF_ERROR(r.Linear(p + "attention/linear_2", d, d, &lw.cross.o, &lw.cross.o_bias));
    KES_RETURN_IF_ERROR(r.FeedForward(p + "ffn/", d, dec.ffn, &lw.ffn));
  }
  KES_RETURN_IF_ERROR(r.Norm("decoder/layer_norm", d, &w.final_norm, &w.final_norm_bias));
  BuildWhisperDecoder(shape, dec, w, out);
  return OkStatus();
}

}  // namespace

Status ConvertWhisper(const std::string& folder, const File& file, const ConvertOptions& options,
                      KesModel* out) {
  KES_CHECK_OR_RETURN(
      file.spec() == "WhisperSpec",
      "model.bin holds a " + file.spec() + "; Kestrel converts CTranslate2's WhisperSpec only");
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
  KES_CHECK_OR_RETURN(
      up0 != nullptr && up0->shape.size() == 2 && up0->shape[1] == d,
      "model.bin: expected encoder/layer_0/ffn/linear_0/weight [ffn, " + std::to_string(d) + "]");
  shape.ffn = up0->shape[0];
  KES_RETURN_IF_ERROR(CheckWhisperShape(shape).WithContext("model.bin"));
  const uint32_t ffn = shape.ffn;

  WhisperEncoderWeights w;
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv1", d, shape.n_mels, &w.conv1, &w.conv1_bias));
  KES_RETURN_IF_ERROR(r.Convolution("encoder/conv2", d, d, &w.conv2, &w.conv2_bias));
  KES_RETURN_IF_ERROR(
      r.F32Table("encoder/position_encodings/encodings", shape.n_positions, d, &w.positions));
  w.layers.resize(shape.n_layers);
  for (uint32_t l = 0; l < shape.n_layers; ++l) {
    const std::string p = "encoder/layer_" + std::to_string(l) + "/";
    WhisperEncoderLayerWeights& lw = w.layers[l];
    KES_RETURN_IF_ERROR(r.SelfAttention(p + "self_attention/", d, &lw.attn));
    KES_RETURN_IF_ERROR(r.FeedForward(p + "ffn/", d, ffn, &lw.ffn));
  }
  KES_RETURN_IF_ERROR(r.Norm("encoder/layer_norm", d, &w.final_norm, &w.final_norm_bias));

  BuildWhisperEncoder(shape, w, out);
  if (file.Find("decoder/layer_0/ffn/linear_0/weight") != nullptr) {
    KES_RETURN_IF_ERROR(ReadDecoder(file, r, shape, out));
  }
  out->meta.tokenizer = std::make_unique<fb::TokenizerT>();
  KES_RETURN_IF_ERROR(ReadWhisperTokenizer(folder, shape.vocab, out->meta.tokenizer.get()));
  return OkStatus();
}

}  // namespace kestrel::ct2
