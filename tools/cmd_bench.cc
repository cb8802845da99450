// kestrel bench MODEL.kes: prefill and decode speed on this machine, in the spirit of
// llama-bench. For each thread count and each --depth D: one warm-up, then -r timed repetitions of
//   prefill: a prompt of -p tokens from position D (time to first token = its prefill plus the
//            greedy pick of the first token), and
//   decode:  -n tokens one at a time from position D, each timed (latency percentiles).
// At a depth D > 0 the session first prefills D filler tokens, untimed (llama-bench -d D), and
// goes back to position D before every repetition.
// Token ids are fixed pseudo-random ones, so runs compare across machines and runtimes.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ops/argmax.h"
#include "ops/targets.h"
#include "runtime/format.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/bench_profile.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kBenchUsage[] =
    "usage: kestrel bench MODEL.kes [options]\n"
    "  -p, --n-prompt N      prompt tokens for the prefill test; 0 skips it (default 512)\n"
    "  -n, --n-gen N         tokens for the decode test; 0 skips it (default 128)\n"
    "  -d, --depth N[,N]     tokens already in the KV cache when each test starts, e.g. 0,4096\n"
    "                        (prefilled first, untimed; default 0)\n"
    "  -t, --threads N[,N]   thread counts to run, e.g. 1,2,4 (default: one per physical core\n"
    "                        available)\n"
    "  -r, --repetitions N   timed repetitions after one warm-up (default 5)\n"
    "  --kv-type T           KV cache type: f32, f16 or int8 (default f16)\n"
    "  --sinks N             attention sinks kept once past the context (default 4)\n"
    "  --json                print one JSON document instead of the table\n"
    "  --profile             after the table, each test's time per op kind and weight type\n"
    "                        and the weight bytes per second of each matmul type\n"
    "  --disable-targets T   SIMD targets not to use, e.g. AVX3_DL (compare targets on one CPU)\n"
    "encoder models (texts/s and latency per batch instead of prefill and decode):\n"
    "  --seq-len N[,N]       tokens per text (default 16,128)\n"
    "  -b, --batch N[,N]     texts per call (default 1,32)\n"
    "speech models (Whisper): per 30-second window and -t thread count, the audio encoder's\n"
    "  time, the decoder's (cross-attention K/V, prompt, -n greedy tokens, default 100) and\n"
    "  the real-time factor of both\n";

// What the flags ask for.
struct BenchOptions {
  std::string model_path;
  size_t n_prompt = 512, n_gen = 128, repetitions = 5;
  std::vector<size_t> thread_counts = {DefaultThreads()};
  std::vector<size_t> depths = {0};
  KvOptions kv;
  EncoderBenchOptions encoder;
  bool json = false;
  bool profile = false;
  bool n_gen_set = false;  // -n given (speech models default to 100 tokens per window)
};

struct Result {
  size_t threads = 0;
  size_t depth = 0;  // tokens in the KV cache before the test
  std::string test;  // "pp512" or "tg128", as llama-bench names them
  size_t tokens = 0;
  Summary tokens_per_second;
  Summary ttft_ms;                            // prefill only
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;  // decode only, over every timed token
  std::string profile;                        // --profile's table
};

// The row's name in the table: "pp512", or "pp512 @ d4096" at a depth, as llama-bench labels it.
std::string Label(const Result& r) {
  return r.depth == 0 ? r.test : r.test + " @ d" + std::to_string(r.depth);
}

// --profile's table title: "tg128, 1 thread".
std::string ProfileTitle(const Result& r) {
  return Label(r) + ", " + std::to_string(r.threads) + (r.threads == 1 ? " thread" : " threads");
}

// The decode loop's next token, as greedy sampling takes it (llama-bench's tg samples nothing;
// the vector Argmax keeps this to ~0.1% of a Gemma 3 step).
int32_t Argmax(const float* logits, size_t n) {
  return static_cast<int32_t>(ops::Argmax(logits, n));
}

