#include "runtime/generate.h"

#include <chrono>
#include <string>

namespace kestrel {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Status Generate(Session& session, const int32_t* prompt, size_t n_prompt,
                const GenerateOptions& options, TokenSink sink, void* sink_context,
                GenerateStats* stats) {
  *stats = GenerateStats();
  KES_CHECK_OR_RETURN(n_prompt > 0, "the prompt is empty");
  // Past the context the session keeps only the sinks and the most recent tokens: a prompt
  // longer than the context would lose its beginning before the first token is generated.
  KES_CHECK_OR_RETURN(
      n_prompt <= session.context_length(),
      "the prompt has " + std::to_string(n_prompt) + " tokens, more than the context of " +
          std::to_string(session.context_length()) + " tokens (use --ctx to raise it)");
  const auto start = std::chrono::steady_clock::now();
  KES_RETURN_IF_ERROR(session.Prefill(prompt, n_prompt));
  const double prefill_seconds = SecondsSince(start);
  KES_RETURN_IF_ERROR(GenerateFromLogits(session, options, sink, sink_context, stats));
  stats->prompt_tokens = n_prompt;
  stats->prefill_seconds = prefill_seconds;
  return OkStatus();
}

Status GenerateFromLogits(Session& session, const GenerateOptions& options, TokenSink sink,
                          void* sink_context, GenerateStats* stats) {
  *stats = GenerateStats();
  KES_CHECK_OR_RETURN(session.position() > 0,
                      "nothing to generate from: the session holds no tokens yet");
  Sampler sampler;
  KES_RETURN_IF_ERROR(sampler.Init(options.sampler, session.vocab_size(), session.sampler_scratch(),
                                   session.memory().sampler_bytes));
  const Tokenizer& tokenizer = session.model().tokenizer();

  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < options.max_new_tokens; ++i) {
    const int32_t token = sampler.Sample(session.logits());
    ++stats->generated_tokens;
    if (options.stop_at_end_of_generation && tokenizer.IsEndOfGeneration(token)) {
      stats->stopped_at_end = true;
      break;
    }
    if (sink) sink(sink_context, token, tokenizer.TokenText(token));
    // The last token needs no logits. Past the context the session keeps its sinks and most
    // recent tokens, so generation goes on.
    if (i + 1 == options.max_new_tokens) break;
    if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) {
      stats->stopped = true;
      break;
    }
    KES_RETURN_IF_ERROR(session.Decode(token));
    ++stats->decode_steps;
  }
  stats->decode_seconds = SecondsSince(start);
  return OkStatus();
}

}  // namespace kestrel
