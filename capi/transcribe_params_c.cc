// The transcriber's parameter defaults: the same whether this Kestrel transcribes
// (capi/transcribe_c.cc) or was built without audio (capi/transcribe_without_audio_c.cc), so a
// program fills its structs the same way against either library.
#include <cstddef>
#include <cstdint>

#include "capi/c_call.h"
#include "kestrel/kestrel.h"

static_assert(offsetof(kes_transcriber_params, max_audio_seconds) + sizeof(size_t) ==
                  sizeof(kes_transcriber_params),
              "kes_transcriber_params must not end in padding (c_call.h ReadParams)");
static_assert(offsetof(kes_transcribe_params, reserved0) + sizeof(int32_t) ==
                  sizeof(kes_transcribe_params),
              "kes_transcribe_params must not end in padding (c_call.h ReadParams)");

extern "C" {

kes_transcriber_params kes_transcriber_default_params(void) {
  kes_transcriber_params p = kestrel::capi::ZeroedStruct<kes_transcriber_params>();
  p.n_threads = 0;
  p.max_audio_seconds = 30;
  return p;
}

kes_transcribe_params kes_transcribe_default_params(void) {
  kes_transcribe_params p = kestrel::capi::ZeroedStruct<kes_transcribe_params>();
  p.language = nullptr;
  p.task = KES_TASK_TRANSCRIBE;
  return p;
}

}  // extern "C"
