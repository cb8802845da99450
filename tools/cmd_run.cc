// kestrel run MODEL.kes (-p PROMPT | -f FILE) -n N: generate text, streaming tokens as they come.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/output_file.h"
#include "runtime/session.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kRunUsage[] =
    "usage: kestrel run MODEL.kes (-p PROMPT | -f FILE) [options]\n"
    "  -p, --prompt TEXT   the prompt (control tokens like <start_of_turn> are recognized)\n"
    "  -f, --file FILE     read the prompt from FILE, all of it; '-' reads standard input\n"
    "  -n, --n-predict N   tokens to generate (default 128)\n" KESTREL_THREADS_USAGE
    "  -c, --ctx N         context length in tokens (default 4096; more than the model's is\n"
    "                      lowered to it, with a warning)\n" KESTREL_SAMPLER_FLAGS_USAGE
        KESTREL_KV_FLAGS_USAGE
    "  --no-bos            do not add BOS before the prompt (added when the model asks for it)\n"
    "  --ignore-eos        keep generating past EOS and end-of-turn, -n tokens in all (past the\n"
    "                      context too: for long streams, benchmarks and tests)\n"
    "  --timings FILE      write each generated token's latency (ms) to FILE, and every 1000\n"
    "                      tokens the process's peak and current resident memory (Linux)\n";

// Resident memory from /proc/self/status: VmHWM (the peak so far) and VmRSS, in KiB; -1 where
// it cannot be read.
void ReadResidentKib(long* peak, long* current) {
  *peak = *current = -1;
  std::ifstream status("/proc/self/status");
  std::string key;
  long value;
  while (status >> key) {
    if (key == "VmHWM:" && status >> value)
      *peak = value;
    else if (key == "VmRSS:" && status >> value)
      *current = value;
  }
}

// Records when each token arrives (storage reserved up front) while streaming it to stdout.
struct TokenTimings {
  std::vector<double> seconds;  // since the first token
  struct Resident {
    size_t tokens;
    long peak_kib, current_kib;
  };
  std::vector<Resident> resident;
  std::chrono::steady_clock::time_point start;

  static void Sink(void* context, int32_t token, std::string_view text) {
    StreamToken(nullptr, token, text);
    auto& t = *static_cast<TokenTimings*>(context);
    const auto now = std::chrono::steady_clock::now();
    if (t.seconds.empty()) t.start = now;
    t.seconds.push_back(std::chrono::duration<double>(now - t.start).count());
    if (t.seconds.size() % 1000 == 0) {
      Resident r{t.seconds.size(), -1, -1};
      ReadResidentKib(&r.peak_kib, &r.current_kib);
      t.resident.push_back(r);
    }
  }

