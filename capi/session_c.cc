// The C API's session lifecycle: its parameters, the arena it needs, creating it on the
// caller's arena or one allocated here, and the calls that read or reset its state.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "capi/handle_arena.h"
#include "kestrel/kestrel.h"
#include "runtime/cpu_count.h"
#include "runtime/executor.h"
#include "runtime/format.h"
#include "runtime/memory_plan.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

static_assert(offsetof(kes_session_params, reserved0) + sizeof(int32_t) ==
                  sizeof(kes_session_params),
              "kes_session_params must not end in padding (c_call.h ReadParams)");

namespace {

// Refuses a model that does not generate text, with what to use instead.
CallStatus CheckCanGenerate(const kestrel::Model& model) {
  if (model.has_audio_encoder()) {
    return WrongModel(model, "a speech model", "sessions generate text from text decoders only");
  }
  if (model.is_encoder()) {
    return WrongModel(model, "an encoder model", "it embeds texts and generates nothing");
  }
  return Ok();
}

// The runtime's session options for `in`, and the arena bytes the memory they plan needs.
CallStatus ResolveSession(const kes_model* model, const kes_session_params* in,
                          kestrel::SessionOptions* options, size_t* need) {
  if (model == nullptr) return NullArgument("model");
  KES_C_RETURN_IF_ERROR(CheckCanGenerate(*model->model));
  kes_session_params p;
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_session_default_params(), "kes_session_params", &p));
  if (p.reserved0 != 0) return Error(KES_INVALID_ARGUMENT, "kes_session_params.reserved0 != 0");
  switch (p.kv_type) {
    case KES_KV_F16: options->kv.type = kestrel::ops::KvType::kF16; break;
    case KES_KV_F32: options->kv.type = kestrel::ops::KvType::kF32; break;
    case KES_KV_INT8: options->kv.type = kestrel::ops::KvType::kInt8; break;
    default:
      return Error(KES_INVALID_ARGUMENT,
                   "kes_session_params.kv_type: expected KES_KV_F16, "
                   "KES_KV_F32 or KES_KV_INT8, found " +
                       std::to_string(p.kv_type));
  }
  const size_t trained = model->model->hparams().context_length();
  options->context_length =
      p.context_length == 0 ? trained : std::min<size_t>(p.context_length, trained);
  // The sinks must leave room for the recent tokens (as `kestrel run --sinks` checks).
  if (p.kv_sinks >= options->context_length) {
    return Error(KES_INVALID_ARGUMENT,
                 "kes_session_params.kv_sinks: expected fewer than the "
                 "context of " +
                     std::to_string(options->context_length) + " tokens, found " +
                     std::to_string(p.kv_sinks));
  }
  options->kv.sinks = p.kv_sinks;
  options->n_threads = p.n_threads == 0 ? kestrel::PhysicalCores() : p.n_threads;
  // A KV type the model cannot have (int8 with heads not a multiple of 32) fails here.
  kestrel::MemoryPlan plan;
  KES_C_RETURN_IF_ERROR(
      FromStatus(KES_INVALID_ARGUMENT,
                 kestrel::PlanMemory(*model->model, options->context_length, &plan, options->kv)));
  *need = plan.arena_bytes;
  return Ok();
}

}  // namespace

extern "C" {

kes_session_params kes_session_default_params(void) {
  const kestrel::SessionOptions runtime_defaults;
  kes_session_params p = kestrel::capi::ZeroedStruct<kes_session_params>();
  p.context_length = runtime_defaults.context_length;
  p.n_threads = 0;
  p.kv_sinks = runtime_defaults.kv.sinks;
  p.kv_type = KES_KV_F16;
  return p;
}

kes_status kes_session_arena_size(const kes_model* model, const kes_session_params* params,
                                  size_t* bytes) {
  return kestrel::capi::ArenaSize(model, params, bytes, ResolveSession);
}

kes_status kes_session_create(const kes_model* model, const kes_session_params* params, void* arena,
                              size_t arena_bytes, kes_session** session) {
  return kestrel::capi::CreateHandle(model, "session", session, [&](kes_session* handle) {
    KES_C_RETURN_IF_ERROR(kestrel::capi::CreateOnArena("session", ResolveSession, params, arena,
                                                       arena_bytes, kestrel::SessionOptions(),
                                                       handle, &handle->session));
    handle->prefill_chunk = model->model->FindPlan("prefill")->max_tokens();
    return Ok();
  });
}

void kes_session_destroy(kes_session* session) { delete session; }

const char* kes_session_last_error(const kes_session* session) {
  return session == nullptr ? "" : session->error.c_str();
}

kes_status kes_session_position(const kes_session* session, size_t* position) {
  if (session == nullptr) return kestrel::capi::NullHandle("session");
  return Guard(session, nullptr, [&]() -> CallStatus {
    if (position == nullptr) return NullArgument("position");
    *position = session->session->position() + (session->pending >= 0 ? 1 : 0);
    return Ok();
  });
}

kes_status kes_session_reset(kes_session* session) {
  if (session == nullptr) return kestrel::capi::NullHandle("session");
  session->session->Reset();
  session->pending = -1;
  session->sampler_ready = false;
  session->abort.store(false);
  session->stop.store(false);
  return KES_OK;
}

kes_status kes_session_abort(kes_session* session) {
  if (session == nullptr) return kestrel::capi::NullHandle("session");
  // abort first: whoever sees `stop` then finds why.
  session->abort.store(true);
  session->stop.store(true);
  return KES_OK;
}

}  // extern "C"
