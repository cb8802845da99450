// Reads WAV (RIFF/WAVE) audio into mono float samples in [-1, 1], the input of speech models.
//
// Accepted: integer PCM of 8 (unsigned), 16, 24 or 32 bits and IEEE float of 32 or 64 bits, in
// the plain format tags (1 PCM, 3 float) or WAVE_FORMAT_EXTENSIBLE with the PCM or float
// subformat; any sample rate from 1 Hz to 768 kHz; 1 to 64 channels, averaged to mono. Integers
// are scaled as ffmpeg (faster-whisper's decoder) scales them: x / 2^(bits-1), 8-bit as
// (x - 128) / 128.
//
// The file is untrusted input: chunks before the data must lie inside the file, the format must
// come before the data, the data must be whole frames, exactly one "fmt " and one "data" chunk.
// Leniencies, as sox and ffmpeg read such files:
//  - writers that stream (a pipe cannot seek back to patch sizes): a data chunk whose size is
//    0x7FFFFFFF or 0xFFFFFFFF and runs past the end of the file, or 0 with bytes after it,
//    takes the rest of the file;
//  - a file cut short: a data chunk whose size runs past the end reads the whole frames that
//    are there (WavInfo::missing_data_bytes says how many bytes were missing);
//  - after the data chunk, bytes that are no whole chunk (a few stray bytes, a trailing chunk
//    cut short) are ignored.
// Errors say what was expected and what was found; chunk ids from the file are quoted with
// bytes outside printable ASCII escaped (\xNN).
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
  // Bytes the data chunk's size claims beyond the end of the file (a file cut short), which are
  // not read; 0 for a whole file. A program may warn about them.
  uint64_t missing_data_bytes = 0;
};

// Decodes a whole WAV file held in memory; `name` stands for the file in messages. `samples`
// gets info->frames mono samples.
Status DecodeWav(const uint8_t* data, size_t size, const std::string& name, WavInfo* info,
                 std::vector<float>* samples);

// Reads and decodes the WAV file at `path`.
Status ReadWav(const std::string& path, WavInfo* info, std::vector<float>* samples);

}  // namespace kestrel::audio
