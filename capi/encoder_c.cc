// The C API's encoder: embeddings of texts or of token sequences with an encoder model, on the
// caller's arena or one allocated here. kes_embed tokenizes as `kestrel embed` does and packs
// the texts into the encoder's steps exactly as Encoder::Encode packs the CLI's batch, so that
// every step, and so every value, is the CLI's.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "capi/handle_arena.h"
#include "kestrel/kestrel.h"
#include "runtime/cpu_count.h"
#include "runtime/executor.h"
#include "runtime/format.h"
#include "runtime/memory_plan.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

static_assert(offsetof(kes_encoder_params, n_threads) + sizeof(size_t) ==
                  sizeof(kes_encoder_params),
              "kes_encoder_params must not end in padding (c_call.h ReadParams)");
static_assert(offsetof(kes_encoder_info, is_reranker) + sizeof(size_t) == sizeof(kes_encoder_info),
              "kes_encoder_info must not end in padding");

namespace {

// Refuses a model that embeds nothing, with what to use instead.
CallStatus CheckIsEncoder(const kestrel::Model& model) {
  if (model.is_encoder()) return Ok();
  if (model.has_audio_encoder()) {
    return WrongModel(model, "a speech model",
                      "transcribe with a kes_transcriber; encoders embed texts with encoder "
                      "models (BERT)");
  }
  return WrongModel(model, "a text decoder",
                    "generate with a kes_session; encoders embed texts with encoder models (BERT)");
}

CallStatus ResolveEncoder(const kes_model* model, const kes_encoder_params* in,
                          kestrel::EncoderOptions* options, size_t* need) {
  if (model == nullptr) return NullArgument("model");
  KES_C_RETURN_IF_ERROR(CheckIsEncoder(*model->model));
  kes_encoder_params p;
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_encoder_default_params(), "kes_encoder_params", &p));
  options->n_threads = p.n_threads == 0 ? kestrel::PhysicalCores() : p.n_threads;
  *need = kestrel::PlanEncoderMemory(*model->model).arena_bytes;
  return Ok();
}

// kes_embed's and kes_embed_tokens' arguments: n inputs (texts or id sequences, `inputs_name`)
// with their lengths, embedded into out[n * dim] by an encoder that embeds.
CallStatus CheckEmbedArguments(const kes_encoder* e, const void* inputs, const char* inputs_name,
                               const size_t* lengths, size_t n, const float* out, size_t dim) {
  if (inputs == nullptr && n > 0) return NullArgument(inputs_name);
  if (lengths == nullptr && n > 0) return NullArgument("lengths");
  if (e->encoder->scores()) {
    return Error(KES_UNSUPPORTED,
                 "this is a reranker (a cross-encoder: it scores a query and a document "
                 "together): score pairs with kes_rerank");
  }
  if (out == nullptr && n > 0) return NullArgument("out");
  const size_t want = e->encoder->embedding_dim();
  if (dim != want) {
    return Error(KES_INVALID_ARGUMENT, "dim: expected the model's " + std::to_string(want) +
                                           " floats per embedding, found " + std::to_string(dim));
  }
  return Ok();
}

// Encode's status as the call's: KES_ABORTED when it stopped at kes_encoder_abort's request,
// which this answer clears; otherwise `code_if_failed` for a failure.
CallStatus EncodeStatus(kes_encoder* e, kes_status code_if_failed, const kestrel::Status& s) {
  if (s.ok() || !e->encoder->stopped()) return FromStatus(code_if_failed, s);
  e->abort.store(false);
  return Error(KES_ABORTED, "aborted by kes_encoder_abort");
}

// Embeds the texts tokenized into the step buffers so far (one step of the encoder) into their
// rows of out, starting at row `first`.
CallStatus Flush(kes_encoder* e, size_t first, size_t count, float* out) {
  if (count == 0) return Ok();
  return EncodeStatus(e, KES_INTERNAL,
                      e->encoder->Encode(e->step_seq.data(), e->step_lengths.data(), count,
                                         out + first * e->encoder->embedding_dim()));
}

}  // namespace

