// An AudioEncoder runs a speech model's "encode_audio" plan (Whisper's encoder): one window of
// log-mel features in, one hidden state per encoder position out. Its arena holds the plan's
// activations only, sized by the converter for one window; Encode allocates nothing.
//
// Lifetime: the Model and a caller-provided arena must outlive the AudioEncoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/arena.h"
#include "runtime/encoder.h"
#include "runtime/executor.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

// Threads and an optional caller-owned arena, as for text encoders.
using AudioEncoderOptions = EncoderOptions;

class AudioEncoder {
 public:
  static Status Create(const Model& model, const AudioEncoderOptions& options,
                       std::unique_ptr<AudioEncoder>* out);
  ~AudioEncoder();
  AudioEncoder(const AudioEncoder&) = delete;
  AudioEncoder& operator=(const AudioEncoder&) = delete;

  // mel: one window, n_mels() rows of n_frames() values (mel-major, as
  // audio::LogMelSpectrogram and audio::CopyMelWindow lay it out). out: n_positions() rows of
  // d_model() floats.
  void Encode(const float* mel, float* out);

  size_t n_mels() const { return n_mels_; }
  size_t n_frames() const { return n_positions_ * frames_per_position_; }
  size_t n_positions() const { return n_positions_; }
  size_t d_model() const { return d_model_; }
  size_t n_threads() const { return pool_.size(); }
  const MemoryPlan& memory() const { return memory_; }
  const Model& model() const { return model_; }

 private:
  AudioEncoder(const Model& model, size_t n_threads) : model_(model), pool_(n_threads) {}

  const Model& model_;
  ThreadPool pool_;
  MemoryPlan memory_;
  Arena arena_;
  BoundPlan plan_;
  float* features_ = nullptr;      // [n_positions, frames_per_position * n_mels]
  int32_t* positions_ = nullptr;   // [n_positions]
  int32_t* sequences_ = nullptr;   // one row: (0, n_positions)
  const float* hidden_ = nullptr;  // [n_positions, d_model]
  size_t n_mels_ = 0, n_positions_ = 0, frames_per_position_ = 0, d_model_ = 0;
};

}  // namespace kestrel
