// The C API's transcriber in a Kestrel built without audio (KESTREL_WITH_AUDIO=OFF, compiled
// instead of capi/transcribe_c.cc): the calls are all there, so the library's ABI and exported
// symbols stay the same and a program built for speech still loads, but each one refuses with
// KES_UNSUPPORTED and says why. No transcriber can exist, so none is ever handed out.
#include <cstddef>
#include <cstdint>

#include "capi/c_call.h"
#include "kestrel/kestrel.h"
#include "runtime/without_audio.h"

namespace {

kes_status WithoutAudio() noexcept {
  return kestrel::capi::Guard(nullptr, nullptr, [] {
    return kestrel::capi::Error(KES_UNSUPPORTED, kestrel::kWithoutAudioMessage);
  });
}

}  // namespace

extern "C" {

kes_status kes_transcriber_create(const kes_model*, const kes_transcriber_params*,
                                  kes_transcriber** transcriber) {
  if (transcriber != nullptr) *transcriber = nullptr;
  return WithoutAudio();
}

void kes_transcriber_destroy(kes_transcriber*) {}

const char* kes_transcriber_last_error(const kes_transcriber*) { return ""; }

kes_status kes_transcribe_pcm(kes_transcriber*, const float*, size_t, uint32_t,
                              const kes_transcribe_params*, kes_segment_callback, void*) {
  return WithoutAudio();
}

kes_status kes_transcribe_file(kes_transcriber*, const char*, const kes_transcribe_params*,
                               kes_segment_callback, void*) {
  return WithoutAudio();
}

kes_status kes_transcriber_abort(kes_transcriber*) { return WithoutAudio(); }

kes_status kes_transcriber_language(const kes_transcriber*, const char** code, size_t* len) {
  if (code != nullptr) *code = "";
  if (len != nullptr) *len = 0;
  return WithoutAudio();
}

}  // extern "C"
