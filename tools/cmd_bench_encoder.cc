// kestrel bench for encoder models: for each thread count, text length and batch size, a warm-up
// of Encode calls lasting at least kWarmupSeconds, then -r timed Encode calls of `batch` texts of
// `seq_len` tokens each (fixed pseudo-random ids between the start and end tokens), reported as
// texts/s and latency per call.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

// A single warm-up call of a short text takes well under a millisecond, and right after the
// thread pool starts the OS may keep its threads on one core for a few milliseconds: 2-thread
// runs of 16-token texts measured 10x slow (one context switch per op) in about half of the runs
// with one warm-up call, in none with this.
constexpr double kWarmupSeconds = 0.25;

struct EncoderResult {
  size_t threads, seq_len, batch;
  Summary texts_per_second, latency_ms;
};

}  // namespace

int BenchEncoder(const std::string& model_path, const Model& model,
                 const EncoderBenchOptions& options) {
  const size_t vocab = model.vocab_size();
  const size_t longest = model.hparams().context_length();
  for (size_t len : options.seq_lens) {
    if (len > longest) {
      return Fail("--seq-len " + std::to_string(len) + " exceeds the model's longest text of " +
                  std::to_string(longest) + " tokens");
    }
  }
  const TokenizerConfig& tok = model.tokenizer().config();
  std::vector<EncoderResult> results;
  size_t arena_bytes = 0;
  for (size_t threads : options.threads) {
    EncoderOptions encoder_options;
    encoder_options.n_threads = threads;
    std::unique_ptr<Encoder> encoder;
    Status s = Encoder::Create(model, encoder_options, &encoder);
    if (!s.ok()) return Fail(s.message());
    arena_bytes = encoder->memory().arena_bytes;
    for (size_t len : options.seq_lens) {
      for (size_t batch : options.batches) {
        std::vector<std::vector<int32_t>> texts(batch, std::vector<int32_t>(len));
        std::vector<const int32_t*> ids(batch);
        std::vector<size_t> lengths(batch, len);
        for (size_t b = 0; b < batch; ++b) {
          for (size_t t = 0; t < len; ++t) {
            texts[b][t] = static_cast<int32_t>(((b * len + t) * 7919 + 104729) % vocab);
          }
          if (tok.add_bos) texts[b].front() = tok.bos_id;
          if (tok.add_eos && len > 1) texts[b].back() = tok.eos_id;
          ids[b] = texts[b].data();
        }
        std::vector<float> out(batch * encoder->embedding_dim());
        std::vector<double> speed, latency;
        const Clock::time_point warmup = Clock::now();
        do {
          s = encoder->Encode(ids.data(), lengths.data(), batch, out.data());
          if (!s.ok()) return Fail(s.message());
        } while (Seconds(warmup, Clock::now()) < kWarmupSeconds);
        for (size_t rep = 0; rep < options.repetitions; ++rep) {
          const Clock::time_point start = Clock::now();
          s = encoder->Encode(ids.data(), lengths.data(), batch, out.data());
          if (!s.ok()) return Fail(s.message());
          const double seconds = Seconds(start, Clock::now());
          speed.push_back(batch / seconds);
          latency.push_back(seconds * 1e3);
        }
        results.push_back({threads, len, batch, Summarize(speed), Summarize(latency)});
      }
    }
  }

  if (options.json) {
    std::printf("{\n%s  \"encode\": [\n",
                EncoderBenchJsonFields(model, arena_bytes, options.repetitions).c_str());
    for (size_t i = 0; i < results.size(); ++i) {
      const EncoderResult& r = results[i];
      std::printf(
          "    {\"threads\": %zu, \"seq_len\": %zu, \"batch\": %zu, \"texts_per_s\": %.4f, "
          "\"latency_ms\": %.4f, \"texts_per_second\": %s, \"latency\": %s}%s\n",
          r.threads, r.seq_len, r.batch, r.texts_per_second.median, r.latency_ms.median,
          JsonSummary(r.texts_per_second).c_str(), JsonSummary(r.latency_ms).c_str(),
          i + 1 < results.size() ? "," : "");
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  PrintEncoderBenchHeader("encoder", model_path, model, arena_bytes);
  std::printf(
      "median of %zu repetitions after a warm-up of %.2f s; ± is the standard deviation\n\n",
      options.repetitions, kWarmupSeconds);
  std::printf("| threads | seq len | batch |           texts/s | latency ms |\n");
  std::printf("|--------:|--------:|------:|------------------:|-----------:|\n");
  for (const EncoderResult& r : results) {
    char speed[64];
    std::snprintf(speed, sizeof(speed), "%.1f ± %.1f", r.texts_per_second.median,
                  r.texts_per_second.stddev);
    std::printf("| %7zu | %7zu | %5zu | %17s | %10.2f |\n", r.threads, r.seq_len, r.batch, speed,
                r.latency_ms.median);
  }
  return 0;
}

}  // namespace kestrel::cli
