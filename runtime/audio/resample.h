// Sample-rate conversion of mono audio (libsamplerate's best sinc converter, Debian
// libsamplerate0-dev): speech models take a fixed rate (Whisper: 16 kHz), recordings come at
// 8, 22.05, 44.1, 48 kHz and more. Input preparation, before a session runs: it allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/status.h"

namespace kestrel::audio {

// Resamples `in` (at in_rate Hz) to out_rate Hz: round(n * out_rate / in_rate) samples, so the
// duration is kept to the nearest sample. Equal rates copy. The ratio must lie within
// libsamplerate's 1/256 .. 256 (e.g. 16 kHz output from 63 Hz to 4 MHz input).
Status Resample(const std::vector<float>& in, uint32_t in_rate, uint32_t out_rate,
                std::vector<float>* out);

}  // namespace kestrel::audio
