// The C API's memory figures: what `kestrel inspect` prints for a session with given params,
// from the same plan (runtime/memory_plan.h) kes_session_create lays its arena out by.
#include <algorithm>
#include <cstring>
#include <string>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"
#include "runtime/memory_plan.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

namespace {

CallStatus Memory(const kes_model* model, const kes_session_params* params, kes_memory_info* info) {
  if (info == nullptr) return NullArgument("info");
  const size_t size = info->struct_size;
  if (size < sizeof(size_t) || size > sizeof(kes_memory_info)) {
    return Error(KES_INVALID_ARGUMENT, "kes_memory_info.struct_size: expected " +
                                           std::to_string(sizeof(size_t)) + " to " +
                                           std::to_string(sizeof(kes_memory_info)) +
                                           " bytes, found " + std::to_string(size));
  }
  // Every check kes_session_create makes of the params (the model's kind, the struct, the KV
  // type, the sinks), with its message.
  size_t arena = 0;
  const kes_status checked = kes_session_arena_size(model, params, &arena);
  if (checked != KES_OK) return Error(checked, kes_last_error());
  kes_session_params p = kes_session_default_params();
  std::memcpy(static_cast<void*>(&p),
              params != nullptr ? static_cast<const void*>(params) : static_cast<const void*>(&p),
              params != nullptr ? params->struct_size : sizeof(p));
  kestrel::KvOptions kv;
  kv.sinks = p.kv_sinks;
  kv.type = p.kv_type == KES_KV_F32    ? kestrel::ops::KvType::kF32
            : p.kv_type == KES_KV_INT8 ? kestrel::ops::KvType::kInt8
                                       : kestrel::ops::KvType::kF16;
  const size_t trained = model->model->hparams().context_length();
  const size_t context =
      p.context_length == 0 ? trained : std::min<size_t>(p.context_length, trained);
  kestrel::MemoryPlan plan;
  KES_C_RETURN_IF_ERROR(
      FromStatus(KES_INVALID_ARGUMENT, kestrel::PlanMemory(*model->model, context, &plan, kv)));
  if (plan.arena_bytes != arena) {
    return Error(KES_INTERNAL, "kes_session_memory planned " + std::to_string(plan.arena_bytes) +
                                   " bytes, kes_session_arena_size " + std::to_string(arena));
  }
  kes_memory_info out;
  std::memset(&out, 0, sizeof(out));
  out.struct_size = size;
  out.context_length = plan.context_length;
  out.weights_bytes = model->model->weights_bytes();
  out.activations_bytes = plan.activation_bytes;
  out.kv_cache_bytes = plan.kv_bytes;
  out.attention_bytes = plan.op_scratch_bytes;
  out.sampler_bytes = plan.sampler_bytes;
  out.arena_bytes = plan.arena_bytes;
  out.total_bytes = out.weights_bytes + out.arena_bytes;
  std::memcpy(static_cast<void*>(info), &out, size);
  return Ok();
}

}  // namespace

extern "C" {

kes_status kes_session_memory(const kes_model* model, const kes_session_params* params,
                              kes_memory_info* info) {
  return Guard(model, nullptr, [&] { return Memory(model, params, info); });
}

}  // extern "C"
