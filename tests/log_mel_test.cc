// Whisper's log-mel spectrogram (runtime/audio/log_mel.cc) against an independent float64 NumPy
// implementation of the formula (tests/py/log_mel_ref.py): within 1e-4 on tones, noise, chirps,
// silence, clipping, and signals shorter than the reflect padding. Also the filter bank, the frame
// count, the 30-second windows and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/audio/log_mel.h"

namespace kestrel::audio {
namespace {

std::string TmpPath(const std::string& name) {
  return std::string(KESTREL_TEST_TMP) + "/log-mel-" + std::to_string(::getpid()) + "-" + name;
}

bool RunOracle(const std::string& args) {
  const std::string command = std::string("'") + KESTREL_PYTHON + "' '" + KESTREL_SOURCE_DIR +
                              "/tests/py/log_mel_ref.py' " + args;
  return std::system(command.c_str()) == 0;
}

std::vector<double> ReadDoubles(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  std::vector<double> v(f ? static_cast<size_t>(f.tellg()) / sizeof(double) : 0);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 8));
  return v;
}

// max |ours - oracle| over the spectrogram of `samples` (infinity when the shapes differ); the
// oracle's values in *want when asked.
double DiffFromNumPy(const std::vector<float>& samples, int n_mels,
                     std::vector<double>* want = nullptr) {
  std::unique_ptr<LogMelSpectrogram> mel;
  if (!LogMelSpectrogram::Create(n_mels, &mel).ok()) return HUGE_VAL;
  std::vector<float> ours(n_mels * LogMelSpectrogram::FrameCount(samples.size()), -9.0f);
  mel->Compute(samples.data(), samples.size(), ours.data());

  const std::string in = TmpPath("in.f32"), out = TmpPath("out.f64");
  {
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(samples.data()),
            static_cast<std::streamsize>(samples.size() * sizeof(float)));
  }
  const bool ran =
      RunOracle("--samples '" + in + "' --out '" + out + "' --n-mels " + std::to_string(n_mels));
  const std::vector<double> oracle = ReadDoubles(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  EXPECT_TRUE(ran) << "tests/py/log_mel_ref.py failed";
  EXPECT_EQ(ours.size(), oracle.size()) << samples.size() << " samples";
  if (!ran || ours.size() != oracle.size()) return HUGE_VAL;
  double worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(ours[i]) - oracle[i]));
  }
  if (want != nullptr) *want = oracle;
  return worst;
}

// Deterministic test audio: no random library, so every platform makes the same samples.
struct Lcg {
  uint32_t state = 12345;
  float Next() {  // uniform in [-1, 1)
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  }
};

std::vector<float> SpeechLikeSignal(size_t n) {
  std::vector<float> x(n);
  Lcg noise;
  const double pi = std::acos(-1.0);
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / kWhisperSampleRate;
    double v = 0;
    if (t < 1.0) {  // tones with a syllable-rate envelope
      const double envelope = 0.5 + 0.5 * std::sin(2 * pi * 4 * t);
      v = envelope * (0.3 * std::sin(2 * pi * 220 * t) + 0.2 * std::sin(2 * pi * 440 * t) +
                      0.05 * std::sin(2 * pi * 3000 * t));
    } else if (t < 2.0) {  // exact silence: values reach the global clamp
      v = 0;
    } else if (t < 3.0) {  // chirp 50 Hz -> 7.9 kHz
      v = 0.4 * std::sin(2 * pi * (50 * (t - 2) + 0.5 * 7850 * (t - 2) * (t - 2)));
    } else if (t < 4.0) {  // quiet white noise
      v = 0.01 * noise.Next();
    } else {  // clipped square-ish wave at full scale
      v = std::sin(2 * pi * 130 * t) > 0 ? 1.0 : -1.0;
    }
    x[i] = static_cast<float>(v);
  }
  return x;
}

