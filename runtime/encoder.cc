#include "runtime/encoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/format.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

Status Encoder::Create(const Model& model, const EncoderOptions& options,
                       std::unique_ptr<Encoder>* out) {
  KES_CHECK_OR_RETURN(model.is_encoder(),
                      model.has_audio_encoder()
                          ? "this is a speech model (an 'encode_audio' plan): use an AudioEncoder"
                          : "this model has no 'encode' plan (it is a decoder: generate with a "
                            "Session)");
  KES_RETURN_IF_ERROR(CheckCanRun(options.n_threads));
  std::unique_ptr<Encoder> e(new Encoder(model, options.n_threads));
  e->stop_ = options.stop;
  e->memory_ = PlanEncoderMemory(model);
  KES_RETURN_IF_ERROR(e->arena_.Acquire(options.arena, options.arena_bytes, e->memory_.arena_bytes)
                          .WithContext("the encoder"));
  KES_RETURN_IF_ERROR(e->plan_.Bind(model, *model.FindPlan("encode"), e->arena_.data(), e->memory_,
                                    options.fuse_epilogues));

  // What the runtime writes and reads: the plan check guaranteed each role's dtype and shape.
  const BoundPlan& plan = e->plan_;
  const fb::Buffer* sequences = plan.IoBuffer(fb::IoRole::Sequences);
  const fb::Buffer* embeddings = plan.IoBuffer(fb::IoRole::Embeddings);
  KES_CHECK_OR_RETURN(plan.token_input() != nullptr && plan.Io(fb::IoRole::Positions) != nullptr &&
                          sequences != nullptr && embeddings != nullptr,
                      "plan 'encode': expected token-ids, positions and sequence-table inputs "
                      "and an embeddings output");
  e->tokens_ = plan.token_input();
  e->positions_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::Positions));
  e->token_types_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::TokenTypes));
  e->sequences_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::Sequences));
  e->embeddings_ = reinterpret_cast<const float*>(plan.Io(fb::IoRole::Embeddings));
  e->max_batch_ = sequences->fixed_rows();
  e->embedding_dim_ = embeddings->row_elems();
  KES_CHECK_OR_RETURN(
      e->max_sequence_tokens() >= 1 && e->max_sequence_tokens() <= e->max_step_tokens(),
      "plan 'encode' takes " + Num(e->max_step_tokens()) +
          " tokens per step, fewer than one sequence of context_length " +
          Num(e->max_sequence_tokens()));
  *out = std::move(e);
  return OkStatus();
}

Encoder::~Encoder() = default;

Status Encoder::Encode(const int32_t* const* ids, const size_t* lengths, size_t n, float* out) {
  KES_CHECK_OR_RETURN(n == 0 || (ids != nullptr && lengths != nullptr && out != nullptr),
                      "null sequence, length or output pointer");
  stopped_ = false;
  const size_t vocab = model_.vocab_size();
  // Messages are built only on failure: this runs inside the zero-allocation loop.
  for (size_t i = 0; i < n; ++i) {
    KES_CHECK_OR_RETURN(lengths[i] >= 1 && lengths[i] <= max_sequence_tokens(),
                        "sequence " + Num(i) + " has " + Num(lengths[i]) + " tokens, expected 1.." +
                            Num(max_sequence_tokens()) + " (tokenize with truncation)");
    KES_CHECK_OR_RETURN(ids[i] != nullptr, "sequence " + Num(i) + " is null");
    for (size_t t = 0; t < lengths[i]; ++t) {
      KES_CHECK_OR_RETURN(ids[i][t] >= 0 && static_cast<size_t>(ids[i][t]) < vocab,
                          "sequence " + Num(i) + " token " + Num(t) + " is id " +
                              std::to_string(ids[i][t]) + ", expected 0.." + Num(vocab - 1));
    }
  }
  // Steps take sequences in order, as many as fit the step's sequence and token bounds.
  for (size_t first = 0; first < n;) {
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
      stopped_ = true;
      return Status::Error("stopped after " + Num(first) + " of " + Num(n) +
                           " sequences: EncoderOptions::stop was set");
    }
    size_t count = 0, tokens = 0;
    while (first + count < n && count < max_batch_ &&
           tokens + lengths[first + count] <= max_step_tokens()) {
      tokens += lengths[first + count++];
    }
    RunStep(ids, lengths, first, count, out);
    first += count;
    if (progress_ != nullptr) progress_(progress_context_, first, n);
  }
  return OkStatus();
}

void Encoder::RunStep(const int32_t* const* ids, const size_t* lengths, size_t first, size_t count,
                      float* out) {
  size_t start = 0;
  for (size_t s = 0; s < count; ++s) {
    const size_t len = lengths[first + s];
    std::memcpy(tokens_ + start, ids[first + s], len * sizeof(int32_t));
    for (size_t t = 0; t < len; ++t) positions_[start + t] = static_cast<int32_t>(t);
    if (token_types_ != nullptr) std::fill(token_types_ + start, token_types_ + start + len, 0);
    sequences_[2 * s] = static_cast<int32_t>(start);
    sequences_[2 * s + 1] = static_cast<int32_t>(len);
    start += len;
  }
  plan_.Run(pool_, start, 0);
  std::memcpy(out + first * embedding_dim_, embeddings_, count * embedding_dim_ * sizeof(float));
}

Status Encoder::Tokenize(std::string_view text, std::vector<int32_t>* ids) const {
  const Tokenizer& tok = model_.tokenizer();
  const TokenizerConfig& config = tok.config();
  std::vector<int32_t> pieces;
  // Special tokens typed in the text count as themselves, as Hugging Face tokenizers parse them.
  KES_RETURN_IF_ERROR(tok.Encode(text, /*add_special=*/false, /*parse_special=*/true, &pieces));
  const size_t specials = (config.add_bos ? 1 : 0) + (config.add_eos ? 1 : 0);
  const size_t room = max_sequence_tokens() - std::min(specials, max_sequence_tokens());
  const size_t keep = std::min(pieces.size(), room);
  ids->clear();
  if (config.add_bos) ids->push_back(config.bos_id);
  ids->insert(ids->end(), pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(keep));
  if (config.add_eos) ids->push_back(config.eos_id);
  KES_CHECK_OR_RETURN(!ids->empty(), "the text gives no tokens and the model adds none");
  return OkStatus();
}

}  // namespace kestrel
