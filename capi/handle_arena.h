// The arena a session or an encoder runs on: the caller's, checked, or one allocated here; and
// the runtime object made on it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "capi/c_call.h"
#include "kestrel/kestrel.h"
#include "runtime/format.h"

namespace kestrel::capi {

struct FreeArena {
  void operator()(void* p) const { std::free(p); }
};
// An arena allocated here, for a handle whose caller gave none.
using OwnedArena = std::unique_ptr<void, FreeArena>;

// The caller's *arena of *arena_bytes checked against the `need` bytes the handle plans
// (KES_ALIGNMENT-aligned, at least `need`); or, when *arena is NULL, one allocated into *owned
// and *arena, *arena_bytes set to it. `handle` names the handle in messages ("session":
// kes_session_arena_size, "the session's arena").
inline CallStatus TakeArena(const char* handle, size_t need, void** arena, size_t* arena_bytes,
                            OwnedArena* owned) {
  if (*arena != nullptr) {
    if (reinterpret_cast<uintptr_t>(*arena) % KES_ALIGNMENT != 0) {
      return Error(KES_INVALID_ARGUMENT,
                   "arena: expected a " + std::to_string(KES_ALIGNMENT) + "-byte aligned buffer");
    }
    if (*arena_bytes < need) {
      return Error(KES_INVALID_ARGUMENT, "arena: expected at least " + std::to_string(need) +
                                             " bytes (kes_" + handle + "_arena_size), found " +
                                             std::to_string(*arena_bytes));
    }
    return Ok();
  }
  // Allocated here rather than by the runtime, so that a failure is KES_OUT_OF_MEMORY.
  const size_t bytes = AlignUp(need, KES_ALIGNMENT);
  owned->reset(std::aligned_alloc(KES_ALIGNMENT, bytes));
  if (*owned == nullptr) {
    return Error(KES_OUT_OF_MEMORY, std::string("cannot allocate the ") + handle + "'s " +
                                        std::to_string(bytes) + "-byte arena");
  }
  *arena = owned->get();
  *arena_bytes = bytes;
  return Ok();
}

// How a handle that runs on an arena reads the caller's parameters: into the runtime's options,
// with the arena bytes they plan (*need). Its *_arena_size and *_create both read them so.
template <typename Params, typename Options>
using ResolveFn = CallStatus (*)(const kes_model* model, const Params* params, Options* options,
                                 size_t* need);

// kes_session_arena_size and kes_encoder_arena_size: what `resolve` plans for `params`.
template <typename Params, typename Options>
kes_status ArenaSize(const kes_model* model, const Params* params, size_t* bytes,
                     ResolveFn<Params, Options> resolve) noexcept {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (bytes == nullptr) return NullArgument("bytes");
    Options options;
    size_t need = 0;
    KES_C_RETURN_IF_ERROR(resolve(model, params, &options, &need));
    *bytes = need;
    return Ok();
  });
}

// The runtime object of a handle that runs on an arena (a session's, an encoder's): `options`
// (defaults, or what the handle sets itself) completed from `params` by `resolve`, the threads
// checked, the arena taken as TakeArena takes it (into handle->owned_arena when the caller gave
// none), then Runtime::Create(*handle->model->model, options, out) on it. The options are
// checked by then, so what fails in Create is the model's plans: KES_BAD_MODEL.
template <typename Params, typename Options, typename Handle, typename Runtime>
CallStatus CreateOnArena(const char* name, ResolveFn<Params, Options> resolve, const Params* params,
                         void* arena, size_t arena_bytes, Options options, Handle* handle,
                         std::unique_ptr<Runtime>* out) {
  size_t need = 0;
  KES_C_RETURN_IF_ERROR(resolve(handle->model, params, &options, &need));
  KES_C_RETURN_IF_ERROR(CheckCanRunThreads(options.n_threads));
  KES_C_RETURN_IF_ERROR(TakeArena(name, need, &arena, &arena_bytes, &handle->owned_arena));
  options.arena = arena;
  options.arena_bytes = arena_bytes;
  return FromStatus(KES_BAD_MODEL, Runtime::Create(*handle->model->model, options, out));
}

}  // namespace kestrel::capi