extern "C" {

kes_encoder_params kes_encoder_default_params(void) {
  kes_encoder_params p = kestrel::capi::ZeroedStruct<kes_encoder_params>();
  p.n_threads = 0;
  return p;
}

kes_status kes_encoder_arena_size(const kes_model* model, const kes_encoder_params* params,
                                  size_t* bytes) {
  return kestrel::capi::ArenaSize(model, params, bytes, ResolveEncoder);
}

kes_status kes_encoder_create(const kes_model* model, const kes_encoder_params* params, void* arena,
                              size_t arena_bytes, kes_encoder** encoder) {
  return kestrel::capi::CreateHandle(model, "encoder", encoder, [&](kes_encoder* handle) {
    kestrel::EncoderOptions options;
    options.stop = &handle->abort;
    KES_C_RETURN_IF_ERROR(kestrel::capi::CreateOnArena(
        "encoder", ResolveEncoder, params, arena, arena_bytes, options, handle, &handle->encoder));
    const kestrel::Encoder& e = *handle->encoder;
    handle->step_ids.resize(e.max_step_tokens());
    handle->step_seq.resize(e.max_batch());
    handle->step_lengths.resize(e.max_batch());
    // Encoder::Tokenize's ids: at most max_sequence_tokens, or the two special tokens alone.
    handle->text_ids.reserve(e.max_sequence_tokens() + 2);
    return Ok();
  });
}

void kes_encoder_destroy(kes_encoder* encoder) { delete encoder; }

const char* kes_encoder_last_error(const kes_encoder* encoder) {
  return encoder == nullptr ? "" : encoder->error.c_str();
}

kes_status kes_encoder_get_info(const kes_encoder* encoder, kes_encoder_info* info) {
  return kestrel::capi::OnHandle(encoder, "encoder", [&]() -> CallStatus {
    const kestrel::Encoder& e = *encoder->encoder;
    return kestrel::capi::FillInfo(info, "kes_encoder_info", [&](kes_encoder_info* full) {
      full->embedding_dim = e.embedding_dim();
      full->max_tokens = e.max_sequence_tokens();
      full->max_batch = e.max_batch();
      full->is_reranker = e.scores() ? 1 : 0;
    });
  });
}

kes_status kes_encoder_tokenize(const kes_encoder* encoder, const char* text, size_t len,
                                int32_t* ids, size_t capacity, size_t* n_ids) {
  return kestrel::capi::OnHandle(encoder, "encoder", [&]() -> CallStatus {
    if (n_ids == nullptr) return NullArgument("n_ids");
    if (text == nullptr && len > 0) return NullArgument("text");
    if (ids == nullptr && capacity > 0) return NullArgument("ids");
    std::vector<int32_t> tokens;
    KES_C_RETURN_IF_ERROR(FromStatus(
        KES_INVALID_ARGUMENT, encoder->encoder->Tokenize(std::string_view(text, len), &tokens)));
    return kestrel::capi::CopyOut(tokens.data(), tokens.size(), ids, capacity, n_ids, "ids");
  });
}

kes_status kes_embed(kes_encoder* encoder, const char* const* texts, const size_t* lengths,
                     size_t n, float* out, size_t dim) {
  return kestrel::capi::OnHandle(encoder, "encoder", [&]() -> CallStatus {
    KES_C_RETURN_IF_ERROR(CheckEmbedArguments(encoder, texts, "texts", lengths, n, out, dim));
    for (size_t i = 0; i < n; ++i) {
      if (texts[i] == nullptr && lengths[i] > 0) {
        return Error(KES_INVALID_ARGUMENT, "texts[" + std::to_string(i) + "] is NULL");
      }
    }
    kes_encoder& e = *encoder;
    const size_t max_batch = e.encoder->max_batch();
    const size_t max_step_tokens = e.encoder->max_step_tokens();
    const size_t max_tokens = e.encoder->max_sequence_tokens();
    // Steps are filled as Encoder::Encode fills them from the whole batch (`kestrel embed`):
    // texts in order, as many as fit the step's text and token bounds.
    size_t first = 0, count = 0, used = 0;
    for (size_t i = 0; i < n; ++i) {
      const kestrel::Status s =
          e.encoder->Tokenize(std::string_view(texts[i], lengths[i]), &e.text_ids);
      if (!s.ok()) {
        return Error(KES_INVALID_ARGUMENT, "texts[" + std::to_string(i) + "]: " + s.message());
      }
      const size_t len = e.text_ids.size();
      if (len > max_tokens) {
        return Error(KES_BAD_MODEL, "texts[" + std::to_string(i) + "]: " + std::to_string(len) +
                                        " tokens with the special ones, "
                                        "more than the model's " +
                                        std::to_string(max_tokens));
      }
      if (count == max_batch || used + len > max_step_tokens) {
        KES_C_RETURN_IF_ERROR(Flush(&e, first, count, out));
        first += count;
        count = 0;
        used = 0;
      }
      std::memcpy(e.step_ids.data() + used, e.text_ids.data(), len * sizeof(int32_t));
      e.step_seq[count] = e.step_ids.data() + used;
      e.step_lengths[count] = len;
      used += len;
      ++count;
    }
    return Flush(&e, first, count, out);
  });
}

kes_status kes_embed_tokens(kes_encoder* encoder, const int32_t* const* ids, const size_t* lengths,
                            size_t n, float* out, size_t dim) {
  return kestrel::capi::OnHandle(encoder, "encoder", [&]() -> CallStatus {
    KES_C_RETURN_IF_ERROR(CheckEmbedArguments(encoder, ids, "ids", lengths, n, out, dim));
    // Encode checks every sequence and id before it runs anything.
    return EncodeStatus(encoder, KES_INVALID_ARGUMENT,
                        encoder->encoder->Encode(ids, lengths, n, out));
  });
}

kes_status kes_rerank(kes_encoder* encoder, const char* query, size_t query_len,
                      const char* const* docs, const size_t* lengths, size_t n, float* logits) {
  return kestrel::capi::OnHandle(encoder, "encoder", [&]() -> CallStatus {
    kestrel::Encoder& e = *encoder->encoder;
    if (!e.scores() || e.embedding_dim() != 1) {
      return Error(KES_UNSUPPORTED,
                   "this encoder embeds texts (it has no one-label classification head to score "
                   "a pair with): use kes_embed");
    }
    if (query == nullptr && query_len > 0) return NullArgument("query");
    if (docs == nullptr && n > 0) return NullArgument("docs");
    if (lengths == nullptr && n > 0) return NullArgument("lengths");
    if (logits == nullptr && n > 0) return NullArgument("logits");
    std::vector<std::vector<int32_t>> ids(n);
    std::vector<size_t> second_starts(n);
    std::vector<const int32_t*> pointers(n);
    std::vector<size_t> sizes(n);
    for (size_t i = 0; i < n; ++i) {
      if (docs[i] == nullptr && lengths[i] > 0) {
        return Error(KES_INVALID_ARGUMENT, "docs[" + std::to_string(i) + "] is NULL");
      }
      const kestrel::Status s =
          e.TokenizePair(std::string_view(query, query_len), std::string_view(docs[i], lengths[i]),
                         &ids[i], &second_starts[i]);
      if (!s.ok()) {
        return Error(KES_INVALID_ARGUMENT, "docs[" + std::to_string(i) + "]: " + s.message());
      }
      pointers[i] = ids[i].data();
      sizes[i] = ids[i].size();
    }
    return EncodeStatus(encoder, KES_INTERNAL,
                        e.Encode(pointers.data(), sizes.data(), n, logits, second_starts.data()));
  });
}

kes_status kes_encoder_abort(kes_encoder* encoder) {
  if (encoder == nullptr) return kestrel::capi::NullHandle("encoder");
  encoder->abort.store(true);
  return KES_OK;
}

}  // extern "C"
