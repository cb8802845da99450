// Picks the next token from logits: greedy at temperature 0, otherwise temperature, top-k and
// top-p (nucleus) sampling with a seeded generator. Works in caller-provided scratch (the
// session's arena), so sampling allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/status.h"

namespace kestrel {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy (argmax, lowest id on ties)
  int32_t top_k = 40;        // 0: no top-k cut
  float top_p = 0.95f;       // 1: no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  // scratch holds at least ScratchBytes(vocab) bytes and outlives the sampler.
  static size_t ScratchBytes(size_t vocab);
  Status Init(const SamplerOptions& options, size_t vocab, void* scratch, size_t scratch_bytes);
  int32_t Sample(const float* logits);

  // The generator's place in its sequence, so that a saved session state
  // (runtime/session_state.h) samples on after a load as the run that saved it would have.
  uint64_t random_state() const { return state_; }
  void set_random_state(uint64_t state) { state_ = state; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };
  double NextUniform();  // in [0, 1)

  SamplerOptions options_;
  size_t vocab_ = 0;
  Candidate* candidates_ = nullptr;
  uint64_t state_ = 0;
};

}  // namespace kestrel
