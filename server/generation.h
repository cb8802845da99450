// One request's generation on a slot: the prompt prefilled (only what the slot does not already
// hold), tokens sampled one by one, the text cut at a stop sequence, and each piece of text
// handed on once it is final: never a part that may turn out to begin a stop sequence, never a
// character cut in two.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/kestrel.hpp"
#include "server/request.h"
#include "server/slot_pool.h"

namespace kestrel::server {

struct GenerationOutcome {
  std::string text;  // the whole reply, without the stop sequence or the end token
  size_t prompt_tokens = 0;
  size_t reused_tokens = 0;  // of the prompt, already in the slot: not prefilled again
  size_t completion_tokens = 0;
  const char* finish_reason = "stop";  // "stop" or "length"
  bool client_gone = false;
  double prefill_seconds = 0, decode_seconds = 0;
  kestrel::Status status;  // a failure of the library (then the reply is cut short)
};

// Receives the reply's text as it becomes final, once per token (often empty: a heartbeat);
// returns false when the client has gone, which stops generation.
using DeltaSink = std::function<bool(std::string_view delta)>;

// Generates up to `max_tokens` tokens after `prompt` on `slot`. `stopping` (set on shutdown)
// stops it too. prompt.size() + max_tokens must fit the slot's context.
void RunGeneration(const kestrel::Model& model, Slot& slot, const std::vector<int32_t>& prompt,
                   const GenerationRequest& request, size_t max_tokens,
                   const std::atomic<bool>& stopping, const DeltaSink& on_delta,
                   GenerationOutcome* out);

// The bytes at the end of `text` that may be the start of one of `stops` (a stop sequence split
// across tokens) or of a UTF-8 character whose other bytes have not come yet.
size_t HeldBackBytes(std::string_view text, const std::vector<std::string>& stops);

}  // namespace kestrel::server
