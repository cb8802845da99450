// One Generate call with the heap calls of every thread counted (alloc_counter.h), for the
// zero-allocation tests of text generation on the tiny models and on the real ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/generate.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "tests/support/alloc_counter.h"

namespace kestrel::test {

// Generation that exercises every sampler stage (temperature, top-k, top-p) and never stops
// early: decode_steps Decode calls follow the token the prefill's logits give.
inline GenerateOptions SampledGeneration(size_t decode_steps) {
  GenerateOptions gen;
  gen.max_new_tokens = decode_steps + 1;
  gen.stop_at_end_of_generation = false;
  gen.sampler.temperature = 0.8f;
  gen.sampler.top_k = 40;
  gen.sampler.top_p = 0.9f;
  gen.sampler.seed = 7;
  return gen;
}

struct CountedGeneration {
  Status status;
  GenerateStats stats;
  // Allocated before counting starts; on the heap, as it is 64 KiB.
  std::unique_ptr<CollectedText> collected = std::make_unique<CollectedText>();
  long heap_calls = 0;
};

// Generate on `prompt`, only the call itself counted.
inline CountedGeneration GenerateCounted(Session& session, const std::vector<int32_t>& prompt,
                                         const GenerateOptions& gen) {
  CountedGeneration g;
  StartCountingAllocations();
  g.status = Generate(session, prompt.data(), prompt.size(), gen, CollectText, g.collected.get(),
                      &g.stats);
  g.heap_calls = StopCountingAllocations();
  return g;
}

}  // namespace kestrel::test