// bench's own flags, read into *o.
FlagHandler BenchFlags(BenchOptions* o) {
  return [o](FlagReader& flags, const std::string& arg, Status* s) {
    std::string value;
    if (arg == "-p" || arg == "--n-prompt") {
      *s = flags.Int(arg, 0, 1 << 20, &o->n_prompt);
    } else if (arg == "-n" || arg == "--n-gen") {
      *s = flags.Int(arg, 0, 1 << 20, &o->n_gen);
      o->n_gen_set = true;
    } else if (arg == "-d" || arg == "--depth") {
      if ((*s = flags.Value(arg, &value)).ok()) {
        *s = ParseCountList("--depth", value, 0, 1 << 24, &o->depths);
      }
    } else if (arg == "-t" || arg == "--threads") {
      if ((*s = flags.Value(arg, &value)).ok()) {
        *s = ParseCountList("--threads", value, 1, 256, &o->thread_counts);
      }
    } else if (arg == "-r" || arg == "--repetitions") {
      *s = flags.Int(arg, 1, 1000, &o->repetitions);
    } else if (arg == "--seq-len") {
      if ((*s = flags.Value(arg, &value)).ok()) {
        *s = ParseCountList("--seq-len", value, 1, 65536, &o->encoder.seq_lens);
      }
    } else if (arg == "-b" || arg == "--batch") {
      if ((*s = flags.Value(arg, &value)).ok()) {
        *s = ParseCountList("--batch", value, 1, 65536, &o->encoder.batches);
      }
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--profile") {
      o->profile = true;
    } else if (arg == "--disable-targets") {
      *s = flags.DisableTargets(arg);
    } else {
      return KvFlag(flags, arg, &o->kv, s);
    }
    return true;
  };
}

// What the flags asked for, once all are read: a warning for more threads than CPUs, an error
// for a run with nothing to do.
Status CheckOptions(const BenchOptions& o) {
  WarnAboutThreads(*std::max_element(o.thread_counts.begin(), o.thread_counts.end()));
  KES_CHECK_OR_RETURN(o.n_prompt > 0 || o.n_gen > 0, "nothing to run: -p and -n are both 0");
  KES_CHECK_OR_RETURN(!(o.profile && o.json),
                      "--profile prints tables after the speed table; it does not go with --json");
  return OkStatus();
}

// The context a session needs for every test at every depth, checked against the model's.
Status BenchContext(const BenchOptions& o, const Model& model, size_t* context) {
  const size_t depth = *std::max_element(o.depths.begin(), o.depths.end());
  const size_t test = std::max(o.n_prompt, o.n_gen);
  *context = depth + test;
  KES_CHECK_OR_RETURN(*context <= model.hparams().context_length(),
                      "-p/-n of " + std::to_string(test) + " tokens" +
                          (depth > 0 ? " at --depth " + std::to_string(depth) : "") +
                          " exceed the model's context of " +
                          std::to_string(model.hparams().context_length()));
  return OkStatus();
}

// Fixed pseudo-random token ids (bench/compare_llama_cpp.py gives llama.cpp the same prompt).
std::vector<int32_t> BenchTokens(size_t n, size_t vocab) {
  std::vector<int32_t> tokens(std::max<size_t>(n, 1));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7919 + 104729) % vocab);
  }
  return tokens;
}

// Puts the session `depth` filler tokens deep, untimed. After a repetition (`again`) it goes
// back to that depth, keeping the filler's keys, unless its rings have overwritten some that
// position sees; otherwise, and the first time, it prefills the filler from position 0.
Status ToDepth(Session& session, const std::vector<int32_t>& filler, size_t depth, bool again) {
  if (again && session.Rewind(depth).ok()) return OkStatus();
  session.Reset();
  return depth == 0 ? OkStatus() : session.Prefill(filler.data(), depth);
}

// The prefill test: -p tokens from position `depth`, time to first token included.
Status BenchPrefill(Session& session, const BenchOptions& o, const std::vector<int32_t>& prompt,
                    const std::vector<int32_t>& filler, size_t depth, StepProfile* profile,
                    Result* r) {
  r->test = "pp" + std::to_string(o.n_prompt), r->tokens = o.n_prompt;
  std::vector<double> speed, ttft;
  for (size_t rep = 0; rep <= o.repetitions; ++rep) {
    KES_RETURN_IF_ERROR(ToDepth(session, filler, depth, rep > 0));
    if (profile != nullptr && rep > 0) profile->Attach(session);
    const Clock::time_point start = Clock::now();
    KES_RETURN_IF_ERROR(session.Prefill(prompt.data(), o.n_prompt));
    if (profile != nullptr) profile->EndCall(), StepProfile::Detach(session);
    volatile int32_t first = Argmax(session.logits(), session.vocab_size());
    (void)first;
    const double seconds = Seconds(start, Clock::now());
    if (rep == 0) continue;  // warm-up
    speed.push_back(o.n_prompt / seconds);
    ttft.push_back(seconds * 1e3);
  }
  r->tokens_per_second = Summarize(speed);
  r->ttft_ms = Summarize(ttft);
  if (profile != nullptr) r->profile = profile->Table(ProfileTitle(*r), o.repetitions);
  return OkStatus();
}

