#include "converters/hf/hf_import.h"

#include <sys/stat.h>

#include <cmath>

#include "converters/hf/hf_config.h"
#include "converters/hf_tokenizer.h"
#include "converters/safetensors/json_reader.h"
#include "converters/store_weights.h"
#include "runtime/format.h"

namespace kestrel {

using nlohmann::json;

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status HfConfig::Read(const std::string& path) {
  path_ = path;
  return safetensors::ReadJson(path, json::value_t::object, &json_);
}

Status HfConfig::Uint(const std::string& key, uint64_t max, uint32_t* out, uint64_t min) const {
  KES_CHECK_OR_RETURN(json_.contains(key), path_ + ": missing \"" + key + "\"");
  const json& v = json_[key];
  KES_CHECK_OR_RETURN(
      v.is_number_unsigned() && v.get<uint64_t>() >= min && v.get<uint64_t>() <= max,
      path_ + ": \"" + key + "\": expected a whole number " + std::to_string(min) + ".." +
          std::to_string(max) + ", found " + v.dump());
  *out = static_cast<uint32_t>(v.get<uint64_t>());
  return OkStatus();
}

Status HfConfig::String(const std::string& key, std::string* out) const {
  KES_CHECK_OR_RETURN(json_.contains(key), path_ + ": missing \"" + key + "\"");
  const json& v = json_[key];
  KES_CHECK_OR_RETURN(v.is_string(), path_ + ": \"" + key + "\": expected a string, found " +
                                         safetensors::JsonKind(v));
  *out = v.get<std::string>();
  return OkStatus();
}

Status HfConfig::PositiveFloat(const std::string& key, double* out) const {
  KES_CHECK_OR_RETURN(json_.contains(key), path_ + ": missing \"" + key + "\"");
  const json& v = json_[key];
  KES_CHECK_OR_RETURN(v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>()),
                      path_ + ": \"" + key + "\": expected a positive number, found " + v.dump());
  *out = v.get<double>();
  return OkStatus();
}

Status HfCheckpoint::WeightDType(const std::string& name, const ConvertOptions& options,
                                 fb::DType* dtype) const {
  if (!options.keep_types) {
    *dtype = options.weight_dtype;
    return OkStatus();
  }
  const safetensors::Checkpoint::Tensor* t = weights->Find(name);
  KES_CHECK_OR_RETURN(t != nullptr, folder + ": the checkpoint has no tensor '" + name + "'");
  switch (t->info->dtype) {
    case safetensors::DType::F32: *dtype = fb::DType::F32; return OkStatus();
    case safetensors::DType::F16: *dtype = fb::DType::F16; return OkStatus();
    case safetensors::DType::BF16: *dtype = fb::DType::BF16; return OkStatus();
    default:
      return Status::Error("tensor '" + name + "' is " + safetensors::DTypeName(t->info->dtype) +
                           "; --weights keep keeps F32, F16 or BF16");
  }
}

Status HfCheckpoint::Read(const std::string& name, const std::vector<uint64_t>& shape,
                          std::vector<float>* values) const {
  const safetensors::Checkpoint::Tensor* t = weights->Find(name);
  KES_CHECK_OR_RETURN(t != nullptr, folder + ": the checkpoint has no tensor '" + name + "'");
  KES_CHECK_OR_RETURN(t->info->shape == shape, "'" + t->file->path() + "': tensor '" + name +
                                                   "': expected shape " + ShapeString(shape) +
                                                   " (from config.json), found " +
                                                   ShapeString(t->info->shape));
  return weights->ReadF32(name, values);
}

Status HfCheckpoint::Import(const std::string& name, fb::DType dtype,
                            const std::vector<uint64_t>& shape, KesModel* model,
                            uint32_t* id) const {
  std::vector<float> values;
  KES_RETURN_IF_ERROR(Read(name, shape, &values));
  return StoreWeights(name, values, dtype, shape, model, id);
}

