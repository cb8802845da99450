// kestrel bench for speech models (Whisper): for each thread count, one warm-up and -r timed
// encodes of a 30-second log-mel window, reported as milliseconds per window, the encoder's
// real-time factor (audio seconds per compute second) and its FLOP rate. The decoder's figures
// come with the decoder (issue 13).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio_encoder.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

struct AudioResult {
  size_t threads;
  Summary window_ms;
};

}  // namespace

int BenchAudioEncoder(const std::string& model_path, const Model& model,
                      const EncoderBenchOptions& options) {
  const fb::HyperParams& hp = model.hparams();
  std::vector<AudioResult> results;
  size_t arena_bytes = 0, positions = 0, frames = 0;
  for (size_t threads : options.threads) {
    AudioEncoderOptions encoder_options;
    encoder_options.n_threads = threads;
    std::unique_ptr<AudioEncoder> encoder;
    Status s = AudioEncoder::Create(model, encoder_options, &encoder);
    if (!s.ok()) return Fail(s.message());
    arena_bytes = encoder->memory().arena_bytes;
    positions = encoder->n_positions();
    frames = encoder->n_frames();
    // Values in the range of real log-mel features; the encoder's work does not depend on them.
    std::vector<float> mel(encoder->n_mels() * frames);
    for (size_t i = 0; i < mel.size(); ++i) mel[i] = static_cast<float>((i * 7919) % 200) / 100 - 1;
    std::vector<float> hidden(positions * encoder->d_model());
    std::vector<double> ms;
    for (size_t rep = 0; rep <= options.repetitions; ++rep) {
      const Clock::time_point start = Clock::now();
      encoder->Encode(mel.data(), hidden.data());
      if (rep > 0) ms.push_back(Seconds(start, Clock::now()) * 1e3);  // rep 0: warm-up
    }
    results.push_back({threads, Summarize(ms)});
  }

  const double window_seconds = static_cast<double>(frames) * audio::kWhisperHop /
                                audio::kWhisperSampleRate;
  const double gflop = (static_cast<double>(MatMulFlopsPerToken(model)) * positions +
                        4.0 * positions * positions * hp.n_heads() * hp.head_dim() *
                            hp.n_layers()) / 1e9;
  if (options.json) {
    std::printf("{\n%s  \"window_seconds\": %.2f,\n  \"gflop_per_window\": %.4f,\n"
                "  \"encode\": [\n",
                EncoderBenchJsonFields(model, arena_bytes, options.repetitions).c_str(),
                window_seconds, gflop);
    for (size_t i = 0; i < results.size(); ++i) {
      const AudioResult& r = results[i];
      std::printf("    {\"threads\": %zu, \"window_ms\": %.4f, \"real_time_factor\": %.3f, "
                  "\"window\": %s}%s\n",
                  r.threads, r.window_ms.median, window_seconds * 1e3 / r.window_ms.median,
                  JsonSummary(r.window_ms).c_str(), i + 1 < results.size() ? "," : "");
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  PrintEncoderBenchHeader("audio encoder", model_path, model, arena_bytes);
  std::printf("one %.0f-second window (%zu positions, %.2f GFLOP); median of %zu repetitions "
              "after one warm-up; ± is the standard deviation\n\n",
              window_seconds, positions, gflop, options.repetitions);
  std::printf("| threads |    encoder ms / window | real-time factor | GFLOP/s |\n");
  std::printf("|--------:|-----------------------:|-----------------:|--------:|\n");
  for (const AudioResult& r : results) {
    char ms[64];
    std::snprintf(ms, sizeof(ms), "%.1f ± %.1f", r.window_ms.median, r.window_ms.stddev);
    std::printf("| %7zu | %22s | %15.1fx | %7.1f |\n", r.threads, ms,
                window_seconds * 1e3 / r.window_ms.median, gflop * 1e3 / r.window_ms.median);
  }
  return 0;
}

}  // namespace kestrel::cli
