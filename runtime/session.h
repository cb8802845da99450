// A Session runs one sequence through a model. Everything it needs lives in one arena, sized by
// PlanMemory before anything runs: activations (planned by the converter), the KV rings and the
// sampler's scratch. The arena is the caller's (SessionOptions::arena) or allocated once here;
// after Create returns, Prefill, Decode and Score allocate nothing.
//
// Past the context the session goes on: every layer keeps its most recent tokens (global layers:
// the context minus the attention sinks, plus the sinks), so memory stays what Create planned
// however long the sequence grows.
//
// Lifetime: the Model (and, for Model::FromMemory, its buffer) and a caller-provided arena must
// outlive the Session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/arena.h"
#include "runtime/executor.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

struct SequenceExtras;  // runtime/session_state.h

struct SessionOptions {
  size_t context_length = 4096;  // capped at the model's trained context
  size_t n_threads = 1;
  // The KV cache's element type and the attention sinks kept once generation passes the context.
  KvOptions kv;
  // Optional caller-owned arena, 64-byte aligned, at least PlanMemory(...).arena_bytes long.
  void* arena = nullptr;
  size_t arena_bytes = 0;
};

class Session {
 public:
  static Status Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* out);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Appends tokens at position(), in chunks of the prefill plan's max_tokens. Afterwards
  // logits() holds the logits after the last token.
  Status Prefill(const int32_t* tokens, size_t n_tokens);
  // Appends one token; logits() then holds the logits for the next one.
  Status Decode(int32_t token);
  // Encoder-decoders (Whisper): computes every decoder layer's cross-attention keys and values
  // from the encoder's last hidden states [n_positions, d_model] (the "cross_kv" plan), which
  // the following steps attend to. Once per input (audio window); the position is unchanged.
  Status SetEncoderStates(const float* states, size_t n_positions);
  // Like Prefill, but writes the logits after every token to logits_out [n_tokens, vocab].
  Status Score(const int32_t* tokens, size_t n_tokens, float* logits_out);

  const float* logits() const { return logits_; }  // [vocab]
  size_t vocab_size() const { return model_.vocab_size(); }
  size_t position() const { return position_; }
  size_t context_length() const { return memory_.context_length; }
  size_t n_threads() const { return pool_.size(); }
  const MemoryPlan& memory() const { return memory_; }
  const Model& model() const { return model_; }
  // Scratch for the sampler: memory().sampler_bytes bytes inside the arena.
  void* sampler_scratch() const { return arena_.data() + memory_.sampler_offset; }
  // Calls observer before every op of every later Prefill, Decode and Score (kestrel bench
  // --profile times the steps with it); nullptr: none.
  void SetStepObserver(StepObserver observer, void* context) {
    for (BoundPlan* plan : {&prefill_, &decode_, &score_, &cross_}) {
      plan->SetObserver(observer, context);
    }
  }
  // Forgets the sequence: the next token goes to position 0.
  void Reset() {
    position_ = 0;
    ++sequence_version_;
  }
  // Goes back to `position` (at most position()), keeping the keys and values of the positions
  // before it, as if the tokens after it had never been given: `kestrel bench --depth` repeats
  // its tests from one prefilled depth this way. Fails, changing nothing, when a ring has since
  // overwritten a key that a query at `position` would see (a sliding-window ring after more
  // than a step past it, any ring once past the context); Reset and prefill again then.
  Status Rewind(size_t position);
  // Changes whenever the sequence does (Prefill, Decode, Score, Reset, Rewind, LoadState), so
  // that a holder of text about it (the C API's chat) learns that someone else moved it.
  uint64_t sequence_version() const { return sequence_version_; }

  // The sequence as bytes and back (the format: runtime/session_state.h): the position, the KV
  // rows of the positions in use, the logits, and the caller's SequenceExtras: `pending`, a
  // token it counts in the sequence but has not run yet (-1: none; the logits are then left
  // out, since running it makes new ones), and its sampler's state. StateBytes is what
  // SaveState writes for that `pending`. Neither allocates (but for the message of a failure).
  // LoadState checks everything (format, checksum, model, context, KV type, sinks) before it
  // changes anything: a refused state leaves the session as it was. Not for encoder-decoders.
  size_t StateBytes(int32_t pending) const;
  Status SaveState(const SequenceExtras& extras, uint8_t* out, size_t capacity, size_t* size) const;
  Status LoadState(const uint8_t* data, size_t size, SequenceExtras* extras);

 private:
  Session(const Model& model, size_t n_threads) : model_(model), pool_(n_threads) {}
  Status CheckTokens(const int32_t* tokens, size_t n_tokens) const;
  // Runs `plan` over the tokens in chunks; after each chunk calls on_chunk(first, count).
  template <typename OnChunk>
  void RunChunks(const BoundPlan& plan, const int32_t* tokens, size_t n_tokens, OnChunk on_chunk);

  const Model& model_;
  ThreadPool pool_;
  MemoryPlan memory_;
  Arena arena_;
  BoundPlan prefill_, decode_, score_, cross_;
  bool has_score_ = false;
  bool has_cross_ = false;
  bool has_encoder_states_ = false;  // SetEncoderStates ran: the cross-attention layers hold them
  bool learned_positions_ = false;   // the plans take a Positions input (Whisper's decoder)
  const float* logits_ = nullptr;
  size_t position_ = 0;
  uint64_t sequence_version_ = 0;
};

}  // namespace kestrel
