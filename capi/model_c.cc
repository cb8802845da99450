// The C API's model calls: opening (from a path or the caller's memory), what a program needs
// to know about a model, and tokens (tokenize, detokenize, end-of-generation).
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

// Each struct ends on a field, never in padding: a later field appended to it must not sit in
// bytes an older program counted in its struct_size (c_call.h ReadParams).
static_assert(offsetof(kes_model_params, reserved0) + sizeof(int32_t) == sizeof(kes_model_params),
              "kes_model_params must not end in padding");
static_assert(offsetof(kes_model_info, weights_bytes) + sizeof(uint64_t) == sizeof(kes_model_info),
              "kes_model_info must not end in padding");

namespace {

// verify_weights -1 follows KESTREL_VERIFY_WEIGHTS as kestrel::Model::Open(path, out) reads it.
bool WantsWeightsVerified(int32_t verify_weights) {
  if (verify_weights >= 0) return verify_weights != 0;
  const char* env = std::getenv("KESTREL_VERIFY_WEIGHTS");
  return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
}

CallStatus CheckModelParams(const kes_model_params* in, kes_model_params* out) {
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_model_default_params(), "kes_model_params", out));
  if (out->verify_weights < -1 || out->verify_weights > 1) {
    return Error(KES_INVALID_ARGUMENT,
                 "kes_model_params.verify_weights: expected -1, 0 or 1, "
                 "found " +
                     std::to_string(out->verify_weights));
  }
  if (out->reserved0 != 0) return Error(KES_INVALID_ARGUMENT, "kes_model_params.reserved0 != 0");
  return Ok();
}

CallStatus CheckToken(const kes_model* model, int32_t token, const char* what) {
  const size_t vocab = model->model->vocab_size();
  if (token < 0 || static_cast<size_t>(token) >= vocab) {
    return Error(KES_INVALID_ARGUMENT, std::string(what) + ": expected a token id below the " +
                                           std::to_string(vocab) + " of the vocabulary, found " +
                                           std::to_string(token));
  }
  return Ok();
}

}  // namespace

extern "C" {

kes_model_params kes_model_default_params(void) {
  kes_model_params p = kestrel::capi::ZeroedStruct<kes_model_params>();
  p.verify_weights = -1;
  return p;
}

kes_status kes_model_open(const char* path, const kes_model_params* params, kes_model** model) {
  return Guard(nullptr, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    *model = nullptr;
    if (path == nullptr) return NullArgument("path");
    kes_model_params p;
    KES_C_RETURN_IF_ERROR(CheckModelParams(params, &p));
    auto handle = std::make_unique<kes_model>();
    kestrel::Status s;
    if (p.verify_weights < 0) {
      s = kestrel::Model::Open(path, &handle->model);
    } else {
      kestrel::ModelOpenOptions options;
      options.verify_weights = p.verify_weights != 0;
      s = kestrel::Model::Open(path, options, &handle->model);
    }
    if (!s.ok()) {
      return Error(CanOpenRegularFile(path) ? KES_BAD_MODEL : KES_IO_ERROR, s.message());
    }
    *model = handle.release();
    return Ok();
  });
}

kes_status kes_model_open_memory(const void* data, size_t size, const kes_model_params* params,
                                 kes_model** model) {
  return Guard(nullptr, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    *model = nullptr;
    if (data == nullptr) return NullArgument("data");
    if (reinterpret_cast<uintptr_t>(data) % KES_ALIGNMENT != 0) {
      return Error(KES_INVALID_ARGUMENT, "data: expected a " + std::to_string(KES_ALIGNMENT) +
                                             "-byte aligned buffer (the weights are used in "
                                             "place)");
    }
    kes_model_params p;
    KES_C_RETURN_IF_ERROR(CheckModelParams(params, &p));
    auto handle = std::make_unique<kes_model>();
    kestrel::Status s =
        kestrel::Model::FromMemory(static_cast<const uint8_t*>(data), size, &handle->model);
    if (s.ok() && WantsWeightsVerified(p.verify_weights)) {
      s = handle->model->VerifyWeights().WithContext("model buffer");
    }
    if (!s.ok()) return Error(KES_BAD_MODEL, s.message());
    *model = handle.release();
    return Ok();
  });
}

void kes_model_close(kes_model* model) { delete model; }

const char* kes_model_last_error(const kes_model* model) {
  return kestrel::capi::ThreadErrorFor(model);
}

kes_status kes_model_get_info(const kes_model* model, kes_model_info* info) {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    const kestrel::Model& m = *model->model;
    return kestrel::capi::FillInfo(info, "kes_model_info", [&](kes_model_info* full) {
      const kestrel::TokenizerConfig& config = m.tokenizer().config();
      full->n_vocab = m.vocab_size();
      full->context_length = m.hparams().context_length();
      full->bos_id = config.bos_id;
      full->eos_id = config.eos_id;
      full->eot_id = config.eot_id;
      // As `kestrel run` tells a text generator from an embedding or a speech model.
      full->can_generate = !m.is_encoder() && !m.has_audio_encoder();
      full->weights_bytes = m.weights_bytes();
    });
  });
}

kes_status kes_token_is_end(const kes_model* model, int32_t token, int* is_end) {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    if (is_end == nullptr) return NullArgument("is_end");
    KES_C_RETURN_IF_ERROR(CheckToken(model, token, "token"));
    *is_end = model->model->tokenizer().IsEndOfGeneration(token) ? 1 : 0;
    return Ok();
  });
}

kes_status kes_tokenize(const kes_model* model, const char* text, size_t len, uint32_t flags,
                        int32_t* tokens, size_t capacity, size_t* n_tokens) {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    if (n_tokens == nullptr) return NullArgument("n_tokens");
    if (text == nullptr && len > 0) return NullArgument("text");
    if (tokens == nullptr && capacity > 0) return NullArgument("tokens");
    const uint32_t known = KES_TOKENIZE_ADD_SPECIAL | KES_TOKENIZE_PARSE_SPECIAL;
    if ((flags & ~known) != 0) {
      return Error(KES_INVALID_ARGUMENT, "flags: unknown bits " + std::to_string(flags & ~known));
    }
    std::vector<int32_t> ids;
    const kestrel::Status s = model->model->tokenizer().Encode(
        std::string_view(text, len), (flags & KES_TOKENIZE_ADD_SPECIAL) != 0,
        (flags & KES_TOKENIZE_PARSE_SPECIAL) != 0, &ids);
    // Encode fails only for a vocabulary that cannot spell a character: the model's fault.
    if (!s.ok()) return Error(KES_BAD_MODEL, s.message());
    return CopyOut(ids.data(), ids.size(), tokens, capacity, n_tokens, "tokens");
  });
}

kes_status kes_detokenize(const kes_model* model, const int32_t* tokens, size_t n, char* buf,
                          size_t capacity, size_t* n_bytes) {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (model == nullptr) return NullArgument("model");
    if (n_bytes == nullptr) return NullArgument("n_bytes");
    if (tokens == nullptr && n > 0) return NullArgument("tokens");
    if (buf == nullptr && capacity > 0) return NullArgument("buf");
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "tokens[" + std::to_string(i) + "]";
      KES_C_RETURN_IF_ERROR(CheckToken(model, tokens[i], name.c_str()));
    }
    const std::vector<int32_t> ids(tokens, tokens + n);
    const std::string text = model->model->tokenizer().Decode(ids);
    return CopyOut(text.data(), text.size(), buf, capacity, n_bytes, "buf");
  });
}

}  // extern "C"
