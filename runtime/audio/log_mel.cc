#include "runtime/audio/log_mel.h"

#include <kiss_fftr.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace kestrel::audio {
namespace {

constexpr int kBins = kWhisperFftSize / 2 + 1;
constexpr int kTailPadding = 160;  // zeros faster-whisper appends before the STFT
constexpr int kCenterPadding = kWhisperFftSize / 2;

// Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above.
constexpr double kLinearHzPerMel = 200.0 / 3.0;
constexpr double kLogRegionHz = 1000.0;
constexpr double kLogRegionMel = kLogRegionHz / kLinearHzPerMel;  // 15
double LogStep() { return std::log(6.4) / 27.0; }

double HzToMel(double hz) {
  return hz < kLogRegionHz ? hz / kLinearHzPerMel
                           : kLogRegionMel + std::log(hz / kLogRegionHz) / LogStep();
}
double MelToHz(double mel) {
  return mel < kLogRegionMel ? kLinearHzPerMel * mel
                             : kLogRegionHz * std::exp(LogStep() * (mel - kLogRegionMel));
}

// numpy's "reflect" padding (the edge sample is not repeated), applied as often as needed: a
// signal shorter than the padding reflects more than once, with period 2 * (length - 1).
size_t ReflectIndex(long long i, size_t length) {
  if (length == 1) return 0;
  const long long period = 2 * (static_cast<long long>(length) - 1);
  i %= period;
  if (i < 0) i += period;
  return static_cast<size_t>(i < static_cast<long long>(length) ? i : period - i);
}

}  // namespace

LogMelSpectrogram::LogMelSpectrogram(int n_mels) : n_mels_(n_mels) {}

LogMelSpectrogram::~LogMelSpectrogram() = default;

Status LogMelSpectrogram::Create(int n_mels, std::unique_ptr<LogMelSpectrogram>* out) {
  if (n_mels < 1 || n_mels > 512) {
    return Status::Error("log-mel spectrogram: expected 1 to 512 mel bins, found " +
                         std::to_string(n_mels));
  }
  std::unique_ptr<LogMelSpectrogram> s(new LogMelSpectrogram(n_mels));

  // Periodic Hann window (numpy's hanning(401)[:-1]), rounded to float as faster-whisper does.
  s->window_.resize(kWhisperFftSize);
  const double pi = std::acos(-1.0);
  for (int i = 0; i < kWhisperFftSize; ++i) {
    s->window_[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * pi * i / kWhisperFftSize));
  }

  // Triangular filters between n_mels + 2 points evenly spaced in mel from 0 Hz to Nyquist,
  // each scaled by 2 / its width in Hz (Slaney's constant energy per channel).
  const double max_mel = HzToMel(kWhisperSampleRate / 2.0);
  std::vector<double> edge_hz(n_mels + 2);
  for (int i = 0; i < n_mels + 2; ++i) {
    const double mel = i == n_mels + 1 ? max_mel : i * (max_mel / (n_mels + 1));
    edge_hz[i] = MelToHz(mel);
  }
  s->first_bin_.assign(n_mels, 0);
  s->weight_begin_.assign(n_mels + 1, 0);
  s->weights_.reserve(static_cast<size_t>(n_mels) * kBins);
  for (int m = 0; m < n_mels; ++m) {
    const double lower_width = edge_hz[m + 1] - edge_hz[m];
    const double upper_width = edge_hz[m + 2] - edge_hz[m + 1];
    const double norm = 2.0 / (edge_hz[m + 2] - edge_hz[m]);
    int first = -1;
    std::vector<float>& w = s->weights_;
    for (int k = 0; k < kBins; ++k) {
      const double hz = static_cast<double>(k) * kWhisperSampleRate / kWhisperFftSize;
      const double rising = (hz - edge_hz[m]) / lower_width;
      const double falling = (edge_hz[m + 2] - hz) / upper_width;
      const double weight = std::max(0.0, std::min(rising, falling)) * norm;
      if (weight > 0 && first < 0) first = k;
      if (first >= 0) w.push_back(static_cast<float>(weight));
    }
    while (w.size() > s->weight_begin_[m] && w.back() == 0.0f) w.pop_back();
    s->first_bin_[m] = first < 0 ? 0 : first;
    s->weight_begin_[m + 1] = w.size();
  }

  size_t plan_bytes = 0;
  kiss_fftr_alloc(kWhisperFftSize, 0, nullptr, &plan_bytes);
  if (plan_bytes == 0) return Status::Error("log-mel spectrogram: kissfft gave no plan size");
  const size_t units = (plan_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  s->fft_plan_memory_.reset(new std::max_align_t[units]);
  size_t have = units * sizeof(std::max_align_t);
  s->fft_plan_ = kiss_fftr_alloc(kWhisperFftSize, 0, s->fft_plan_memory_.get(), &have);
  if (s->fft_plan_ == nullptr) {
    return Status::Error("log-mel spectrogram: kissfft could not plan a real FFT of " +
                         std::to_string(kWhisperFftSize) + " points");
  }
  s->frame_.resize(kWhisperFftSize);
  s->spectrum_.resize(2 * kBins);
  s->power_.resize(kBins);
  *out = std::move(s);
  return OkStatus();
}

