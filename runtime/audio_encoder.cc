#include "runtime/audio_encoder.h"

#include <cstring>
#include <string>

#include "runtime/plan_check.h"

namespace kestrel {

Status AudioEncoder::Create(const Model& model, const AudioEncoderOptions& options,
                            std::unique_ptr<AudioEncoder>* out) {
  KES_CHECK_OR_RETURN(model.has_audio_encoder(),
                      "this model has no 'encode_audio' plan (it is not a speech model)");
  KES_RETURN_IF_ERROR(CheckCanRun(options.n_threads));
  std::unique_ptr<AudioEncoder> e(new AudioEncoder(model, options.n_threads));
  e->memory_ = PlanEncoderMemory(model);
  KES_RETURN_IF_ERROR(e->arena_.Acquire(options.arena, options.arena_bytes, e->memory_.arena_bytes)
                          .WithContext("the audio encoder"));
  const fb::Plan& plan = *model.FindPlan("encode_audio");
  KES_RETURN_IF_ERROR(e->plan_.Bind(model, plan, e->arena_.data(), e->memory_));

  // The plan check guaranteed each role's dtype and shape; the plan must have all of them.
  const BoundPlan& bound = e->plan_;
  const fb::Buffer* features = bound.IoBuffer(fb::IoRole::AudioFeatures);
  const fb::Buffer* sequences = bound.IoBuffer(fb::IoRole::Sequences);
  KES_CHECK_OR_RETURN(features != nullptr && bound.Io(fb::IoRole::Positions) != nullptr &&
                          sequences != nullptr && bound.Io(fb::IoRole::HiddenStates) != nullptr,
                      "plan 'encode_audio': expected audio-features, positions and "
                      "sequence-table inputs and a hidden-states output");
  e->n_positions_ = plan.max_tokens();
  e->d_model_ = model.hparams().d_model();
  // n_mels is the channel count of the convolution that reads the features (the format has no
  // n_mels hyper-parameter); each position's feature row holds whole frames of it.
  const uint32_t features_id = static_cast<uint32_t>(FindPlanIo(plan, fb::IoRole::AudioFeatures));
  size_t channels = 0;
  for (const fb::Op* op : *plan.ops()) {
    if (op->params_type() == fb::OpParams::Im2Col && op->inputs()->Get(0) == features_id) {
      channels = op->params_as_Im2Col()->channels();
      break;
    }
  }
  KES_CHECK_OR_RETURN(channels > 0 && features->row_elems() % channels == 0,
                      "plan 'encode_audio': the audio features are not read by a convolution");
  e->n_mels_ = channels;
  e->frames_per_position_ = features->row_elems() / channels;
  e->features_ = reinterpret_cast<float*>(bound.Io(fb::IoRole::AudioFeatures));
  e->positions_ = reinterpret_cast<int32_t*>(bound.Io(fb::IoRole::Positions));
  e->sequences_ = reinterpret_cast<int32_t*>(bound.Io(fb::IoRole::Sequences));
  e->hidden_ = reinterpret_cast<const float*>(bound.Io(fb::IoRole::HiddenStates));
  *out = std::move(e);
  return OkStatus();
}

AudioEncoder::~AudioEncoder() = default;

void AudioEncoder::Encode(const float* mel, float* out) {
  // Mel-major in, frame-major rows for the plan: frame f's n_mels values end to end.
  const size_t frames = n_frames();
  for (size_t f = 0; f < frames; ++f) {
    float* row = features_ + f * n_mels_;
    for (size_t m = 0; m < n_mels_; ++m) row[m] = mel[m * frames + f];
  }
  for (size_t p = 0; p < n_positions_; ++p) positions_[p] = static_cast<int32_t>(p);
  sequences_[0] = 0;
  sequences_[1] = static_cast<int32_t>(n_positions_);
  plan_.Run(pool_, n_positions_, 0);
  std::memcpy(out, hidden_, n_positions_ * d_model_ * sizeof(float));
}

}  // namespace kestrel