TEST(LogMel, FilterBankMatchesTheFormula) {
  for (int n_mels : {80, 128}) {
    std::unique_ptr<LogMelSpectrogram> mel;
    ASSERT_TRUE(LogMelSpectrogram::Create(n_mels, &mel).ok());
    const std::string path = TmpPath("filters.f64");
    ASSERT_TRUE(RunOracle("--filters '" + path + "' --n-mels " + std::to_string(n_mels)));
    const std::vector<double> want = ReadDoubles(path);
    std::remove(path.c_str());
    const std::vector<float> got = mel->DenseFilters();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-7 * std::max(1.0, std::fabs(want[i]))) << "entry " << i;
    }
    int empty_filters = 0;
    for (int m = 0; m < n_mels; ++m) {
      double sum = 0;
      for (int k = 0; k < kWhisperFftSize / 2 + 1; ++k) sum += got[m * 201 + k];
      empty_filters += sum == 0;
    }
    EXPECT_EQ(empty_filters, 0) << n_mels << " mels";
  }
}

TEST(LogMel, MatchesNumPyOnMixedSignal) {
  const std::vector<float> x = SpeechLikeSignal(5 * kWhisperSampleRate + 37);
  std::vector<double> want;
  const double diff = DiffFromNumPy(x, 80, &want);
  std::printf("5 s mixed signal: max |ours - numpy| = %.3g\n", diff);
  EXPECT_LE(diff, 1e-4);
  EXPECT_EQ(want.size(), 80u * (x.size() / 160 + 1));
  // The silence reaches the clamp: the values span exactly 8 decades / 4.
  double lowest = 1e9, highest = -1e9;
  for (double v : want) lowest = std::min(lowest, v), highest = std::max(highest, v);
  EXPECT_NEAR(highest - lowest, 2.0, 1e-9);
}

TEST(LogMel, MatchesNumPyWith128MelsAndOver30Seconds) {
  const double diff = DiffFromNumPy(SpeechLikeSignal(31 * kWhisperSampleRate + 159), 128);
  std::printf("31 s, 128 mels: max |ours - numpy| = %.3g\n", diff);
  EXPECT_LE(diff, 1e-4);
}

TEST(LogMel, MatchesNumPyOnSignalsShorterThanThePadding) {
  // Fewer than 201 padded samples: numpy reflects more than once.
  for (size_t n : {0u, 1u, 2u, 10u, 40u, 41u, 159u, 160u, 161u, 400u}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f * std::sin(0.3f * static_cast<float>(i)) + 0.1f;
    EXPECT_LE(DiffFromNumPy(x, 80), 1e-4) << n << " samples";
  }
}

TEST(LogMel, WindowsAre3000FramesPaddedWithZeros) {
  const int n_mels = 3;
  const size_t frames = 3000 + 7;
  std::vector<float> mel(n_mels * frames);
  for (size_t i = 0; i < mel.size(); ++i) mel[i] = 1.0f + static_cast<float>(i);
  std::vector<float> window(n_mels * 3000, -1.0f);
  CopyMelWindow(mel.data(), n_mels, frames, 0, window.data());
  EXPECT_EQ(window[0], mel[0]);
  EXPECT_EQ(window[2 * 3000 + 2999], mel[2 * frames + 2999]);
  CopyMelWindow(mel.data(), n_mels, frames, 1, window.data());
  EXPECT_EQ(window[0], mel[3000]);
  EXPECT_EQ(window[6], mel[3006]);
  EXPECT_EQ(window[7], 0.0f);
  EXPECT_EQ(window[1 * 3000 + 6], mel[frames + 3006]);
  EXPECT_EQ(window[2 * 3000 + 2999], 0.0f);
  CopyMelWindow(mel.data(), n_mels, frames, 2, window.data());
  for (float v : window) ASSERT_EQ(v, 0.0f);
}

TEST(LogMel, RefusesImpossibleMelCounts) {
  std::unique_ptr<LogMelSpectrogram> mel;
  const Status s = LogMelSpectrogram::Create(0, &mel);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("found 0"), std::string::npos) << s.message();
  EXPECT_FALSE(LogMelSpectrogram::Create(100000, &mel).ok());
}

TEST(LogMel, FrameCountIsWhispers) {
  EXPECT_EQ(LogMelSpectrogram::FrameCount(0), 1u);
  EXPECT_EQ(LogMelSpectrogram::FrameCount(159), 1u);
  EXPECT_EQ(LogMelSpectrogram::FrameCount(160), 2u);
  EXPECT_EQ(LogMelSpectrogram::FrameCount(30 * 16000), 3001u);  // faster-whisper: 3000 + 1
}

}  // namespace
}  // namespace kestrel::audio
