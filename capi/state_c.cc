// The C API's session state: kes_session_save_state / kes_session_load_state over the runtime's
// Session::SaveState / LoadState (runtime/session_state.h holds the format), with the C API's
// own part of the sequence, the pending token, saved beside it.
#include <string>
#include <vector>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"
#include "runtime/session_state.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

namespace {

CallStatus Save(kes_session* s, void* buf, size_t capacity, size_t* size) {
  if (size == nullptr) return NullArgument("size");
  if (buf == nullptr && capacity > 0) return NullArgument("buf");
  const size_t need = s->session->StateBytes(s->pending);
  *size = need;
  if (buf == nullptr || capacity < need) {
    return kestrel::capi::BufferTooSmall("buf", need, capacity, "bytes");
  }
  kestrel::SequenceExtras extras;
  extras.pending = s->pending;
  extras.sampler_ready = s->sampler_ready;
  extras.sampler = s->sampler_options;
  extras.sampler_random = s->sampler.random_state();
  return FromStatus(KES_INTERNAL,
                    s->session->SaveState(extras, static_cast<uint8_t*>(buf), capacity, size));
}

CallStatus Load(kes_session* s, const void* buf, size_t size) {
  if (buf == nullptr) return NullArgument("buf");
  kestrel::SequenceExtras extras;
  KES_C_RETURN_IF_ERROR(FromStatus(
      KES_BAD_STATE, s->session->LoadState(static_cast<const uint8_t*>(buf), size, &extras)));
  s->pending = extras.pending;
  // The sampler where the saved run left it: next_token with the same params samples on as that
  // run would have (LoadState checked that a sampler accepts these options).
  s->sampler_ready = extras.sampler_ready;
  if (extras.sampler_ready) {
    KES_C_RETURN_IF_ERROR(FromStatus(
        KES_INTERNAL,
        s->sampler.Init(extras.sampler, s->session->vocab_size(), s->session->sampler_scratch(),
                        s->session->memory().sampler_bytes)));
    s->sampler.set_random_state(extras.sampler_random);
    s->sampler_options = extras.sampler;
  }
  s->abort.store(false);
  s->stop.store(false);
  return Ok();
}

}  // namespace

extern "C" {

kes_status kes_session_state_size(const kes_session* session, size_t* bytes) {
  if (session == nullptr) return kestrel::capi::NullHandle("session");
  return Guard(session, nullptr, [&]() -> CallStatus {
    if (bytes == nullptr) return NullArgument("bytes");
    *bytes = session->session->StateBytes(session->pending);
    return Ok();
  });
}

kes_status kes_session_save_state(kes_session* session, void* buf, size_t capacity, size_t* size) {
  return kestrel::capi::OnHandle(session, "session",
                                 [&] { return Save(session, buf, capacity, size); });
}

kes_status kes_session_load_state(kes_session* session, const void* buf, size_t size) {
  return kestrel::capi::OnHandle(session, "session", [&] { return Load(session, buf, size); });
}

kes_status kes_session_save_state_file(kes_session* session, const char* path) {
  return kestrel::capi::OnHandle(session, "session", [&]() -> CallStatus {
    if (path == nullptr) return NullArgument("path");
    std::vector<uint8_t> bytes(session->session->StateBytes(session->pending));
    size_t size = 0;
    KES_C_RETURN_IF_ERROR(Save(session, bytes.data(), bytes.size(), &size));
    return FromStatus(KES_IO_ERROR, kestrel::WriteFileAtomically(path, bytes.data(), size));
  });
}

kes_status kes_session_load_state_file(kes_session* session, const char* path) {
  return kestrel::capi::OnHandle(session, "session", [&]() -> CallStatus {
    if (path == nullptr) return NullArgument("path");
    std::vector<uint8_t> bytes;
    KES_C_RETURN_IF_ERROR(FromStatus(KES_IO_ERROR, kestrel::ReadWholeFile(path, &bytes)));
    const uint8_t none = 0;  // an empty file is a state cut short, not a NULL buffer
    const CallStatus loaded = Load(session, bytes.empty() ? &none : bytes.data(), bytes.size());
    if (loaded.ok()) return loaded;
    return Error(loaded.code, "'" + std::string(path) + "': " + loaded.message);
  });
}

}  // extern "C"
