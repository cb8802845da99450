// An Encoder turns batches of token sequences into embeddings with an encoder model's "encode"
// plan (BERT and friends: bidirectional attention, pooled output), or, for a cross-encoder
// (a reranker: the plan's output is Scores), into one row of scores per sequence, each sequence
// a query and a document joined by TokenizePair. Its arena holds the plan's
// activations only, sized by the converter for one step of at most max_batch() sequences and
// max_step_tokens() tokens; Encode splits larger batches into such steps and allocates nothing.
//
// A step lays its sequences end to end without padding, so no work is spent on padded tokens;
// the plan's Sequences input tells attention and pooling where each one starts.
//
// Lifetime: the Model and a caller-provided arena must outlive the Encoder.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/arena.h"
#include "runtime/executor.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

struct EncoderOptions {
  size_t n_threads = 1;
  // Optional caller-owned arena, 64-byte aligned, at least PlanEncoderMemory(model).arena_bytes.
  void* arena = nullptr;
  size_t arena_bytes = 0;
  // Matmuls run their GELU and residual adds on each block of output rows as they make it
  // (BoundPlan::Bind); false binds one step per plan op, the same values more slowly.
  bool fuse_epilogues = true;
  // Read before every step of Encode; another thread may set it (the C API's abort). Once
  // true, Encode stops there with an error and stopped() says why.
  const std::atomic<bool>* stop = nullptr;
};

class Encoder {
 public:
  static Status Create(const Model& model, const EncoderOptions& options,
                       std::unique_ptr<Encoder>* out);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // Embeds n sequences: sequence i is ids[i][0..lengths[i]), special tokens included, 1 to
  // max_sequence_tokens() ids below the vocabulary size. out receives n rows of
  // embedding_dim() floats (a cross-encoder's scores). On error nothing is written to out,
  // except when stopped (above): the rows of the steps before the stop are.
  // second_starts: null, or per sequence the index where its second segment starts
  // (TokenizePair's); the tokens from there on get token type 1 where the model has segment
  // types (BERT), all tokens type 0 otherwise.
  Status Encode(const int32_t* const* ids, const size_t* lengths, size_t n, float* out,
                const size_t* second_starts = nullptr);

  // The ids of one text as the checkpoint's pipeline makes them (sentence-transformers): the
  // tokenizer's pieces, cut to max_sequence_tokens() minus the special tokens, between the
  // start and end tokens. Allocates: call it before, not inside, a zero-allocation loop.
  Status Tokenize(std::string_view text, std::vector<int32_t>* ids) const;

  // The ids of a (query, document) pair as Hugging Face's tokenizers join them for a
  // cross-encoder: BERT "[CLS] q [SEP] d [SEP]", XLM-RoBERTa "<s> q </s> </s> d </s>", the
  // longer side cut first when the pair exceeds max_sequence_tokens() (truncation
  // "longest_first"). *second_start: where the document's segment starts. Allocates.
  Status TokenizePair(std::string_view query, std::string_view document, std::vector<int32_t>* ids,
                      size_t* second_start) const;

  // Whether the model scores sequences (a cross-encoder's Scores output) rather than embedding
  // them.
  bool scores() const { return scores_; }

  // Calls observer before every op of every later step (calibration; runtime/executor.h).
  void SetStepObserver(StepObserver observer, void* context) {
    plan_.SetObserver(observer, context);
  }

  // Calls progress(context, done, n) after every step of a later Encode, done being the
  // sequences embedded so far of its n (a counter on a terminal; null: none).
  using ProgressFn = void (*)(void* context, size_t done, size_t n);
  void SetProgress(ProgressFn progress, void* context) {
    progress_ = progress;
    progress_context_ = context;
  }

  size_t embedding_dim() const { return embedding_dim_; }
  size_t max_sequence_tokens() const { return memory_.context_length; }
  size_t max_batch() const { return max_batch_; }                // sequences per step
  size_t max_step_tokens() const { return plan_.max_tokens(); }  // tokens per step
  size_t n_threads() const { return pool_.size(); }
  size_t n_steps() const { return plan_.n_steps(); }  // bound steps of the encode plan
  bool stopped() const { return stopped_; }  // the last Encode ended at EncoderOptions::stop
  const MemoryPlan& memory() const { return memory_; }
  const Model& model() const { return model_; }

 private:
  Encoder(const Model& model, size_t n_threads) : model_(model), pool_(n_threads) {}
  // Runs one step over sequences [first, first + count), writing their rows of out.
  void RunStep(const int32_t* const* ids, const size_t* lengths, const size_t* second_starts,
               size_t first, size_t count, float* out);

  const Model& model_;
  ThreadPool pool_;
  MemoryPlan memory_;
  Arena arena_;
  BoundPlan plan_;
  int32_t* tokens_ = nullptr;          // [max_step_tokens]
  int32_t* positions_ = nullptr;       // [max_step_tokens]
  int32_t* token_types_ = nullptr;     // [max_step_tokens], or null when the plan has none
  int32_t* sequences_ = nullptr;       // [max_batch, 2]
  const float* embeddings_ = nullptr;  // [max_batch, embedding_dim]: embeddings or scores
  bool scores_ = false;
  bool segment_types_ = false;  // token type 1 exists: a pair's second segment gets it
  size_t max_batch_ = 0;
  size_t embedding_dim_ = 0;
  ProgressFn progress_ = nullptr;
  void* progress_context_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
  bool stopped_ = false;
};

}  // namespace kestrel
