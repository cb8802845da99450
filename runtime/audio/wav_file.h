// Reads WAV (RIFF/WAVE) audio into mono float samples in [-1, 1], the input of speech models.
//
// Accepted: integer PCM of 8 (unsigned), 16, 24 or 32 bits and IEEE float of 32 or 64 bits, in
// the plain format tags (1 PCM, 3 float) or WAVE_FORMAT_EXTENSIBLE with the PCM or float
// subformat; any sample rate from 1 Hz to 768 kHz; 1 to 64 channels, averaged to mono. Integers
// are scaled as ffmpeg (faster-whisper's decoder) scales them: x / 2^(bits-1), 8-bit as
// (x - 128) / 128.
//
// The file is untrusted input: chunks must lie inside the file, the format must come before
// the data, the data must be whole frames, exactly one "fmt " and one "data" chunk. One leniency,
// for writers that stream (a pipe cannot seek back to patch sizes): a data chunk whose size is
// 0x7FFFFFFF or 0xFFFFFFFF and runs past the end of the file, or 0 with bytes after it, takes
// the rest of the file. Errors say what was expected and what was found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kestrel::audio {

struct WavInfo {
  uint16_t format = 0;  // 1 integer PCM, 3 IEEE float (the subformat for EXTENSIBLE files)
  uint16_t channels = 0;
  uint32_t sample_rate = 0;
  uint16_t bits_per_sample = 0;
  size_t frames = 0;  // samples per channel
};

// Decodes a whole WAV file held in memory; `name` stands for the file in messages. `samples`
// gets info->frames mono samples.
Status DecodeWav(const uint8_t* data, size_t size, const std::string& name, WavInfo* info,
                 std::vector<float>* samples);

// Reads and decodes the WAV file at `path`.
Status ReadWav(const std::string& path, WavInfo* info, std::vector<float>* samples);

}  // namespace kestrel::audio
