// kestrel bench MODEL.kes: prefill and decode speed on this machine, in the spirit of
// llama-bench. For each thread count: one warm-up, then -r timed repetitions of
//   prefill: a prompt of -p tokens from position 0 (time to first token = its prefill plus the
//            greedy pick of the first token), and
//   decode:  -n tokens one at a time from position 0, each timed (latency percentiles).
// Token ids are fixed pseudo-random ones, so runs compare across machines and runtimes.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ops/targets.h"
#include "runtime/format.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kBenchUsage[] =
    "usage: kestrel bench MODEL.kes [options]\n"
    "  -p, --n-prompt N      prompt tokens for the prefill test; 0 skips it (default 512)\n"
    "  -n, --n-gen N         tokens for the decode test; 0 skips it (default 128)\n"
    "  -t, --threads N[,N]   thread counts to run, e.g. 1,2,4 (default 1)\n"
    "  -r, --repetitions N   timed repetitions after one warm-up (default 5)\n"
    "  --json                print one JSON document instead of the table\n"
    "  --disable-targets T   SIMD targets not to use, e.g. AVX3_DL (compare targets on one CPU)\n"
    "encoder models (texts/s and latency per batch instead of prefill and decode):\n"
    "  --seq-len N[,N]       tokens per text (default 16,128)\n"
    "  -b, --batch N[,N]     texts per call (default 1,32)\n";

int32_t Argmax(const float* logits, size_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

struct Result {
  size_t threads = 0;
  std::string test;      // "pp512" or "tg128", as llama-bench names them
  size_t tokens = 0;
  Summary tokens_per_second;
  Summary ttft_ms;       // prefill only
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;  // decode only, over every timed token
};

}  // namespace

