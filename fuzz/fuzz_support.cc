#include "fuzz/fuzz_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/audio_encoder.h"
#include "runtime/encoder.h"
#include "runtime/memory_plan.h"
#include "runtime/session.h"
#include "runtime/transcriber.h"

namespace kestrel::fuzz {

AlignedCopy::AlignedCopy(const uint8_t* data, size_t size) : size_(size) {
  const size_t allocated = std::max<size_t>(64, (size + 63) / 64 * 64);
  bytes_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, allocated)));
  if (!bytes_) Die("out of memory copying the input");
  if (size > 0) std::memcpy(bytes_.get(), data, size);
}

void AlignedCopy::Free::operator()(uint8_t* p) const { std::free(p); }

void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz harness: %s\n", what.c_str());
  std::abort();
}

namespace {

// Two threads for one variant in eight: handing steps to a second thread costs far more than a
// tiny model's step, and the threaded paths are the ThreadSanitizer tests' job.
size_t ThreadsFor(uint32_t variant) { return variant % 8 == 1 ? 2 : 1; }

void RunTokenizer(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  if (!tokenizer.Encode("Hello, world! \xC3\xA9t\xC3\xA9 <eos> 123", true, true, &ids).ok()) return;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size()) {
      Die("the tokenizer returned id " + std::to_string(id) + " outside the vocabulary of " +
          std::to_string(tokenizer.vocab_size()));
    }
  }
  (void)tokenizer.Decode(ids);
}

void RunDecoder(const Model& model, uint32_t variant) {
  SessionOptions options;
  options.context_length = kContextLength;
  options.n_threads = ThreadsFor(variant);
  static constexpr ops::KvType kTypes[] = {ops::KvType::kF32, ops::KvType::kF16,
                                           ops::KvType::kInt8};
  options.kv.type = kTypes[(variant / 8) % 3];
  MemoryPlan plan;
  const size_t context = std::min<size_t>(options.context_length, model.hparams().context_length());
  if (!PlanMemory(model, context, &plan, options.kv).ok() || plan.arena_bytes > kMaxArenaBytes) {
    return;
  }
  std::unique_ptr<Session> session;
  if (!Session::Create(model, options, &session).ok()) return;
  const size_t vocab = model.vocab_size();
  const int32_t prompt[5] = {0, static_cast<int32_t>(1 % vocab), static_cast<int32_t>(2 % vocab),
                             static_cast<int32_t>(3 % vocab),
                             static_cast<int32_t>(variant % vocab)};
  if (!session->Prefill(prompt, 5).ok()) return;
  const float* logits = session->logits();
  const int32_t next = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  if (!session->Decode(next).ok()) return;
  (void)session->Decode(0);
}

// The text or audio encoder (EncoderT) of `model` with the variant's threads; null when its arena
// passes the fuzzers' bound or Create refuses the model.
template <class EncoderT>
std::unique_ptr<EncoderT> CreateEncoder(const Model& model, uint32_t variant) {
  if (PlanEncoderMemory(model).arena_bytes > kMaxArenaBytes) return nullptr;
  EncoderOptions options;
  options.n_threads = ThreadsFor(variant);
  std::unique_ptr<EncoderT> encoder;
  if (!EncoderT::Create(model, options, &encoder).ok()) return nullptr;
  return encoder;
}

void RunEncoder(const Model& model, uint32_t variant) {
  const std::unique_ptr<Encoder> encoder = CreateEncoder<Encoder>(model, variant);
  if (!encoder) return;
  std::vector<int32_t> a, b;
  if (!encoder->Tokenize("a short text", &a).ok() || !encoder->Tokenize("x", &b).ok()) return;
  const int32_t* ids[2] = {a.data(), b.data()};
  const size_t lengths[2] = {a.size(), b.size()};
  std::vector<float> out(2 * encoder->embedding_dim());
  (void)encoder->Encode(ids, lengths, 2, out.data());
}

