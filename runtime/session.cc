#include "runtime/session.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/format.h"

namespace kestrel {
Status Session::Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* out) {
  KES_RETURN_IF_ERROR(CheckCanRun(options.n_threads));
  KES_CHECK_OR_RETURN(!model.is_encoder(),
                      "this is an encoder model (it embeds texts and has no "
                      "'prefill' or 'decode' plan): use an Encoder");
  KES_CHECK_OR_RETURN(!model.has_audio_encoder() || model.has_decoder(),
                      "this speech model has only its audio encoder (an 'encode_audio' plan, no "
                      "'decode' plan): run it with an AudioEncoder");
  const size_t context = std::min<size_t>(options.context_length, model.hparams().context_length());
  std::unique_ptr<Session> session(new Session(model, options.n_threads));
  KES_RETURN_IF_ERROR(PlanMemory(model, context, &session->memory_, options.kv));
  KES_RETURN_IF_ERROR(
      session->arena_.Acquire(options.arena, options.arena_bytes, session->memory_.arena_bytes)
          .WithContext("the session at context " + std::to_string(context)));
  // Every plan a session runs takes token ids and gives logits.
  const auto bind = [&](const fb::Plan& plan, BoundPlan* bound) {
    KES_RETURN_IF_ERROR(bound->Bind(model, plan, session->arena_.data(), session->memory_));
    KES_CHECK_OR_RETURN(
        bound->token_input() != nullptr && bound->logits() != nullptr,
        "plan '" + plan.name()->str() + "': expected a token-ids input and a logits output");
    return OkStatus();
  };
  KES_RETURN_IF_ERROR(bind(*model.FindPlan("prefill"), &session->prefill_));
  KES_RETURN_IF_ERROR(bind(*model.FindPlan("decode"), &session->decode_));
  for (const BoundPlan* plan : {&session->prefill_, &session->decode_}) {
    session->learned_positions_ |= plan->Io(fb::IoRole::Positions) != nullptr;
  }
  if (const fb::Plan* cross = model.FindPlan("cross_kv")) {
    KES_RETURN_IF_ERROR(
        session->cross_.Bind(model, *cross, session->arena_.data(), session->memory_));
    KES_CHECK_OR_RETURN(session->cross_.Io(fb::IoRole::HiddenStates) != nullptr,
                        "plan 'cross_kv': expected a hidden-states input");
    session->has_cross_ = true;
  }
  if (const fb::Plan* score = model.FindPlan("score")) {
    KES_RETURN_IF_ERROR(bind(*score, &session->score_));
    KES_CHECK_OR_RETURN(session->score_.logits_per_token(),
                        "plan 'score' must compute logits for every token");
    session->has_score_ = true;
  }
  *out = std::move(session);
  return OkStatus();
}

Session::~Session() = default;

namespace {

// Whether `ring`, after positions up to `end` (exclusive) were written, still holds every key a
// query at `position` sees: its sinks and the `reach` positions before it. Position q >= capacity
// overwrote the slot of q - (capacity - sinks); the sinks are never overwritten.
bool KeepsKeysBefore(const KvRingPlan& ring, size_t position, size_t end) {
  if (end <= ring.capacity || position <= ring.sinks) return true;
  const size_t newest_overwritten = end - 1 - (ring.capacity - ring.sinks);
  const size_t oldest_seen =
      std::max(ring.sinks, position > ring.reach ? position - ring.reach : 0);
  return newest_overwritten < oldest_seen;
}

}  // namespace

Status Session::Rewind(size_t position) {
  KES_CHECK_OR_RETURN(position <= position_, "cannot rewind to position " +
                                                 std::to_string(position) +
                                                 ": expected at most "
                                                 "the current position " +
                                                 std::to_string(position_));
  for (size_t layer = 0; layer < memory_.kv.size(); ++layer) {
    if (memory_.kv[layer].cross) continue;  // the encoder's keys: not positions of the sequence
    KES_CHECK_OR_RETURN(KeepsKeysBefore(memory_.kv[layer], position, position_),
                        "cannot rewind from position " + std::to_string(position_) + " to " +
                            std::to_string(position) + ": layer " + std::to_string(layer) +
                            "'s KV ring of " + std::to_string(memory_.kv[layer].capacity) +
                            " slots no longer holds the keys that position sees");
  }
  position_ = position;
  ++sequence_version_;
  return OkStatus();
}