// The decode test: -n tokens one at a time from position `depth`, each fed the previous argmax.
// `latencies` is the caller's, reserved, so the timed loop allocates nothing.
Status BenchDecode(Session& session, const BenchOptions& o, const std::vector<int32_t>& prompt,
                   const std::vector<int32_t>& filler, size_t depth, std::vector<double>* latencies,
                   StepProfile* profile, Result* r) {
  r->test = "tg" + std::to_string(o.n_gen), r->tokens = o.n_gen;
  std::vector<double> speed;
  latencies->clear();
  for (size_t rep = 0; rep <= o.repetitions; ++rep) {
    KES_RETURN_IF_ERROR(ToDepth(session, filler, depth, rep > 0));
    int32_t token = prompt[0];
    if (profile != nullptr && rep > 0) profile->Attach(session);
    const Clock::time_point start = Clock::now();
    for (size_t i = 0; i < o.n_gen; ++i) {
      const Clock::time_point t0 = Clock::now();
      KES_RETURN_IF_ERROR(session.Decode(token));
      if (profile != nullptr) profile->EndCall();
      token = Argmax(session.logits(), session.vocab_size());
      if (rep > 0) latencies->push_back(Seconds(t0, Clock::now()) * 1e3);
    }
    const double seconds = Seconds(start, Clock::now());
    if (profile != nullptr) StepProfile::Detach(session);
    if (rep > 0) speed.push_back(o.n_gen / seconds);
  }
  r->tokens_per_second = Summarize(speed);
  std::sort(latencies->begin(), latencies->end());
  r->p50_ms = Percentile(*latencies, 0.50);
  r->p90_ms = Percentile(*latencies, 0.90);
  r->p99_ms = Percentile(*latencies, 0.99);
  if (profile != nullptr) r->profile = profile->Table(ProfileTitle(*r), o.n_gen * o.repetitions);
  return OkStatus();
}

// Every test at every thread count and depth; *memory gets the sessions' memory plan.
Status RunBenchmarks(const Model& model, const BenchOptions& o, std::vector<Result>* results,
                     MemoryPlan* memory) {
  SessionOptions options;
  KES_RETURN_IF_ERROR(BenchContext(o, model, &options.context_length));
  options.kv = o.kv;
  const std::vector<int32_t> prompt = BenchTokens(o.n_prompt, model.vocab_size());
  const std::vector<int32_t> filler =
      BenchTokens(*std::max_element(o.depths.begin(), o.depths.end()), model.vocab_size());
  std::vector<double> latencies;
  latencies.reserve(o.n_gen * o.repetitions);
  for (size_t threads : o.thread_counts) {
    options.n_threads = threads;
    std::unique_ptr<Session> session;
    KES_RETURN_IF_ERROR(CreateSession(model, options, &session));
    *memory = session->memory();
    for (size_t depth : o.depths) {
      Result r;
      r.threads = threads, r.depth = depth;
      if (o.n_prompt > 0) {
        std::unique_ptr<StepProfile> profile;
        if (o.profile) profile = std::make_unique<StepProfile>(model);
        KES_RETURN_IF_ERROR(BenchPrefill(*session, o, prompt, filler, depth, profile.get(), &r));
        results->push_back(r);
      }
      if (o.n_gen > 0) {
        std::unique_ptr<StepProfile> profile;
        if (o.profile) profile = std::make_unique<StepProfile>(model);
        KES_RETURN_IF_ERROR(
            BenchDecode(*session, o, prompt, filler, depth, &latencies, profile.get(), &r));
        results->push_back(r);
      }
    }
  }
  return OkStatus();
}

// What the header lines and the JSON document say about the run.
struct RunInfo {
  std::string architecture, weights, cpu, target;
  uint64_t weight_bytes = 0, peak_rss = 0;
  const char* kv_type = ops::KvTypeName(KvOptions().type);
};

RunInfo DescribeRun(const Model& model, const MemoryPlan& memory) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  RunInfo info;
  info.architecture = model.meta().architecture()->str();
  info.weights = WeightFormat(model);
  info.cpu = CpuName();
  info.target = ops::ChosenTargetName();
  info.weight_bytes = model.weights_bytes();
  info.peak_rss = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
  info.kv_type = ops::KvTypeName(memory.kv_options.type);
  return info;
}

