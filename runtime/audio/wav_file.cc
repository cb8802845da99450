#include "runtime/audio/wav_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "runtime/mapped_file.h"

namespace kestrel::audio {
namespace {

constexpr uint16_t kFormatPcm = 1;
constexpr uint16_t kFormatFloat = 3;
constexpr uint16_t kFormatExtensible = 0xFFFE;
constexpr uint32_t kMaxSampleRate = 768000;
constexpr uint16_t kMaxChannels = 64;

std::string Num(uint64_t v) { return std::to_string(v); }

uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t U32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// A chunk id as it can be printed: the four bytes of a damaged file may be anything, NUL
// included, which would cut a C-string message short; those come out as \xNN.
std::string ChunkId(const uint8_t* p) {
  std::string id;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '\\' && p[i] != '\'') {
      id += static_cast<char>(p[i]);
    } else {
      static const char kHex[] = "0123456789abcdef";
      id += "\\x";
      id += kHex[p[i] >> 4];
      id += kHex[p[i] & 15];
    }
  }
  return id;
}

// A streaming writer's placeholder for "the rest of the file".
bool IsStreamingSize(uint32_t size) {
  return size == 0 || size == 0x7FFFFFFF || size == 0xFFFFFFFF;
}

Status ParseFormat(const uint8_t* p, uint32_t size, WavInfo* info) {
  if (size < 16)
    return Status::Error("'fmt ' chunk of " + Num(size) + " bytes (expected at least 16)");
  uint16_t tag = U16(p);
  info->channels = U16(p + 2);
  info->sample_rate = U32(p + 4);
  const uint16_t block_align = U16(p + 12);
  info->bits_per_sample = U16(p + 14);
  if (tag == kFormatExtensible) {
    if (size < 40) {
      return Status::Error("WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk of " + Num(size) +
                           " bytes (expected 40)");
    }
    // The subformat GUID starts with the plain format tag; the rest is the fixed KSDATAFORMAT
    // suffix.
    static constexpr uint8_t kGuidSuffix[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                                0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
    if (std::memcmp(p + 26, kGuidSuffix, sizeof(kGuidSuffix)) != 0) {
      return Status::Error(
          "WAVE_FORMAT_EXTENSIBLE with an unknown subformat GUID (expected PCM "
          "or IEEE float)");
    }
    tag = U16(p + 24);
  }
  info->format = tag;
  const uint16_t bits = info->bits_per_sample;
  if (tag == kFormatPcm) {
    if (bits != 8 && bits != 16 && bits != 24 && bits != 32) {
      return Status::Error("integer PCM of " + Num(bits) + " bits (expected 8, 16, 24 or 32)");
    }
  } else if (tag == kFormatFloat) {
    if (bits != 32 && bits != 64) {
      return Status::Error("IEEE float samples of " + Num(bits) + " bits (expected 32 or 64)");
    }
  } else {
    return Status::Error("format tag " + Num(tag) +
                         " (expected 1 integer PCM or 3 IEEE float; compressed WAV such as "
                         "ADPCM or mu-law is not read: convert it, e.g. with sox)");
  }
  if (info->channels == 0 || info->channels > kMaxChannels) {
    return Status::Error(Num(info->channels) + " channels (expected 1 to " + Num(kMaxChannels) +
                         ")");
  }
  if (info->sample_rate == 0 || info->sample_rate > kMaxSampleRate) {
    return Status::Error("sample rate " + Num(info->sample_rate) + " Hz (expected 1 to " +
                         Num(kMaxSampleRate) + ")");
  }
  const uint32_t frame_bytes = uint32_t{info->channels} * (bits / 8u);
  if (block_align != frame_bytes) {
    return Status::Error("block align " + Num(block_align) + " (expected " + Num(frame_bytes) +
                         ": " + Num(info->channels) + " channels of " + Num(bits) + " bits)");
  }
  return OkStatus();
}

// One sample at p, scaled to [-1, 1] as ffmpeg converts to float.
float Sample(const WavInfo& info, const uint8_t* p) {
  if (info.format == kFormatFloat) {
    if (info.bits_per_sample == 32) {
      float f;
      std::memcpy(&f, p, 4);  // little-endian targets only (x86, ARM as Kestrel builds them)
      return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return static_cast<float>(d);
  }
  switch (info.bits_per_sample) {
    case 8: return (static_cast<int>(p[0]) - 128) * (1.0f / 128);
    case 16: return static_cast<float>(static_cast<int16_t>(U16(p))) * (1.0f / 32768);
    case 24: {
      const auto u = static_cast<int32_t>((uint32_t{p[0]} << 8) | (uint32_t{p[1]} << 16) |
                                          (uint32_t{p[2]} << 24));
      return static_cast<float>(u / 256) * (1.0f / 8388608);
    }
    default: return static_cast<float>(static_cast<int32_t>(U32(p))) * (1.0f / 2147483648.0f);
  }
}

Status Decode(const uint8_t* data, size_t size, WavInfo* info, std::vector<float>* samples) {
  if (size < 12 || std::memcmp(data, "RIFF", 4) != 0 || std::memcmp(data + 8, "WAVE", 4) != 0) {
    return Status::Error("not a WAV file (expected 'RIFF' and 'WAVE' in its first 12 bytes)");
  }
  bool have_format = false;
  const uint8_t* samples_at = nullptr;
  size_t sample_bytes = 0;
  size_t offset = 12;
  while (offset < size) {
    // After the data, what does not parse as a chunk is ignored, as sox and ffmpeg ignore it
    // (they stop reading at the data's end): a few stray bytes, a trailing chunk cut short.
    if (size - offset < 8) {
      if (samples_at != nullptr) break;
      return Status::Error(Num(size - offset) + " bytes at the end (byte " + Num(offset) +
                           ") where a chunk header of 8 was expected");
    }
    const uint8_t* header = data + offset;
    const std::string id = ChunkId(header);
    uint32_t chunk = U32(header + 4);
    offset += 8;
    const size_t left = size - offset;
    const std::string where = "chunk '" + id + "' at byte " + Num(offset - 8);
    if (id == "data" && IsStreamingSize(chunk) && (chunk > left || (chunk == 0 && left > 0))) {
      chunk = static_cast<uint32_t>(std::min<size_t>(left, 0xFFFFFFFFu));
    } else if (id == "data" && chunk > left) {
      // A file cut short: the frames that are there, as sox reads it (with a warning of its
      // own); the caller learns how much is missing.
      info->missing_data_bytes = chunk - left;
      chunk = static_cast<uint32_t>(left);
    }
    if (chunk > left) {
      if (samples_at != nullptr) break;
      return Status::Error(where + ": " + Num(chunk) + " bytes, the file has " + Num(left) +
                           " left (truncated file?)");
    }
    if (id == "fmt ") {
      if (have_format) return Status::Error(where + ": a second 'fmt ' chunk");
      KES_RETURN_IF_ERROR(ParseFormat(header + 8, chunk, info).WithContext(where));
      have_format = true;
    } else if (id == "data") {
      if (!have_format) return Status::Error(where + ": data before the 'fmt ' chunk");
      if (samples_at != nullptr) return Status::Error(where + ": a second 'data' chunk");
      samples_at = header + 8;
      sample_bytes = chunk;
    }
    // Chunks are padded to an even size; a missing pad byte at the very end is tolerated.
    offset += chunk;
    if (chunk % 2 == 1 && offset < size) ++offset;
  }
  if (!have_format) return Status::Error("no 'fmt ' chunk");
  if (samples_at == nullptr) return Status::Error("no 'data' chunk");
  const size_t frame_bytes = size_t{info->channels} * (info->bits_per_sample / 8u);
  // A cut file ends where it ends, inside a frame too.
  if (info->missing_data_bytes > 0) sample_bytes -= sample_bytes % frame_bytes;
  if (sample_bytes % frame_bytes != 0) {
    return Status::Error("'data' chunk of " + Num(sample_bytes) + " bytes, not whole frames of " +
                         Num(frame_bytes));
  }
  info->frames = sample_bytes / frame_bytes;
  samples->assign(info->frames, 0.0f);
  const size_t bytes_per_sample = info->bits_per_sample / 8u;
  const float inv_channels = 1.0f / static_cast<float>(info->channels);
  for (size_t f = 0; f < info->frames; ++f) {
    const uint8_t* frame = samples_at + f * frame_bytes;
    float sum = 0.0f;
    for (size_t c = 0; c < info->channels; ++c) {
      const float x = Sample(*info, frame + c * bytes_per_sample);
      // Integers always land in [-1, 1]; a float file could hold anything.
      if (!std::isfinite(x)) {
        return Status::Error("sample " + Num(f) + " of channel " + Num(c) +
                             " is not a finite number");
      }
      sum += x;
    }
    (*samples)[f] = info->channels == 1 ? sum : sum * inv_channels;
  }
  return OkStatus();
}

}  // namespace

Status DecodeWav(const uint8_t* data, size_t size, const std::string& name, WavInfo* info,
                 std::vector<float>* samples) {
  if (data == nullptr && size != 0) return Status::Error("'" + name + "': data is null");
  *info = WavInfo();
  return Decode(data, size, info, samples).WithContext("'" + name + "'");
}

Status ReadWav(const std::string& path, WavInfo* info, std::vector<float>* samples) {
  std::unique_ptr<MappedFile> file;
  KES_RETURN_IF_ERROR(MappedFile::Open(path, &file));
  return DecodeWav(file->data(), file->size(), path, info, samples);
}

}  // namespace kestrel::audio