Status Session::CheckTokens(const int32_t* tokens, size_t n_tokens) const {
  KES_CHECK_OR_RETURN(n_tokens > 0, "no tokens given");
  KES_CHECK_OR_RETURN(tokens != nullptr, "token pointer is null");
  KES_CHECK_OR_RETURN(!has_cross_ || has_encoder_states_,
                      "this encoder-decoder needs the encoder's states first "
                      "(Session::SetEncoderStates, e.g. from an AudioEncoder)");
  // A table of learned positions ends at the context: no going past it, unlike rotary models.
  KES_CHECK_OR_RETURN(!learned_positions_ || position_ + n_tokens <= context_length(),
                      "this model's learned positions end at " + std::to_string(context_length()) +
                          " tokens; position " + std::to_string(position_) + " + " +
                          std::to_string(n_tokens) + " tokens would pass them");
  for (size_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= vocab_size()) {
      return Status::Error("token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                           ", expected 0.." + std::to_string(vocab_size() - 1));
    }
  }
  return OkStatus();
}

Status Session::SetEncoderStates(const float* states, size_t n_positions) {
  KES_CHECK_OR_RETURN(has_cross_,
                      "this model has no 'cross_kv' plan (it is not an "
                      "encoder-decoder)");
  KES_CHECK_OR_RETURN(states != nullptr, "encoder states pointer is null");
  KES_CHECK_OR_RETURN(n_positions == cross_.max_tokens(),
                      "expected the encoder's " + std::to_string(cross_.max_tokens()) +
                          " positions, found " + std::to_string(n_positions));
  const fb::Buffer& buffer = *cross_.IoBuffer(fb::IoRole::HiddenStates);
  std::memcpy(cross_.Io(fb::IoRole::HiddenStates), states,
              n_positions * buffer.row_elems() * sizeof(float));
  cross_.Run(pool_, n_positions, 0);
  has_encoder_states_ = true;
  return OkStatus();
}

template <typename OnChunk>
void Session::RunChunks(const BoundPlan& plan, const int32_t* tokens, size_t n_tokens,
                        OnChunk on_chunk) {
  for (size_t done = 0; done < n_tokens;) {
    size_t n = std::min(plan.max_tokens(), n_tokens - done);
    // The rings hold only kPastContextStepTokens slots beyond what their queries see.
    if (position_ + n > memory_.context_length) n = std::min(n, kPastContextStepTokens);
    std::memcpy(plan.token_input(), tokens + done, n * sizeof(int32_t));
    if (int32_t* positions = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::Positions))) {
      for (size_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(position_ + i);
    }
    plan.Run(pool_, n, static_cast<int64_t>(position_));
    position_ += n;
    ++sequence_version_;
    on_chunk(done, n);
    done += n;
  }
}

Status Session::Prefill(const int32_t* tokens, size_t n_tokens) {
  KES_RETURN_IF_ERROR(CheckTokens(tokens, n_tokens));
  RunChunks(prefill_, tokens, n_tokens, [](size_t, size_t) {});
  // The prefill plan computes logits for the last token of the chunk only.
  logits_ = prefill_.logits();
  return OkStatus();
}

Status Session::Decode(int32_t token) {
  KES_RETURN_IF_ERROR(CheckTokens(&token, 1));
  RunChunks(decode_, &token, 1, [](size_t, size_t) {});
  logits_ = decode_.logits();
  return OkStatus();
}

Status Session::Score(const int32_t* tokens, size_t n_tokens, float* logits_out) {
  KES_CHECK_OR_RETURN(has_score_, "this model has no 'score' plan (convert it again)");
  KES_CHECK_OR_RETURN(logits_out != nullptr, "logits output is null");
  KES_RETURN_IF_ERROR(CheckTokens(tokens, n_tokens));
  const size_t vocab = vocab_size();
  RunChunks(score_, tokens, n_tokens, [&](size_t first, size_t count) {
    std::memcpy(logits_out + first * vocab, score_.logits(), count * vocab * sizeof(float));
  });
  logits_ = logits_out + (n_tokens - 1) * vocab;
  return OkStatus();
}

}  // namespace kestrel
