#include "runtime/encoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/format.h"
#include "runtime/plan_check.h"

namespace kestrel {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// Whether the plan's token-type table has a row for a second segment (BERT's two rows; RoBERTa's
// one): the types index it unchecked, so the encoder writes 1 only where that row exists.
bool HasSecondSegment(const Model& model, const fb::Plan& plan) {
  const int64_t types = FindPlanIo(plan, fb::IoRole::TokenTypes);
  if (types < 0) return false;
  for (const fb::Op* op : *plan.ops()) {
    if (op->params_type() == fb::OpParams::Embed &&
        op->inputs()->Get(0) == static_cast<uint32_t>(types)) {
      return model.meta().tensors()->Get(op->weights()->Get(0))->shape()->Get(0) >= 2;
    }
  }
  return false;
}

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
  e->scores_ = plan.IoBuffer(fb::IoRole::Scores) != nullptr;
  e->segment_types_ = HasSecondSegment(model, *model.FindPlan("encode"));
  const fb::IoRole output = e->scores_ ? fb::IoRole::Scores : fb::IoRole::Embeddings;
  const fb::Buffer* embeddings = plan.IoBuffer(output);
  KES_CHECK_OR_RETURN(plan.token_input() != nullptr && plan.Io(fb::IoRole::Positions) != nullptr &&
                          sequences != nullptr && embeddings != nullptr,
                      "plan 'encode': expected token-ids, positions and sequence-table inputs "
                      "and an embeddings or scores output");
  e->tokens_ = plan.token_input();
  e->positions_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::Positions));
  e->token_types_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::TokenTypes));
  e->sequences_ = reinterpret_cast<int32_t*>(plan.Io(fb::IoRole::Sequences));
  e->embeddings_ = reinterpret_cast<const float*>(plan.Io(output));
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

Status Encoder::Encode(const int32_t* const* ids, const size_t* lengths, size_t n, float* out,
                       const size_t* second_starts) {
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
    KES_CHECK_OR_RETURN(second_starts == nullptr || second_starts[i] <= lengths[i],
                        "sequence " + Num(i) + "'s second segment starts at " +
                            Num(second_starts[i]) + ", past its " + Num(lengths[i]) + " tokens");
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
    RunStep(ids, lengths, second_starts, first, count, out);
    first += count;
    if (progress_ != nullptr) progress_(progress_context_, first, n);
  }
  return OkStatus();
}

void Encoder::RunStep(const int32_t* const* ids, const size_t* lengths, const size_t* second_starts,
                      size_t first, size_t count, float* out) {
  size_t start = 0;
  for (size_t s = 0; s < count; ++s) {
    const size_t len = lengths[first + s];
    std::memcpy(tokens_ + start, ids[first + s], len * sizeof(int32_t));
    for (size_t t = 0; t < len; ++t) positions_[start + t] = static_cast<int32_t>(t);
    if (token_types_ != nullptr) {
      // Segment types exist only where the table has a row for type 1 (BERT's two; RoBERTa's
      // single row makes every token type 0).
      const size_t second =
          second_starts != nullptr && segment_types_ ? second_starts[first + s] : len;
      std::fill(token_types_ + start, token_types_ + start + second, 0);
      std::fill(token_types_ + start + second, token_types_ + start + len, 1);
    }
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

namespace {

// How many tokens of each side a pair keeps, as Hugging Face's "longest_first" truncation does:
// nothing is cut when both fit; else the shorter side keeps all of itself when that leaves the
// longer at least as much, and otherwise each keeps half (the longer one the odd token).
void PairLengths(size_t a, size_t b, size_t room, size_t* keep_a, size_t* keep_b) {
  if (a + b <= room) {
    *keep_a = a, *keep_b = b;
    return;
  }
  const bool swap = a > b;
  size_t shorter = swap ? b : a;
  size_t longer = shorter > room ? shorter : std::max(shorter, room - shorter);
  if (shorter + longer > room) shorter = room / 2, longer = room / 2 + room % 2;
  *keep_a = swap ? longer : shorter;
  *keep_b = swap ? shorter : longer;
}

}  // namespace

Status Encoder::TokenizePair(std::string_view query, std::string_view document,
                             std::vector<int32_t>* ids, size_t* second_start) const {
  const Tokenizer& tok = model_.tokenizer();
  const TokenizerConfig& config = tok.config();
  KES_CHECK_OR_RETURN(config.bos_id >= 0 && config.eos_id >= 0,
                      "the tokenizer has no start or end token to join a pair with");
  std::vector<int32_t> a, b;
  KES_RETURN_IF_ERROR(tok.Encode(query, /*add_special=*/false, /*parse_special=*/true, &a));
  KES_RETURN_IF_ERROR(tok.Encode(document, /*add_special=*/false, /*parse_special=*/true, &b));
  // RoBERTa closes the first segment with two end tokens, BERT with one.
  const std::string_view arch =
      model_.meta().architecture() ? model_.meta().architecture()->string_view() : "";
  const bool roberta = arch == "xlm-roberta" || arch == "roberta";
  const size_t specials = roberta ? 4 : 3;
  KES_CHECK_OR_RETURN(max_sequence_tokens() > specials, "a pair needs more than " + Num(specials) +
                                                            " tokens; the model takes " +
                                                            Num(max_sequence_tokens()));
  size_t keep_a = 0, keep_b = 0;
  PairLengths(a.size(), b.size(), max_sequence_tokens() - specials, &keep_a, &keep_b);
  ids->clear();
  ids->push_back(config.bos_id);
  ids->insert(ids->end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(keep_a));
  ids->push_back(config.eos_id);
  if (roberta) ids->push_back(config.eos_id);
  *second_start = ids->size();
  ids->insert(ids->end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(keep_b));
  ids->push_back(config.eos_id);
  return OkStatus();
}

}  // namespace kestrel