Status ConvertHfCheckpoint(const std::string& folder, const ConvertOptions& options,
                           const HfEncoderOptions& encoder, KesModel* out) {
  KES_CHECK_OR_RETURN(options.tensor_types.empty(),
                      "the K-quant recipes (--weights q4_k_m, q4_k, q5_k, q6_k) are for GGUF "
                      "input; for a Hugging Face checkpoint use f32, f16, bf16, q8 or q4");
  HfCheckpoint ckpt;
  ckpt.folder = folder;
  const std::string config_path = folder + "/config.json";
  KES_CHECK_OR_RETURN(PathExists(config_path),
                      "expected a Hugging Face checkpoint folder (config.json, model.safetensors, "
                      "tokenizer files), found no config.json");
  KES_RETURN_IF_ERROR(ckpt.config.Read(config_path));
  std::string type;
  KES_RETURN_IF_ERROR(ckpt.config.String("model_type", &type));
  KES_CHECK_OR_RETURN(
      type == "bert" || type == "roberta" || type == "xlm-roberta" || type == "whisper",
      ckpt.config.path() + ": model_type \"" + type +
          "\" is not supported (supported: bert, roberta, xlm-roberta, whisper, "
          "and the "
          "decoders llama, "
          "mistral, qwen2, qwen3, smollm3, gemma2, gemma3 and phi3)");
  std::string name = folder.substr(folder.find_last_of('/', folder.size() - 2) + 1);
  if (!name.empty() && name.back() == '/') name.pop_back();
  if (type == "whisper") {
    KES_RETURN_IF_ERROR(safetensors::Checkpoint::Open(folder, &ckpt.weights));
    KES_RETURN_IF_ERROR(ConvertWhisperCheckpoint(ckpt, options, out));
    out->meta.name = name;
    return OkStatus();
  }
  KES_RETURN_IF_ERROR(ReadSentenceEmbeddingConfig(folder, &ckpt.sentence));
  KES_RETURN_IF_ERROR(safetensors::Checkpoint::Open(folder, &ckpt.weights));
  const auto add_tokenizer = [&](KesModel* model) {
    model->meta.tokenizer = std::make_unique<fb::TokenizerT>();
    KES_RETURN_IF_ERROR(ReadHfTokenizer(folder, model->meta.tokenizer.get()));
    const std::string tokenizer_file =
        PathExists(folder + "/tokenizer.json") ? "tokenizer.json" : "vocab.txt";
    KES_CHECK_OR_RETURN(model->meta.tokenizer->pieces.size() == model->meta.hparams->vocab_size,
                        tokenizer_file + " has " +
                            std::to_string(model->meta.tokenizer->pieces.size()) +
                            " tokens but config.json's vocab_size is " +
                            std::to_string(model->meta.hparams->vocab_size) +
                            ": expected one token per word embedding row");
    model->meta.name = name;
    return OkStatus();
  };
  // q8 and q4 quantize the matmuls' input activations: smooth them, calibrated on the f32
  // model's matmul inputs over the calibration texts.
  ChannelMaxima maxima;
  const bool smooth = !options.keep_types && IsBlockQuantized(options.weight_dtype) &&
                      encoder.calibration != "none";
  if (smooth) {
    std::vector<std::string> file_texts;
    if (!encoder.calibration.empty()) {
      KES_RETURN_IF_ERROR(ReadCalibrationTexts(encoder.calibration, &file_texts));
    }
    ConvertOptions f32 = options;
    f32.weight_dtype = fb::DType::F32;
    KesModel f32_model;
    KES_RETURN_IF_ERROR(ConvertBert(ckpt, f32, encoder, nullptr, &f32_model));
    KES_RETURN_IF_ERROR(add_tokenizer(&f32_model));
    KES_RETURN_IF_ERROR(MeasureMatMulInputs(
        &f32_model, file_texts.empty() ? BuiltinCalibrationTexts() : file_texts, &maxima));
  }
  KES_RETURN_IF_ERROR(ConvertBert(ckpt, options, encoder, smooth ? &maxima : nullptr, out));
  return add_tokenizer(out);
}

}  // namespace kestrel
