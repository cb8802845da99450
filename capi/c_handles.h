// What the C API's opaque handles hold. kes_model, kes_session and the others are declared
// (incomplete) in kestrel.h; only the capi/ sources see these definitions.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <vector>

#include "capi/handle_arena.h"
#include "kestrel/kestrel.h"
#include "runtime/encoder.h"
#include "runtime/chat_conversation.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

struct kes_model {
  std::unique_ptr<kestrel::Model> model;
};

struct kes_session {
  const kes_model* model = nullptr;
  // The arena when the caller gave none; declared before `session`, which uses it, so that it
  // is freed after the session.
  kestrel::capi::OwnedArena owned_arena;
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

  // kes_session_chat's conversation (null: none yet) and how to write the next one; it goes
  // on while the sequence is the one it left (chat_version), else a new one starts.
  std::unique_ptr<kestrel::ChatConversation> chat;
  uint64_t chat_version = 0;
  std::string chat_system, chat_format;
  std::optional<bool> chat_thinking;  // kes_chat_params.thinking of the last chat start
  bool chat_has_system = false;

  std::string error;  // kes_session_last_error
};

// capi/encoder_c.cc. Every buffer kes_embed needs besides the tokenizer's own is sized by
// kes_encoder_create, so that embedding allocates nothing of its own.
struct kes_encoder {
  const kes_model* model = nullptr;
  kestrel::capi::OwnedArena owned_arena;  // before `encoder`, which uses it
  std::unique_ptr<kestrel::Encoder> encoder;
  // One step of texts, tokenized (kes_embed): their ids end to end, where each starts, and how
  // long it is.
  std::vector<int32_t> step_ids;         // [max_step_tokens]
  std::vector<const int32_t*> step_seq;  // [max_batch]
  std::vector<size_t> step_lengths;      // [max_batch]
  std::vector<int32_t> text_ids;         // [max_sequence_tokens], one text's

  // kes_encoder_abort sets it from any thread; the encoder reads it before each step
  // (EncoderOptions::stop), and the call it stops clears it.
  std::atomic<bool> abort{false};

  // kes_encoder_last_error; mutable, so that calls taking a const encoder keep theirs too (one
  // thread at a time uses an encoder, whatever the call).
  mutable std::string error;
};

// kes_transcriber is defined in capi/transcribe_c.cc, its only user: a build without audio
// (KESTREL_WITH_AUDIO=OFF) compiles capi/transcribe_without_audio_c.cc instead and has none.
