// What kestrel bench's decoder and encoder runs share: timing, summaries and formatting.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/status.h"

namespace kestrel::cli {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from, Clock::time_point to);

struct Summary {
  double median = 0, min = 0, max = 0, stddev = 0;
};

Summary Summarize(std::vector<double> values);
// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double q);
// The weights' dtype, or for a model of several (a kept Q4_K_M file) each with its share of
// the bytes, largest first: "Q8_0 72% Q5_0 15% ...".
std::string WeightFormat(const Model& model);
// "1,2,4" -> {1, 2, 4}, each in min..max; errors name the flag.
Status ParseCountList(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                      std::vector<size_t>* out);
// {"median": ..., "min": ..., "max": ..., "stddev": ...}
std::string JsonSummary(const Summary& s);

// The JSON fields and table lines every encoder bench starts with: the model, its weights and
// arena, the CPU and SIMD target, the process's peak resident memory so far.
// JSON: `"model": ..., ..., "repetitions": N,` lines, to follow "{".
std::string EncoderBenchJsonFields(const Model& model, size_t arena_bytes, size_t repetitions);
// Table: "model: <arch> <kind> (<path>), weights ...; arena ..." and "cpu: ..." lines.
void PrintEncoderBenchHeader(const char* kind, const std::string& model_path, const Model& model,
                             size_t arena_bytes);

struct EncoderBenchOptions {
  std::vector<size_t> threads = {1};
  std::vector<size_t> seq_lens = {16, 128};
  std::vector<size_t> batches = {1, 32};
  size_t repetitions = 5;
  bool json = false;
  // Speech models: tokens the decoder generates per window; 0: 100 (about 3 per second of
  // speech), or half the decoder's context when that is less.
  size_t decoder_tokens = 0;
};

// kestrel bench on an encoder model: texts/s and latency per call for each thread count,
// sequence length and batch (tools/cmd_bench_encoder.cc).
int BenchEncoder(const std::string& model_path, const Model& model,
                 const EncoderBenchOptions& options);

// kestrel bench on a speech model (Whisper): per 30-second window and thread count, the audio
// encoder's time, the decoder's (cross K/V, prompt, decoder_tokens greedy steps) and the real-time
// factor of both together (tools/cmd_bench_audio.cc).
int BenchAudioEncoder(const std::string& model_path, const Model& model,
                      const EncoderBenchOptions& options);

}  // namespace kestrel::cli
