// What a Kestrel built with KESTREL_WITH_AUDIO=OFF (no kissfft, no libsamplerate: text only)
// answers where speech is asked for: the C API's transcriber calls
// (capi/transcribe_without_audio_c.cc) and the CLI's `transcribe` and Whisper `bench`
// (tools/audio_unavailable.cc). One text, so that every way in says the same.
#pragma once

namespace kestrel {

inline constexpr char kWithoutAudioMessage[] =
    "this Kestrel was built without audio (KESTREL_WITH_AUDIO=OFF): it cannot transcribe; "
    "build it with -DKESTREL_WITH_AUDIO=ON for Whisper models";

}  // namespace kestrel
