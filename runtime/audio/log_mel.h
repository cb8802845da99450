// Whisper's log-mel spectrogram: the encoder's input, computed from 16 kHz mono samples as
// OpenAI's Whisper and faster-whisper compute it:
//   - 160 zero samples appended, then reflect-padded by n_fft/2 = 200 at both ends ("center");
//   - frames of 400 samples every 160 (10 ms), a periodic Hann window, a real FFT (kissfft), the
//     power |X|^2 of bins 0..200; the last frame is dropped, so n samples give n / 160 + 1 frames;
//   - a Slaney-style mel filter bank (librosa's default, area-normalised, 0 Hz to 8 kHz);
//   - log10 of max(power, 1e-10), clamped from below to 8 below the largest value of the whole
//     signal, then (x + 4) / 4.
// Long audio is computed once, whole (the clamp is global), then cut into 30-second windows of
// 3000 frames, the last padded with zeros (faster-whisper pads the log-mel values, not the audio).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/status.h"

namespace kestrel::audio {

inline constexpr int kWhisperSampleRate = 16000;
inline constexpr int kWhisperFftSize = 400;
inline constexpr int kWhisperHop = 160;
inline constexpr int kWhisperWindowFrames = 3000;  // 30 seconds

class LogMelSpectrogram {
 public:
  // Allocates everything Compute needs (window, filter bank, FFT plan, one frame of scratch):
  // Compute itself allocates nothing. n_mels: 80 (Whisper up to large-v2) or 128 (large-v3).
  static Status Create(int n_mels, std::unique_ptr<LogMelSpectrogram>* out);
  ~LogMelSpectrogram();
  LogMelSpectrogram(const LogMelSpectrogram&) = delete;
  LogMelSpectrogram& operator=(const LogMelSpectrogram&) = delete;

  int n_mels() const { return n_mels_; }
  static size_t FrameCount(size_t n_samples) { return n_samples / kWhisperHop + 1; }

  // out: n_mels rows of FrameCount(n) values (mel-major, as the encoder's convolution reads
  // them). Not thread-safe: one scratch frame per object.
  void Compute(const float* samples, size_t n, float* out);

  // The filter bank as a dense [n_mels, n_fft/2 + 1] matrix (for tests).
  std::vector<float> DenseFilters() const;

 private:
  explicit LogMelSpectrogram(int n_mels);
  void PowerSpectrum(const float* samples, size_t n, size_t frame, float* power);

  int n_mels_;
  std::vector<float> window_;
  // Each mel filter is non-zero over a few consecutive FFT bins: filter m covers bins
  // first_bin_[m] onwards with the weights weights_[weight_begin_[m] .. weight_begin_[m + 1]).
  // One array for all filters: a vector each took ~5 reallocations per filter as it grew.
  std::vector<int> first_bin_;
  std::vector<size_t> weight_begin_;  // n_mels + 1
  std::vector<float> weights_;
  std::unique_ptr<std::max_align_t[]> fft_plan_memory_;
  void* fft_plan_ = nullptr;  // kiss_fftr_cfg, placed in fft_plan_memory_
  std::vector<float> frame_;
  std::vector<float> spectrum_;  // n_fft/2 + 1 complex values, interleaved
  std::vector<float> power_;
};

// Copies window `index` (frames [index * 3000, index * 3000 + 3000)) of a spectrogram of
// `frames` frames into out ([n_mels, 3000]), zeros past the end.
void CopyMelWindow(const float* mel, int n_mels, size_t frames, size_t index, float* out);

// Copies `count` frames from `first` (those that exist) of a spectrogram of `frames` frames into
// a window of `window` frames (out: [n_mels, window]), zeros after them: a decoding window that
// starts anywhere, as Whisper's seek does.
void CopyMelFrames(const float* mel, int n_mels, size_t frames, size_t first, size_t count,
                   size_t window, float* out);

}  // namespace kestrel::audio