void LogMelSpectrogram::PowerSpectrum(const float* samples, size_t n, size_t frame, float* power) {
  const size_t padded = n + kTailPadding;  // the signal the reflection sees
  const long long start = static_cast<long long>(frame) * kWhisperHop - kCenterPadding;
  for (int i = 0; i < kWhisperFftSize; ++i) {
    const size_t at = ReflectIndex(start + i, padded);
    const float x = at < n ? samples[at] : 0.0f;
    frame_[i] = x * window_[i];
  }
  kiss_fftr(static_cast<kiss_fftr_cfg>(fft_plan_), frame_.data(),
            reinterpret_cast<kiss_fft_cpx*>(spectrum_.data()));
  for (int k = 0; k < kBins; ++k) {
    const float re = spectrum_[2 * k], im = spectrum_[2 * k + 1];
    power[k] = re * re + im * im;
  }
}

void LogMelSpectrogram::Compute(const float* samples, size_t n, float* out) {
  const size_t frames = FrameCount(n);
  float largest = -HUGE_VALF;
  for (size_t f = 0; f < frames; ++f) {
    PowerSpectrum(samples, n, f, power_.data());
    for (int m = 0; m < n_mels_; ++m) {
      const float* w = weights_.data() + weight_begin_[m];
      const size_t count = weight_begin_[m + 1] - weight_begin_[m];
      const float* p = power_.data() + first_bin_[m];
      double energy = 0;
      for (size_t k = 0; k < count; ++k) energy += static_cast<double>(w[k]) * p[k];
      const float value = static_cast<float>(std::log10(std::max(energy, 1e-10)));
      out[m * frames + f] = value;
      largest = std::max(largest, value);
    }
  }
  const float floor = largest - 8.0f;
  for (size_t i = 0; i < frames * n_mels_; ++i) out[i] = (std::max(out[i], floor) + 4.0f) / 4.0f;
}

std::vector<float> LogMelSpectrogram::DenseFilters() const {
  std::vector<float> dense(static_cast<size_t>(n_mels_) * kBins, 0.0f);
  for (int m = 0; m < n_mels_; ++m) {
    for (size_t i = weight_begin_[m]; i < weight_begin_[m + 1]; ++i) {
      dense[m * kBins + first_bin_[m] + (i - weight_begin_[m])] = weights_[i];
    }
  }
  return dense;
}

void CopyMelFrames(const float* mel, int n_mels, size_t frames, size_t first, size_t count,
                   size_t window, float* out) {
  const size_t have = first < frames ? std::min({frames - first, count, window}) : 0;
  for (int m = 0; m < n_mels; ++m) {
    float* row = out + static_cast<size_t>(m) * window;
    if (have > 0) std::memcpy(row, mel + m * frames + first, have * sizeof(float));
    std::fill(row + have, row + window, 0.0f);
  }
}

void CopyMelWindow(const float* mel, int n_mels, size_t frames, size_t index, float* out) {
  CopyMelFrames(mel, n_mels, frames, index * kWhisperWindowFrames, kWhisperWindowFrames,
                kWhisperWindowFrames, out);
}

}  // namespace kestrel::audio
