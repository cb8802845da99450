// kes_session_rewind: the sequence cut back to a shorter prefix, so that a program (a server
// slot) whose next prompt shares only a beginning with what the session holds prefills just
// the rest. Session::Rewind checks that every KV ring still holds what the kept positions see.
#include <string>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

namespace {

CallStatus Rewind(kes_session* s, size_t position) {
  // The sequence as the caller counts it: what the model ran, and the token next_token or
  // kes_generate gave last when it has not been run yet.
  const size_t ran = s->session->position();
  const size_t length = ran + (s->pending >= 0 ? 1 : 0);
  if (position > length) {
    return Error(KES_INVALID_ARGUMENT, "position: expected at most the sequence's " +
                                           std::to_string(length) + " tokens, found " +
                                           std::to_string(position));
  }
  if (position == length) return Ok();
  if (position < ran) {
    KES_C_RETURN_IF_ERROR(FromStatus(KES_INVALID_ARGUMENT, s->session->Rewind(position)));
  }
  // position == ran drops only the pending token, which was never run.
  s->pending = -1;
  s->sampler_ready = false;
  return Ok();
}

}  // namespace

extern "C" {

kes_status kes_session_rewind(kes_session* session, size_t position) {
  if (session == nullptr) return kestrel::capi::NullHandle("session");
  return Guard(session, &session->error, [&] { return Rewind(session, position); });
}

}  // extern "C"
