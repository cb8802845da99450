#include "converters/hf/smooth_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "runtime/encoder.h"
#include "runtime/model.h"

namespace kestrel {
namespace {

struct Recorder {
  const fb::Model* meta;
  ChannelMaxima* maxima;
};

// Before each matmul of an encode step: its input rows' per-channel maxima, under its weight's
// name. Encoder matmuls take one row per token (no frames, every token's output).
void RecordMatMulInput(void* context, const BoundPlan& plan, const fb::Op& op, size_t n_tokens) {
  if (op.params_type() != fb::OpParams::MatMul) return;
  const auto& recorder = *static_cast<const Recorder*>(context);
  const fb::Buffer& in = *plan.plan().buffers()->Get(op.inputs()->Get(0));
  if (in.dtype() != fb::DType::F32 || op.params_as_MatMul()->rows_per_token() != 1) return;
  const std::string name = recorder.meta->tensors()->Get(op.weights()->Get(0))->name()->str();
  const size_t k = in.row_elems();
  std::vector<float>& m = (*recorder.maxima)[name];
  m.resize(k, 0.0f);
  const float* x = reinterpret_cast<const float*>(plan.BufferData(op.inputs()->Get(0)));
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t j = 0; j < k; ++j) m[j] = std::max(m[j], std::fabs(x[t * k + j]));
  }
}

}  // namespace

const std::vector<std::string>& BuiltinCalibrationTexts() {
  static const std::vector<std::string> texts = {
#include "converters/hf/calibration_texts.inc"
  };
  return texts;
}

Status ReadCalibrationTexts(const std::string& path, std::vector<std::string>* texts) {
  std::ifstream file(path, std::ios::binary);
  KES_CHECK_OR_RETURN(file.good(), "calibration texts '" + path + "': cannot open the file");
  texts->clear();
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) texts->push_back(line);
  }
  KES_CHECK_OR_RETURN(!texts->empty(), "calibration texts '" + path +
                                           "': expected one text per line, found no text");
  return OkStatus();
}

Status MeasureMatMulInputs(KesModel* f32_model, const std::vector<std::string>& texts,
                           ChannelMaxima* out) {
  KES_RETURN_IF_ERROR(PlanArena(&f32_model->meta));
  std::vector<uint8_t> bytes;
  KES_RETURN_IF_ERROR(KesBytes(f32_model, &bytes));
  // Model::FromMemory wants the file 64-byte aligned, as a mapping is.
  std::vector<uint8_t> storage(bytes.size() + 64);
  uint8_t* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  std::memcpy(aligned, bytes.data(), bytes.size());
  bytes = std::vector<uint8_t>();
  std::unique_ptr<Model> model;
  KES_RETURN_IF_ERROR(Model::FromMemory(aligned, storage.size() - 64, &model));
  std::unique_ptr<Encoder> encoder;
  KES_RETURN_IF_ERROR(Encoder::Create(*model, EncoderOptions{}, &encoder));
  Recorder recorder{&model->meta(), out};
  encoder->SetStepObserver(RecordMatMulInput, &recorder);
  std::vector<float> embedding(encoder->embedding_dim());
  for (const std::string& text : texts) {
    std::vector<int32_t> ids;
    KES_RETURN_IF_ERROR(encoder->Tokenize(text, &ids));
    const int32_t* seq = ids.data();
    const size_t length = ids.size();
    KES_RETURN_IF_ERROR(encoder->Encode(&seq, &length, 1, embedding.data()));
  }
  return OkStatus();
}

std::vector<float> SmoothingScales(const std::vector<float>& x_max,
                                   const std::vector<const std::vector<float>*>& weights) {
  const size_t k = x_max.size();
  std::vector<float> w_max(k, 0.0f);
  for (const std::vector<float>* w : weights) {
    for (size_t i = 0; i < w->size(); ++i) {
      w_max[i % k] = std::max(w_max[i % k], std::fabs((*w)[i]));
    }
  }
  // s is rounded to a step of 2^(1/8) (at most 4.4% from sqrt(x / w), which the smoothing does
  // not notice), from a table rather than exp2f, whose last bit libms may disagree on: the maxima
  // come from this CPU's kernels, whose float sums differ in their last bits between SIMD
  // targets, and the grid gives every machine the same scales, hence the same .kes bytes, unless
  // a ratio falls within those last bits of a step boundary.
  static constexpr float kEighthOctaves[8] = {1.0f,        1.09050773f, 1.18920712f, 1.29683955f,
                                              1.41421356f, 1.54221083f, 1.68179283f, 1.83400809f};
  std::vector<float> s(k, 1.0f);
  for (size_t j = 0; j < k; ++j) {
    const double ratio = static_cast<double>(x_max[j]) / w_max[j];
    if (x_max[j] > 0.0f && w_max[j] > 0.0f && std::isfinite(ratio)) {
      // log2(sqrt(ratio)) in eighths, s within 2^-13..2^13.
      const long eighths = std::clamp(std::lround(4.0 * std::log2(ratio)), -104L, 104L);
      const long octave = eighths >= 0 ? eighths / 8 : -((-eighths + 7) / 8);
      s[j] = std::ldexp(kEighthOctaves[eighths - 8 * octave], static_cast<int>(octave));
    }
  }
  return s;
}

}  // namespace kestrel
