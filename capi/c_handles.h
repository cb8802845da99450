// What the C API's opaque handles hold. kes_model and kes_session are declared (incomplete) in
// kestrel.h; only the capi/ sources see these definitions.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "kestrel/kestrel.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

struct kes_model {
  std::unique_ptr<kestrel::Model> model;
};

struct kes_session {
  struct FreeArena {
    void operator()(void* p) const { std::free(p); }
  };

  const kes_model* model = nullptr;
  // The arena when the caller gave none; declared before `session`, which uses it, so that it
  // is freed after the session.
  std::unique_ptr<void, FreeArena> owned_arena;
  std::unique_ptr<kestrel::Session> session;
  size_t prefill_chunk = 0;  // the prefill plan's tokens per step

  // kes_session_next_token's sampler, kept across calls so that its random sequence goes on;
  // seeded again after a prefill, a reset, a kes_generate or a change of its options.
  kestrel::Sampler sampler;
  kestrel::SamplerOptions sampler_options;
  bool sampler_ready = false;

  // The last token generated, which belongs to the sequence but has not been run through the
  // model yet (its logits are needed only if more is asked); -1: none. Running it lazily keeps
  // kes_generate from paying a step for logits nobody reads, as `kestrel run` does not.
  int32_t pending = -1;

  // kes_session_abort sets both from any thread; `stop` is what the generation loop reads
  // (runtime/generate.h), which a callback's nonzero return sets too.
  std::atomic<bool> abort{false};
  std::atomic<bool> stop{false};

  std::string error;  // kes_session_last_error
};
