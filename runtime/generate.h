// The generation loop shared by `kestrel run`, `kestrel bench` and the tests: prefill the prompt,
// then sample, detokenize and decode one token at a time. Allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/status.h"

namespace kestrel {

struct GenerateOptions {
  size_t max_new_tokens = 128;
  SamplerOptions sampler;
  bool stop_at_end_of_generation = true;  // EOS or end-of-turn
  // Read after each token reaches the sink: once true, generation stops there, before that
  // token is decoded. Another thread may set it (the C API's abort), or the sink itself.
  const std::atomic<bool>* stop = nullptr;
};

struct GenerateStats {
  size_t prompt_tokens = 0;
  size_t generated_tokens = 0;
  size_t decode_steps = 0;     // Decode calls (the last generated token needs none)
  double prefill_seconds = 0;  // prompt through to the first token's logits
  double decode_seconds = 0;   // every later decode step, sampling and detokenizing included
  bool stopped_at_end = false;
  bool stopped = false;  // by GenerateOptions::stop
};

// Receives each generated token and its text as it is produced.
using TokenSink = void (*)(void* context, int32_t token, std::string_view text);

// Generation stops at max_new_tokens or at EOS/end-of-turn; it goes on past the context (the
// session keeps the attention sinks and the most recent tokens). The prompt must fit the context.
Status Generate(Session& session, const int32_t* prompt, size_t n_prompt,
                const GenerateOptions& options, TokenSink sink, void* sink_context,
                GenerateStats* stats);

// Generate without a prompt: samples the first token from the logits the session holds (after
// a Prefill or a Decode, position() > 0). Generate is Prefill followed by this.
Status GenerateFromLogits(Session& session, const GenerateOptions& options, TokenSink sink,
                          void* sink_context, GenerateStats* stats);

}  // namespace kestrel