  // Writes the file's lines to `out` and puts it in place.
  Status Write(AtomicOutput* out) const {
    std::string text = "# token latency_ms (token 0 comes from the prefill)\n";
    char line[128];
    for (size_t i = 1; i < seconds.size(); ++i) {
      std::snprintf(line, sizeof(line), "%zu %.4f\n", i, 1e3 * (seconds[i] - seconds[i - 1]));
      text += line;
    }
    for (const Resident& r : resident) {
      std::snprintf(line, sizeof(line),
                    "# resident after %zu tokens: peak %ld KiB, current %ld KiB\n", r.tokens,
                    r.peak_kib, r.current_kib);
      text += line;
    }
    KES_RETURN_IF_ERROR(out->Write(text.data(), text.size()));
    return out->Commit();
  }
};

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  std::string model_path, prompt, prompt_file, timings_path;
  bool have_prompt = false, add_bos = true, ctx_given = false;
  SessionOptions session_options;
  session_options.n_threads = DefaultThreads();
  GenerateOptions gen;
  gen.sampler.temperature = 0.8f;
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-p" || arg == "--prompt") {
      *s = flags.Value(arg, &prompt);
      have_prompt = true;
    } else if (arg == "-f" || arg == "--file") {
      *s = flags.Value(arg, &prompt_file);
    } else if (arg == "-n" || arg == "--n-predict") {
      *s = flags.Int(arg, 0, 1 << 24, &gen.max_new_tokens);
    } else if (arg == "--no-bos") {
      add_bos = false;
    } else if (arg == "--ignore-eos") {
      gen.stop_at_end_of_generation = false;
    } else if (arg == "--timings") {
      *s = flags.Value(arg, &timings_path);
    } else {
      return GenerationFlag(flags, arg, &session_options, &ctx_given, &gen.sampler, s);
    }
    return true;
  };
  if (std::optional<int> exit_code = ReadCommandFlags(args, "run", kRunUsage, flag, &model_path)) {
    return *exit_code;
  }
  if (!have_prompt && prompt_file.empty()) {
    return Fail(std::string("no prompt given (-p or -f)\n") + kRunUsage);
  }
  if (have_prompt && !prompt_file.empty()) {
    return Fail(std::string("give the prompt with one of -p and -f, not both\n") + kRunUsage);
  }

  std::unique_ptr<Model> model;
  Status s = OpenTextGenerator(model_path, ctx_given, &session_options, &model);
  if (s.ok() && !prompt_file.empty()) s = ReadInputText("-f", prompt_file, &prompt);
  if (!s.ok()) return Fail(s.message());
  std::vector<int32_t> tokens;
  const Tokenizer& tokenizer = model->tokenizer();
  s = tokenizer.Encode(prompt, /*add_special=*/false, /*parse_special=*/true, &tokens);
  if (!s.ok()) return Fail("prompt: " + s.message());
  // As llama.cpp: BOS only for vocabularies that ask for it (Gemma, Llama); SmolLM2's says no.
  if (add_bos && tokenizer.config().add_bos && tokenizer.config().bos_id >= 0) {
    tokens.insert(tokens.begin(), tokenizer.config().bos_id);
  }
  if (tokens.empty()) return Fail("the prompt is empty");
  std::unique_ptr<Session> session;
  s = CreateSession(*model, session_options, &session);
  if (!s.ok()) return Fail(s.message());
  // Checked here as well as in Generate, so that a prompt that cannot run is not echoed first.
  if (tokens.size() > session->context_length()) {
    return Fail("the prompt is " + std::to_string(tokens.size()) +
                " tokens, more than the context of " + std::to_string(session->context_length()) +
                " tokens (--ctx; the model's is " +
                std::to_string(model->hparams().context_length()) + ")");
  }

  // The timings file is created now, so a path that cannot be written fails before generating.
  std::unique_ptr<AtomicOutput> timings_file;
  if (!timings_path.empty()) {
    s = AtomicOutput::Create(timings_path, &timings_file);
    if (!s.ok()) return Fail("--timings: " + s.message());
  }
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  // A long prompt shows its progress on a terminal; Generate prefills the rest.
  const auto prefill_start = std::chrono::steady_clock::now();
  size_t ahead = 0;
  s = PrefillWithProgress(*session, tokens.data(), tokens.size(), &ahead);
  if (!s.ok()) return Fail(s.message());
  const double ahead_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - prefill_start).count();
  GenerateStats stats;
  TokenTimings timings;
  if (!timings_path.empty()) {
    timings.seconds.reserve(gen.max_new_tokens);
    timings.resident.reserve(gen.max_new_tokens / 1000 + 1);
    s = Generate(*session, tokens.data() + ahead, tokens.size() - ahead, gen, TokenTimings::Sink,
                 &timings, &stats);
  } else {
    s = Generate(*session, tokens.data() + ahead, tokens.size() - ahead, gen, StreamToken, nullptr,
                 &stats);
  }
  stats.prompt_tokens += ahead;
  stats.prefill_seconds += ahead_seconds;
  std::fputc('\n', stdout);
  if (!s.ok()) return Fail(s.message());
  if (!timings_path.empty()) {
    s = timings.Write(timings_file.get());
    if (!s.ok()) return Fail("--timings: " + s.message());
  }
  std::fprintf(stderr,
               "\nprefill: %zu tokens in %.3f s (%.2f tokens/s)\n"
               "decode:  %zu tokens in %.3f s (%.2f tokens/s)\n"
               "threads: %zu, context: %zu, KV %s, arena: %.1f MiB%s\n",
               stats.prompt_tokens, stats.prefill_seconds,
               stats.prompt_tokens / stats.prefill_seconds, stats.decode_steps,
               stats.decode_seconds,
               stats.decode_steps ? stats.decode_steps / stats.decode_seconds : 0.0,
               session->n_threads(), session->context_length(),
               ops::KvTypeName(session_options.kv.type), session->memory().arena_bytes / 1048576.0,
               stats.stopped_at_end ? ", stopped at end of generation" : "");
  return 0;
}

}  // namespace kestrel::cli
