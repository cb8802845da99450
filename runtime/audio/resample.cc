#include "runtime/audio/resample.h"

#include <samplerate.h>

#include <cmath>
#include <limits>
#include <string>

namespace kestrel::audio {

Status Resample(const std::vector<float>& in, uint32_t in_rate, uint32_t out_rate,
                std::vector<float>* out) {
  if (in_rate == 0 || out_rate == 0) {
    return Status::Error("resample: expected sample rates above 0 Hz, found " +
                         std::to_string(in_rate) + " Hz to " + std::to_string(out_rate) + " Hz");
  }
  if (in_rate == out_rate) {
    *out = in;
    return OkStatus();
  }
  const double ratio = static_cast<double>(out_rate) / in_rate;
  if (ratio > 256.0 || ratio < 1.0 / 256.0) {
    return Status::Error("resample: " + std::to_string(in_rate) + " Hz to " +
                         std::to_string(out_rate) +
                         " Hz is beyond libsamplerate's ratio of 256 either way; expected an "
                         "input rate from " +
                         std::to_string(out_rate / 256 + 1) + " to " +
                         std::to_string(static_cast<uint64_t>(out_rate) * 256) + " Hz");
  }
  // `long` is 32-bit on 32-bit ARM: hours of audio still fit, a file of over 2^31 samples not.
  const double want_double = std::round(static_cast<double>(in.size()) * ratio);
  if (in.size() > static_cast<size_t>(std::numeric_limits<long>::max() / 2) ||
      want_double > static_cast<double>(std::numeric_limits<long>::max() / 2)) {
    return Status::Error("resample: " + std::to_string(in.size()) +
                         " samples are more than this platform's resampler takes at once");
  }
  const size_t want = static_cast<size_t>(want_double);
  // The sinc converter may emit a few samples more or fewer than n * ratio; room for more, then
  // the exact count (zeros if it gave fewer).
  std::vector<float> result(want + 64, 0.0f);
  SRC_DATA data{};
  data.data_in = in.data();
  data.input_frames = static_cast<long>(in.size());
  data.data_out = result.data();
  data.output_frames = static_cast<long>(result.size());
  data.end_of_input = 1;
  data.src_ratio = ratio;
  if (!in.empty()) {
    const int error = src_simple(&data, SRC_SINC_BEST_QUALITY, 1);
    if (error != 0) {
      return Status::Error(std::string("resample: libsamplerate failed: ") + src_strerror(error));
    }
  }
  result.resize(want);
  for (size_t i = static_cast<size_t>(data.output_frames_gen); i < want; ++i) result[i] = 0.0f;
  *out = std::move(result);
  return OkStatus();
}

}  // namespace kestrel::audio