void RunAudioEncoder(const Model& model, uint32_t variant) {
  const std::unique_ptr<AudioEncoder> encoder = CreateEncoder<AudioEncoder>(model, variant);
  if (!encoder) return;
  // Its buffers lie in the bounded arena, so these do too.
  std::vector<float> mel(encoder->n_mels() * encoder->n_frames());
  for (size_t i = 0; i < mel.size(); ++i) mel[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  std::vector<float> hidden(encoder->n_positions() * encoder->d_model());
  encoder->Encode(mel.data(), hidden.data());
  if (!model.has_decoder()) return;
  // The decoder over those states: a prompt of two tokens and one step.
  SessionOptions options_session;
  options_session.n_threads = ThreadsFor(variant);
  options_session.context_length = kContextLength;
  MemoryPlan plan;
  const size_t context =
      std::min<size_t>(options_session.context_length, model.hparams().context_length());
  if (!PlanMemory(model, context, &plan).ok() || plan.arena_bytes > kMaxArenaBytes) return;
  std::unique_ptr<Session> session;
  if (!Session::Create(model, options_session, &session).ok()) return;
  if (!session->SetEncoderStates(hidden.data(), encoder->n_positions()).ok()) return;
  const int32_t prompt[2] = {0, static_cast<int32_t>(variant % model.vocab_size())};
  if (!session->Prefill(prompt, 2).ok()) return;
  (void)session->Decode(0);

  // The whole transcription (when the vocabulary has Whisper's special tokens): a window and a
  // half of features, so the seek moves past a window; timestamps on odd variants.
  if (!PlanMemory(model, model.hparams().context_length(), &plan).ok() ||
      plan.arena_bytes > kMaxArenaBytes) {
    return;
  }
  TranscriberOptions transcriber_options;
  transcriber_options.n_threads = ThreadsFor(variant);
  transcriber_options.timestamps = variant % 2 == 1;
  transcriber_options.condition_on_previous_text = variant % 4 >= 2;
  std::unique_ptr<Transcriber> transcriber;
  if (!Transcriber::Create(model, transcriber_options, &transcriber).ok()) return;
  const size_t frames = encoder->n_frames() * 3 / 2;
  std::vector<float> recording(encoder->n_mels() * frames);
  for (size_t i = 0; i < recording.size(); ++i) recording[i] = mel[i % mel.size()];
  (void)transcriber->Transcribe(
      recording.data(), frames, [](void*, const TranscriptSegment&) {}, nullptr);
}

}  // namespace

void RunModel(const Model& model, uint32_t variant) {
  RunTokenizer(model.tokenizer());
  if (model.is_encoder()) {
    RunEncoder(model, variant);
  } else if (model.has_audio_encoder()) {
    RunAudioEncoder(model, variant);
  } else {
    RunDecoder(model, variant);
  }
}

ConvertOptions FloatWeightsChoice(uint8_t choice) {
  ConvertOptions options;
  switch (choice % 5) {
    case 0: options.keep_types = true; break;
    case 1: options.weight_dtype = fb::DType::F32; break;
    case 2: options.weight_dtype = fb::DType::F16; break;
    case 3: options.weight_dtype = fb::DType::Q8_0; break;
    case 4: options.weight_dtype = fb::DType::Q4_0; break;
  }
  return options;
}

void CheckConvertedModel(KesModel* model, uint32_t variant) {
  if (!PlanArena(&model->meta).ok()) return;
  std::vector<uint8_t> bytes;
  Status s = KesBytes(model, &bytes);
  if (!s.ok()) Die("the converter's model does not serialize: " + s.message());
  AlignedCopy copy(bytes.data(), bytes.size());
  std::unique_ptr<Model> loaded;
  s = Model::FromMemory(copy.data(), copy.size(), &loaded);
  if (!s.ok()) Die("the converter wrote a model the runtime refuses: " + s.message());
  RunModel(*loaded, variant);
}

}  // namespace kestrel::fuzz