void PrintJson(const RunInfo& info, const MemoryPlan& memory, size_t repetitions,
               const std::vector<Result>& results) {
  std::printf(
      "{\n  \"model\": \"%s\",\n  \"weights\": \"%s\",\n  \"cpu\": \"%s\",\n"
      "  \"target\": \"%s\",\n  \"weight_bytes\": %llu,\n  \"arena_bytes\": %zu,\n"
      "  \"kv_type\": \"%s\",\n  \"kv_bytes\": %zu,\n  \"context\": %zu,\n"
      "  \"peak_rss_bytes\": %llu,\n  \"repetitions\": %zu,\n  \"results\": [\n",
      JsonEscape(info.architecture).c_str(), info.weights.c_str(), JsonEscape(info.cpu).c_str(),
      info.target.c_str(), static_cast<unsigned long long>(info.weight_bytes), memory.arena_bytes,
      info.kv_type, memory.kv_bytes, memory.context_length,
      static_cast<unsigned long long>(info.peak_rss), repetitions);
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf(
        "    {\"threads\": %zu, \"test\": \"%s\", \"depth\": %zu, \"tokens\": %zu, "
        "\"tokens_per_second\": %s",
        r.threads, r.test.c_str(), r.depth, r.tokens, JsonSummary(r.tokens_per_second).c_str());
    if (r.test[0] == 'p') {
      std::printf(", \"ttft_ms\": %s", JsonSummary(r.ttft_ms).c_str());
    } else {
      std::printf(", \"latency_ms\": {\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f}", r.p50_ms,
                  r.p90_ms, r.p99_ms);
    }
    std::printf("}%s\n", i + 1 < results.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
}

void PrintTable(const RunInfo& info, const MemoryPlan& memory, size_t repetitions,
                const std::vector<Result>& results) {
  std::printf("model: %s, weights %s, %s; arena %s; KV %s (%s) at context %zu\n",
              info.architecture.c_str(), info.weights.c_str(),
              FormatBytes(info.weight_bytes).c_str(), FormatBytes(memory.arena_bytes).c_str(),
              FormatBytes(memory.kv_bytes).c_str(), info.kv_type, memory.context_length);
  std::printf("cpu: %s; SIMD target %s; peak resident memory %s\n", info.cpu.c_str(),
              info.target.c_str(), FormatBytes(info.peak_rss).c_str());
  std::printf("median of %zu repetitions after one warm-up; ± is the standard deviation\n\n",
              repetitions);
  int width = 6;  // the test column fits "pp512 @ d4096" when there are depths
  for (const Result& r : results) width = std::max(width, static_cast<int>(Label(r).size()));
  const std::string dashes(static_cast<size_t>(width) + 1, '-');
  std::printf("| threads | %-*s |            tokens/s |   TTFT ms | p50 ms | p90 ms | p99 ms |\n",
              width, "test");
  std::printf("|--------:|:%s|--------------------:|----------:|-------:|-------:|-------:|\n",
              dashes.c_str());
  for (const Result& r : results) {
    char speed[64];
    std::snprintf(speed, sizeof(speed), "%.2f ± %.2f", r.tokens_per_second.median,
                  r.tokens_per_second.stddev);
    if (r.test[0] == 'p') {
      std::printf("| %7zu | %-*s | %19s | %9.1f |        |        |        |\n", r.threads, width,
                  Label(r).c_str(), speed, r.ttft_ms.median);
    } else {
      std::printf("| %7zu | %-*s | %19s |           | %6.2f | %6.2f | %6.2f |\n", r.threads, width,
                  Label(r).c_str(), speed, r.p50_ms, r.p90_ms, r.p99_ms);
    }
  }
  for (const Result& r : results) std::fputs(r.profile.c_str(), stdout);
}

}  // namespace

int BenchCommand(const std::vector<std::string>& args) {
  BenchOptions options;
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "bench", kBenchUsage, BenchFlags(&options), &options.model_path)) {
    return *exit_code;
  }
  Status s = CheckOptions(options);
  if (!s.ok()) return Fail(s.message());
  std::unique_ptr<Model> model;
  s = Model::Open(options.model_path, &model);
  if (!s.ok()) return Fail(s.message());
  if (model->is_encoder()) {
    options.encoder.threads = options.thread_counts;
    options.encoder.repetitions = options.repetitions;
    options.encoder.json = options.json;
    return BenchEncoder(options.model_path, *model, options.encoder);
  }
  if (model->has_audio_encoder()) {
    if (options.n_gen_set) {
      if (options.n_gen == 0) return Fail("-n: a speech model decodes at least 1 token per window");
      options.encoder.decoder_tokens = options.n_gen;
    }
    options.encoder.threads = options.thread_counts;
    options.encoder.repetitions = options.repetitions;
    options.encoder.json = options.json;
    return BenchAudioEncoder(options.model_path, *model, options.encoder);
  }
  std::vector<Result> results;
  MemoryPlan memory;
  s = RunBenchmarks(*model, options, &results, &memory);
  if (!s.ok()) return Fail(s.message());
  const RunInfo info = DescribeRun(*model, memory);
  if (options.json) {
    PrintJson(info, memory, options.repetitions, results);
  } else {
    PrintTable(info, memory, options.repetitions, results);
  }
  return 0;
}

}  // namespace kestrel::cli