int BenchCommand(const std::vector<std::string>& args) {
  std::string model_path;
  size_t n_prompt = 512, n_gen = 128, repetitions = 5;
  std::vector<size_t> thread_counts = {1};
  EncoderBenchOptions encoder;
  bool json = false;
  FlagReader flags(args);
  while (!flags.Done()) {
    const std::string arg = flags.Next();
    std::string value;
    Status s;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (arg == "-p" || arg == "--n-prompt") {
      s = flags.Int(arg, 0, 1 << 20, &n_prompt);
    } else if (arg == "-n" || arg == "--n-gen") {
      s = flags.Int(arg, 0, 1 << 20, &n_gen);
    } else if (arg == "-t" || arg == "--threads") {
      if ((s = flags.Value(arg, &value)).ok()) {
        s = ParseCountList("--threads", value, 256, &thread_counts);
      }
    } else if (arg == "-r" || arg == "--repetitions") {
      s = flags.Int(arg, 1, 1000, &repetitions);
    } else if (arg == "--seq-len") {
      if ((s = flags.Value(arg, &value)).ok()) {
        s = ParseCountList("--seq-len", value, 65536, &encoder.seq_lens);
      }
    } else if (arg == "-b" || arg == "--batch") {
      if ((s = flags.Value(arg, &value)).ok()) {
        s = ParseCountList("--batch", value, 65536, &encoder.batches);
      }
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--disable-targets") {
      s = flags.DisableTargets(arg);
    } else {
      s = flags.Positional(arg, "bench", kBenchUsage, &model_path);
    }
    if (!s.ok()) return Fail(s.message());
  }
  if (model_path.empty()) return Fail(std::string("no model given\n") + kBenchUsage);
  if (n_prompt == 0 && n_gen == 0) return Fail("nothing to run: -p and -n are both 0");

  std::unique_ptr<Model> model;
  Status s = Model::Open(model_path, &model);
  if (!s.ok()) return Fail(s.message());
  if (model->is_encoder()) {
    encoder.threads = thread_counts;
    encoder.repetitions = repetitions;
    encoder.json = json;
    return BenchEncoder(model_path, *model, encoder);
  }
  const size_t vocab = model->vocab_size();
  const size_t context = std::max<size_t>(n_prompt, n_gen);
  if (context > model->hparams().context_length()) {
    return Fail("-p/-n of " + std::to_string(context) + " tokens exceed the model's context of " +
                std::to_string(model->hparams().context_length()));
  }
  std::vector<int32_t> prompt(std::max<size_t>(n_prompt, 1));
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = static_cast<int32_t>((i * 7919 + 104729) % vocab);
  }

  std::vector<Result> results;
  MemoryPlan memory;
  std::vector<double> latencies;  // reused: no allocation inside the timed loops
  latencies.reserve(n_gen * repetitions);
  for (size_t threads : thread_counts) {
    SessionOptions options;
    options.context_length = context;
    options.n_threads = threads;
    std::unique_ptr<Session> session;
    s = Session::Create(*model, options, &session);
    if (!s.ok()) return Fail(s.message());
    memory = session->memory();
    if (n_prompt > 0) {
      Result r;
      r.threads = threads, r.test = "pp" + std::to_string(n_prompt), r.tokens = n_prompt;
      std::vector<double> speed, ttft;
      for (size_t rep = 0; rep <= repetitions; ++rep) {
        session->Reset();
        const Clock::time_point start = Clock::now();
        s = session->Prefill(prompt.data(), n_prompt);
        if (!s.ok()) return Fail(s.message());
        volatile int32_t first = Argmax(session->logits(), vocab);
        (void)first;
        const double seconds = Seconds(start, Clock::now());
        if (rep == 0) continue;  // warm-up
        speed.push_back(n_prompt / seconds);
        ttft.push_back(seconds * 1e3);
      }
      r.tokens_per_second = Summarize(speed);
      r.ttft_ms = Summarize(ttft);
      results.push_back(r);
    }
    if (n_gen > 0) {
      Result r;
      r.threads = threads, r.test = "tg" + std::to_string(n_gen), r.tokens = n_gen;
      std::vector<double> speed;
      latencies.clear();
      for (size_t rep = 0; rep <= repetitions; ++rep) {
        session->Reset();
        int32_t token = prompt[0];
        const Clock::time_point start = Clock::now();
        for (size_t i = 0; i < n_gen; ++i) {
          const Clock::time_point t0 = Clock::now();
          s = session->Decode(token);
          if (!s.ok()) return Fail(s.message());
          token = Argmax(session->logits(), vocab);
          if (rep > 0) latencies.push_back(Seconds(t0, Clock::now()) * 1e3);
        }
        const double seconds = Seconds(start, Clock::now());
        if (rep > 0) speed.push_back(n_gen / seconds);
      }
      r.tokens_per_second = Summarize(speed);
      std::sort(latencies.begin(), latencies.end());
      r.p50_ms = Percentile(latencies, 0.50);
      r.p90_ms = Percentile(latencies, 0.90);
      r.p99_ms = Percentile(latencies, 0.99);
      results.push_back(r);
    }
  }

  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const uint64_t peak_rss = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
  const std::string format = WeightFormat(*model), cpu = CpuName(),
                    target = ops::ChosenTargetName();
  if (json) {
    std::printf("{\n  \"model\": \"%s\",\n  \"weights\": \"%s\",\n  \"cpu\": \"%s\",\n"
                "  \"target\": \"%s\",\n  \"weight_bytes\": %llu,\n  \"arena_bytes\": %zu,\n"
                "  \"kv_bytes\": %zu,\n  \"context\": %zu,\n  \"peak_rss_bytes\": %llu,\n"
                "  \"repetitions\": %zu,\n  \"results\": [\n",
                JsonEscape(model->meta().architecture()->str()).c_str(), format.c_str(),
                JsonEscape(cpu).c_str(), target.c_str(), static_cast<unsigned long long>(model->weights_bytes()),
                memory.arena_bytes, memory.kv_bytes, memory.context_length,
                static_cast<unsigned long long>(peak_rss), repetitions);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf("    {\"threads\": %zu, \"test\": \"%s\", \"tokens\": %zu, "
                  "\"tokens_per_second\": %s",
                  r.threads, r.test.c_str(), r.tokens, JsonSummary(r.tokens_per_second).c_str());
      if (r.test[0] == 'p') {
        std::printf(", \"ttft_ms\": %s", JsonSummary(r.ttft_ms).c_str());
      } else {
        std::printf(", \"latency_ms\": {\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f}", r.p50_ms,
                    r.p90_ms, r.p99_ms);
      }
      std::printf("}%s\n", i + 1 < results.size() ? "," : "");
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  std::printf("model: %s, weights %s, %s; arena %s; KV %s at context %zu\n",
              model->meta().architecture()->c_str(), format.c_str(),
              FormatBytes(model->weights_bytes()).c_str(), FormatBytes(memory.arena_bytes).c_str(),
              FormatBytes(memory.kv_bytes).c_str(), memory.context_length);
  std::printf("cpu: %s; SIMD target %s; peak resident memory %s\n", cpu.c_str(), target.c_str(),
              FormatBytes(peak_rss).c_str());
  std::printf("median of %zu repetitions after one warm-up; ± is the standard deviation\n\n",
              repetitions);
  std::printf("| threads | test   |            tokens/s |   TTFT ms | p50 ms | p90 ms | p99 ms |\n");
  std::printf("|--------:|:-------|--------------------:|----------:|-------:|-------:|-------:|\n");
  for (const Result& r : results) {
    char speed[64];
    std::snprintf(speed, sizeof(speed), "%.2f ± %.2f", r.tokens_per_second.median,
                  r.tokens_per_second.stddev);
    if (r.test[0] == 'p') {
      std::printf("| %7zu | %-6s | %19s | %9.1f |        |        |        |\n", r.threads,
                  r.test.c_str(), speed, r.ttft_ms.median);
    } else {
      std::printf("| %7zu | %-6s | %19s |           | %6.2f | %6.2f | %6.2f |\n", r.threads,
                  r.test.c_str(), speed, r.p50_ms, r.p90_ms, r.p99_ms);
    }
  }
  return 0;
}

}  // namespace kestrel::cli
