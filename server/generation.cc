#include "server/generation.h"

#include <algorithm>
#include <chrono>

namespace kestrel::server {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Bytes of a UTF-8 character cut short at the end of `text` (0 when it ends whole).
size_t IncompleteUtf8(std::string_view text) {
  const size_t n = text.size();
  for (size_t back = 1; back <= std::min<size_t>(n, 4); ++back) {
    const unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t need = 1;
    if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

// Prefills what `slot` does not hold of `prompt`, leaving slot.held equal to `prompt`: the
// session goes back to the beginning both share (a system prompt, the earlier turns of a chat)
// when it still can, else starts over.
kestrel::Status Prefill(Slot& slot, const std::vector<int32_t>& prompt, size_t* reused) {
  Session& session = slot.session;
  size_t from = 0;
  const Result<size_t> position = session.Position();
  const bool consistent = position.ok() && *position == slot.held.size();
  const size_t shared = SharedPrefix(slot.held, prompt);
  if (consistent && shared > 0 && session.Rewind(shared).ok()) {
    from = shared;
    slot.held.resize(shared);
  } else {
    slot.held.clear();
    kestrel::Status s = session.Reset();
    if (!s.ok()) return s;
  }
  *reused = from;
  kestrel::Status s = session.Prefill(prompt.data() + from, prompt.size() - from);
  if (!s.ok()) {
    slot.held.clear();
    session.Reset();
    return s;
  }
  slot.held.insert(slot.held.end(), prompt.begin() + from, prompt.end());
  return s;
}

}  // namespace

size_t HeldBackBytes(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = IncompleteUtf8(text);
  for (const std::string& stop : stops) {
    // The longest proper prefix of `stop` that ends `text`.
    for (size_t k = std::min(stop.size() - 1, text.size()); k > hold; --k) {
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  return hold;
}

void RunGeneration(const kestrel::Model& model, Slot& slot, const std::vector<int32_t>& prompt,
                   const GenerationRequest& request, size_t max_tokens,
                   const std::atomic<bool>& stopping, const DeltaSink& on_delta,
                   GenerationOutcome* out) {
  out->prompt_tokens = prompt.size();
  const Clock::time_point start = Clock::now();
  out->status = Prefill(slot, prompt, &out->reused_tokens);
  out->prefill_seconds = Seconds(start);
  if (!out->status.ok()) return;

  kestrel::SamplerParams sampler = kestrel::DefaultSamplerParams();
  sampler.temperature = request.temperature;
  sampler.top_p = request.top_p;
  sampler.top_k = request.top_k;
  sampler.seed = request.seed;
  size_t longest_stop = 0;
  for (const std::string& stop : request.stop) longest_stop = std::max(longest_stop, stop.size());

  const Clock::time_point decode_start = Clock::now();
  std::string& text = out->text;
  size_t emitted = 0;  // bytes of `text` handed on
  out->finish_reason = "length";
  for (size_t i = 0; i < max_tokens; ++i) {
    if (stopping.load(std::memory_order_relaxed)) {
      out->client_gone = true;
      break;
    }
    Result<Session::Token> token = slot.session.NextToken(sampler);
    if (!token.ok()) {
      out->status = token.status();
      break;
    }
    slot.held.push_back(token->id);
    if (model.IsEnd(token->id)) {
      out->finish_reason = "stop";
      break;
    }
    ++out->completion_tokens;
    const size_t search_from = text.size() >= longest_stop ? text.size() - longest_stop + 1 : 0;
    text.append(token->piece.data(), token->piece.size());
    size_t cut = std::string::npos;
    for (const std::string& stop : request.stop) {
      const size_t at = text.find(stop, std::min(search_from, emitted));
      if (at != std::string::npos && at < cut) cut = at;
    }
    if (cut != std::string::npos) {
      text.resize(cut);
      out->finish_reason = "stop";
      break;
    }
    const size_t ready = text.size() - HeldBackBytes(text, request.stop);
    const std::string_view delta(text.data() + emitted, ready > emitted ? ready - emitted : 0);
    emitted += delta.size();
    if (!on_delta(delta)) {
      out->client_gone = true;
      break;
    }
  }
  out->decode_seconds = Seconds(decode_start);
  if (!out->client_gone && emitted < text.size()) {
    on_delta(std::string_view(text.data() + emitted, text.size() - emitted));
  }
}

}  // namespace kestrel::server
