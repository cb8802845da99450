// A loaded and verified .kes model.
//
// Opening checks the whole file before anything is dereferenced: the preamble, the FlatBuffer
// (verifier), every tensor's dtype, shape, offset and size against the weight blob, the
// tokenizer, the KV layout and every op of every plan (ids, argument counts, shapes, dtypes).
// After Open succeeds the executor trusts the model.
//
// Ownership: a Model opened from a path owns its mapping. A Model made FromMemory borrows the
// caller's buffer, which must outlive the Model and every Session made from it.
//
// Threads: nothing in a Model changes after Open, so any number of Sessions and Encoders on any
// threads may share one at once, each giving the bits it gives alone
// (tests/session_concurrency_test.cc). A Session or an Encoder itself is used by one thread at a
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kestrel_generated.h"
#include "runtime/mapped_file.h"
#include "runtime/status.h"
#include "runtime/tokenizer.h"

namespace kestrel {

struct ModelOpenOptions {
  // Reads every weight and checks the checksum kestrel-convert recorded (VerifyWeights): a
  // damaged file then fails to open instead of giving wrong output. Costs one pass over the
  // weights at memory speed. A file without a checksum (converted before they were recorded)
  // fails too, since it cannot be verified.
  bool verify_weights = false;
};

class Model {
 public:
  // Before mapping the file (which reads all of it), its first bytes are checked: a file that is
  // not a .kes (a GGUF above all) or is from another format version fails at once.
  static Status Open(const std::string& path, const ModelOpenOptions& options,
                     std::unique_ptr<Model>* out);
  // Default options, except that verify_weights is on when the environment variable
  // KESTREL_VERIFY_WEIGHTS is 1: how a user of the kestrel CLI (or of a program built on this
  // library) asks every command to verify the model it opens.
  static Status Open(const std::string& path, std::unique_ptr<Model>* out);
  // `data` must be 64-byte aligned (so weights are aligned) and outlive the Model.
  static Status FromMemory(const uint8_t* data, size_t size, std::unique_ptr<Model>* out);
  ~Model();

  const fb::Model& meta() const { return *meta_; }
  const fb::HyperParams& hparams() const { return *meta_->hparams(); }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // nullptr when the model has no plan of that name. A decoder always has "prefill" and
  // "decode", an encoder "encode".
  const fb::Plan* FindPlan(std::string_view name) const;
  // An encoder turns batches of texts into embeddings (runtime/encoder.h) and has no KV cache;
  // a decoder generates (runtime/session.h).
  bool is_encoder() const { return is_encoder_; }
  // A speech model's audio encoder ("encode_audio" plan: Whisper), with or without its decoder
  // (has_decoder: "prefill" and "decode" plans, cross-attention fed by "cross_kv").
  bool has_audio_encoder() const { return has_audio_encoder_; }
  bool has_decoder() const { return has_decoder_; }
  const uint8_t* TensorData(uint32_t tensor_id) const;
  size_t vocab_size() const { return vocab_size_; }
  // The largest step any plan takes: sliding-window KV rings hold window + this many slots.
  size_t max_step_tokens() const { return max_step_tokens_; }

  uint64_t weights_bytes() const { return meta_->weights_size(); }
  // Whether the file records a checksum of its weights (files converted before they were
  // recorded have none).
  bool has_weights_checksum() const { return meta_->weights_xxh3().has_value(); }
  // Hashes the weight blob and compares it with the recorded checksum: an error saying they
  // differ (the file is damaged), or that there is no checksum to compare with.
  Status VerifyWeights() const;
  uint64_t parameter_count() const;
  uint64_t file_bytes() const { return size_; }

 private:
  Model() = default;
  Status Verify();

  std::unique_ptr<MappedFile> mapping_;  // null when the caller owns the bytes
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  const fb::Model* meta_ = nullptr;
  const uint8_t* weights_ = nullptr;
  size_t vocab_size_ = 0;
  size_t max_step_tokens_ = 0;
  bool is_encoder_ = false;
  bool has_audio_encoder_ = false;
  bool has_decoder_ = false;
  Tokenizer tokenizer_;
};

}  // namespace kestrel
