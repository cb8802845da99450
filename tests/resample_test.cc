// Resampling to Whisper's 16 kHz (runtime/audio/resample.cc, libsamplerate): the duration is
// kept, tones keep their frequency and level, content above the new Nyquist frequency is
// removed, and rates outside libsamplerate's range give clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/audio/resample.h"

namespace kestrel::audio {
namespace {

std::vector<float> Tone(double hz, double amplitude, uint32_t rate, size_t n) {
  const double pi = std::acos(-1.0);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(amplitude * std::sin(2 * pi * hz * static_cast<double>(i) / rate));
  }
  return x;
}

// Amplitude of the `hz` component of x (a single-bin DFT over the middle, away from the edges).
double ComponentAmplitude(const std::vector<float>& x, double hz, uint32_t rate) {
  const double pi = std::acos(-1.0);
  const size_t begin = x.size() / 4, end = x.size() * 3 / 4;
  double re = 0, im = 0;
  for (size_t i = begin; i < end; ++i) {
    re += x[i] * std::cos(2 * pi * hz * static_cast<double>(i) / rate);
    im += x[i] * std::sin(2 * pi * hz * static_cast<double>(i) / rate);
  }
  return 2 * std::sqrt(re * re + im * im) / static_cast<double>(end - begin);
}

TEST(Resample, KeepsATonesFrequencyAndLevel) {
  for (uint32_t rate : {8000u, 22050u, 44100u, 48000u}) {
    const std::vector<float> in = Tone(440, 0.5, rate, rate * 2);  // 2 s
    std::vector<float> out;
    ASSERT_TRUE(Resample(in, rate, 16000, &out).ok());
    EXPECT_EQ(out.size(), 32000u) << rate;
    EXPECT_NEAR(ComponentAmplitude(out, 440, 16000), 0.5, 0.005) << rate;
    EXPECT_LT(ComponentAmplitude(out, 1000, 16000), 0.005) << rate;
  }
}

TEST(Resample, RemovesWhatLiesAboveTheNewNyquistFrequency) {
  // 11 kHz at 44.1 kHz would alias to 5 kHz at 16 kHz without the low-pass filter.
  const std::vector<float> in = Tone(11000, 0.5, 44100, 44100);
  std::vector<float> out;
  ASSERT_TRUE(Resample(in, 44100, 16000, &out).ok());
  EXPECT_LT(ComponentAmplitude(out, 5000, 16000), 1e-4);
}

TEST(Resample, KeepsTheDurationToTheNearestSample) {
  std::vector<float> out;
  ASSERT_TRUE(Resample(std::vector<float>(22051, 0.25f), 22050, 16000, &out).ok());
  EXPECT_EQ(out.size(), 16001u);  // round(22051 * 16000 / 22050) = round(16000.7)
  ASSERT_TRUE(Resample({}, 44100, 16000, &out).ok());
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(Resample({0.5f, -0.5f}, 16000, 16000, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{0.5f, -0.5f}));
}

TEST(Resample, RefusesRatesBeyondTheConverter) {
  std::vector<float> out;
  Status s = Resample(std::vector<float>(10, 0.0f), 8, 16000, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("8 Hz to 16000 Hz"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("from 63 to"), std::string::npos) << s.message();
  s = Resample(std::vector<float>(10, 0.0f), 0, 16000, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("above 0 Hz"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kestrel::audio
