// The WAV reader on files written here byte by byte: every sample format scales as ffmpeg
// scales it, channels average to mono, EXTENSIBLE and streaming files read, odd chunks are
// skipped with their pad byte, and every damaged file fails with a clear message.
#include "runtime/audio/wav_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace kestrel::audio {
namespace {

void PutU16(std::vector<uint8_t>* b, uint16_t v) {
  b->push_back(v & 0xFF);
  b->push_back(static_cast<uint8_t>(v >> 8));
}
void PutU32(std::vector<uint8_t>* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutChunk(std::vector<uint8_t>* b, const char* id, const std::vector<uint8_t>& body,
              bool pad = true) {
  b->insert(b->end(), id, id + 4);
  PutU32(b, static_cast<uint32_t>(body.size()));
  b->insert(b->end(), body.begin(), body.end());
  if (pad && body.size() % 2 == 1) b->push_back(0);
}

std::vector<uint8_t> Format(uint16_t tag, uint16_t channels, uint32_t rate, uint16_t bits,
                            bool extensible = false) {
  std::vector<uint8_t> f;
  PutU16(&f, extensible ? 0xFFFE : tag);
  PutU16(&f, channels);
  PutU32(&f, rate);
  PutU32(&f, rate * channels * (bits / 8u));
  PutU16(&f, static_cast<uint16_t>(channels * (bits / 8u)));
  PutU16(&f, bits);
  if (extensible) {
    PutU16(&f, 22);    // extension size
    PutU16(&f, bits);  // valid bits
    PutU32(&f, 0);     // channel mask
    PutU16(&f, tag);
    const uint8_t suffix[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
    f.insert(f.end(), suffix, suffix + 14);
  }
  return f;
}

// RIFF header around the chunks (the RIFF size is not checked: streaming writers get it wrong).
std::vector<uint8_t> Riff(const std::vector<uint8_t>& chunks) {
  std::vector<uint8_t> b = {'R', 'I', 'F', 'F'};
  PutU32(&b, static_cast<uint32_t>(chunks.size() + 4));
  b.insert(b.end(), {'W', 'A', 'V', 'E'});
  b.insert(b.end(), chunks.begin(), chunks.end());
  return b;
}

std::vector<uint8_t> Wav(const std::vector<uint8_t>& format, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> chunks;
  PutChunk(&chunks, "fmt ", format);
  PutChunk(&chunks, "data", data);
  return Riff(chunks);
}

Status Decode(const std::vector<uint8_t>& file, WavInfo* info, std::vector<float>* samples) {
  std::vector<uint8_t> copy = file;  // exactly sized: ASan sees reads past the end
  copy.shrink_to_fit();
  return DecodeWav(copy.data(), copy.size(), "test.wav", info, samples);
}

void ExpectRejected(const std::vector<uint8_t>& file, const std::string& words) {
  WavInfo info;
  std::vector<float> samples;
  const Status s = Decode(file, &info, &samples);
  ASSERT_FALSE(s.ok()) << "expected an error with '" << words << "'";
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("test.wav"), std::string::npos) << s.message();
}

TEST(WavFile, ScalesEveryIntegerFormatAsFfmpeg) {
  WavInfo info;
  std::vector<float> s;
  // 16-bit: x / 32768.
  std::vector<uint8_t> d16;
  for (int16_t v : {0, 16384, -32768, 32767}) PutU16(&d16, static_cast<uint16_t>(v));
  ASSERT_TRUE(Decode(Wav(Format(1, 1, 16000, 16), d16), &info, &s).ok());
  EXPECT_EQ(info.sample_rate, 16000u);
  EXPECT_EQ(info.frames, 4u);
  EXPECT_EQ(s, (std::vector<float>{0.0f, 0.5f, -1.0f, 32767.0f / 32768}));
  // 8-bit unsigned: (x - 128) / 128.
  ASSERT_TRUE(Decode(Wav(Format(1, 1, 8000, 8), {128, 0, 255, 192}), &info, &s).ok());
  EXPECT_EQ(s, (std::vector<float>{0.0f, -1.0f, 127.0f / 128, 0.5f}));
  // 24-bit: x / 2^23, sign from the top byte.
  ASSERT_TRUE(
      Decode(Wav(Format(1, 1, 44100, 24), {0x00, 0x00, 0x40, 0x00, 0x00, 0x80, 0xFF, 0xFF, 0xFF}),
             &info, &s)
          .ok());
  EXPECT_EQ(s, (std::vector<float>{0.5f, -1.0f, -1.0f / 8388608}));
  // 32-bit: x / 2^31.
  std::vector<uint8_t> d32;
  PutU32(&d32, 0x40000000u);
  PutU32(&d32, 0x80000000u);
  ASSERT_TRUE(Decode(Wav(Format(1, 1, 48000, 32), d32), &info, &s).ok());
  EXPECT_EQ(s, (std::vector<float>{0.5f, -1.0f}));
}

TEST(WavFile, ReadsFloatsExtensibleAndAveragesChannels) {
  WavInfo info;
  std::vector<float> s;
  const float f32[4] = {0.25f, -0.75f, 1.5f, 0.5f};  // 2 frames of 2 channels
  std::vector<uint8_t> data(16);
  std::memcpy(data.data(), f32, 16);
  ASSERT_TRUE(Decode(Wav(Format(3, 2, 22050, 32), data), &info, &s).ok());
  EXPECT_EQ(info.channels, 2u);
  EXPECT_EQ(info.format, 3u);
  EXPECT_EQ(s, (std::vector<float>{-0.25f, 1.0f}));
  const double f64[2] = {0.125, -0.5};
  std::vector<uint8_t> data64(16);
  std::memcpy(data64.data(), f64, 16);
  ASSERT_TRUE(Decode(Wav(Format(3, 1, 16000, 64, /*extensible=*/true), data64), &info, &s).ok());
  EXPECT_EQ(info.format, 3u);
  EXPECT_EQ(s, (std::vector<float>{0.125f, -0.5f}));
  std::vector<uint8_t> d16;
  PutU16(&d16, 16384);
  ASSERT_TRUE(Decode(Wav(Format(1, 1, 16000, 16, /*extensible=*/true), d16), &info, &s).ok());
  EXPECT_EQ(s, (std::vector<float>{0.5f}));
}

TEST(WavFile, SkipsOtherChunksAndReadsStreamingSizes) {
  WavInfo info;
  std::vector<float> s;
  std::vector<uint8_t> d16;
  for (int16_t v : {8192, -8192, 0}) PutU16(&d16, static_cast<uint16_t>(v));
  std::vector<uint8_t> chunks;
  PutChunk(&chunks, "LIST", {'a', 'b', 'c'});  // odd: followed by a pad byte
  PutChunk(&chunks, "fmt ", Format(1, 1, 16000, 16));
  PutChunk(&chunks, "data", d16);
  ASSERT_TRUE(Decode(Riff(chunks), &info, &s).ok());
  EXPECT_EQ(s, (std::vector<float>{0.25f, -0.25f, 0.0f}));
  // A pipe writer's placeholder size: the data runs to the end of the file.
  for (uint32_t placeholder : {0u, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    std::vector<uint8_t> streamed;
    PutChunk(&streamed, "fmt ", Format(1, 1, 16000, 16));
    streamed.insert(streamed.end(), {'d', 'a', 't', 'a'});
    PutU32(&streamed, placeholder);
    streamed.insert(streamed.end(), d16.begin(), d16.end());
    ASSERT_TRUE(Decode(Riff(streamed), &info, &s).ok()) << placeholder;
    EXPECT_EQ(info.frames, 3u);
  }
}

TEST(WavFile, RejectsDamagedFiles) {
  std::vector<uint8_t> d16(4, 0);
  ExpectRejected({'R', 'I', 'F', 'F'}, "not a WAV file");
  ExpectRejected(Riff({}), "no 'fmt ' chunk");
  std::vector<uint8_t> only_format;
  PutChunk(&only_format, "fmt ", Format(1, 1, 16000, 16));
  ExpectRejected(Riff(only_format), "no 'data' chunk");
  std::vector<uint8_t> data_first;
  PutChunk(&data_first, "data", d16);
  PutChunk(&data_first, "fmt ", Format(1, 1, 16000, 16));
  ExpectRejected(Riff(data_first), "data before the 'fmt ' chunk");
  // A chunk before the data that runs past the end of the file.
  std::vector<uint8_t> cut_list;
  PutChunk(&cut_list, "LIST", std::vector<uint8_t>(100, 0));
  cut_list.resize(cut_list.size() - 10);
  ExpectRejected(Riff(cut_list), "chunk 'LIST' at byte 12: 100 bytes, the file has 90 left");
  ExpectRejected(Wav(Format(1, 1, 16000, 16), {0, 0, 0}), "not whole frames of 2");
  ExpectRejected(Wav(Format(1, 1, 16000, 12), d16), "integer PCM of 12 bits");
  ExpectRejected(Wav(Format(3, 1, 16000, 16), d16), "IEEE float samples of 16 bits");
  ExpectRejected(Wav(Format(2, 1, 16000, 16), d16), "format tag 2");
  ExpectRejected(Wav(Format(1, 0, 16000, 16), d16), "0 channels");
  ExpectRejected(Wav(Format(1, 1, 0, 16), d16), "sample rate 0 Hz");
  std::vector<uint8_t> bad_align = Format(1, 2, 16000, 16);
  bad_align[12] = 3;
  ExpectRejected(Wav(bad_align, d16), "block align 3 (expected 4");
  ExpectRejected(Wav(std::vector<uint8_t>(10, 0), d16), "'fmt ' chunk of 10 bytes");
  std::vector<uint8_t> bad_guid = Format(1, 1, 16000, 16, /*extensible=*/true);
  bad_guid.back() ^= 1;
  ExpectRejected(Wav(bad_guid, d16), "unknown subformat GUID");
  std::vector<uint8_t> two_formats;
  PutChunk(&two_formats, "fmt ", Format(1, 1, 16000, 16));
  PutChunk(&two_formats, "fmt ", Format(1, 1, 16000, 16));
  ExpectRejected(Riff(two_formats), "a second 'fmt ' chunk");
  // Bytes that are no chunk header before the data are still an error.
  std::vector<uint8_t> tail_before_data;
  PutChunk(&tail_before_data, "fmt ", Format(1, 1, 16000, 16));
  tail_before_data.insert(tail_before_data.end(), {'x', 'y', 'z'});
  ExpectRejected(Riff(tail_before_data), "3 bytes at the end");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> nan_data(4);
  std::memcpy(nan_data.data(), &nan, 4);
  ExpectRejected(Wav(Format(3, 1, 16000, 32), nan_data), "sample 0 of channel 0 is not a finite");
}

// Cut inside the headers: an error. Cut inside the samples: the whole frames that are there, as
// sox reads such a file (a download or recording cut short).
TEST(WavFile, EveryTruncationFailsCleanlyOrReadsTheWholeFramesLeft) {
  std::vector<uint8_t> d16(8, 0x11);
  const std::vector<uint8_t> good = Wav(Format(1, 2, 16000, 16), d16);
  const size_t data_start = good.size() - d16.size();
  for (size_t n = 0; n < good.size(); ++n) {
    SCOPED_TRACE("first " + std::to_string(n) + " bytes");
    WavInfo info;
    std::vector<float> samples;
    const Status s = Decode(std::vector<uint8_t>(good.begin(), good.begin() + n), &info, &samples);
    if (n < data_start) {
      EXPECT_FALSE(s.ok());
    } else {
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(info.frames, (n - data_start) / 4);
      EXPECT_EQ(samples.size(), info.frames);
      EXPECT_EQ(info.missing_data_bytes, good.size() - n);
    }
  }
}

// Issue 35: 1 to 7 bytes after the data chunk (too few for a chunk header), which sox and ffmpeg
// ignore, made the file be refused; so did any chunk after the data that does not fit.
TEST(WavFile, IgnoresWhatFollowsTheDataAsSoxDoes) {
  std::vector<uint8_t> d16;
  for (int16_t v : {8192, -8192}) PutU16(&d16, static_cast<uint16_t>(v));
  for (size_t extra = 1; extra <= 7; ++extra) {
    SCOPED_TRACE(std::to_string(extra) + " trailing bytes");
    std::vector<uint8_t> file = Wav(Format(1, 1, 16000, 16), d16);
    file.insert(file.end(), extra, 'x');
    WavInfo info;
    std::vector<float> s;
    const Status status = Decode(file, &info, &s);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(s, (std::vector<float>{0.25f, -0.25f}));
  }
  // A LIST chunk after the data, cut short.
  std::vector<uint8_t> file = Wav(Format(1, 1, 16000, 16), d16);
  PutChunk(&file, "LIST", std::vector<uint8_t>(20, 'a'));
  file.resize(file.size() - 5);
  WavInfo info;
  std::vector<float> s;
  const Status status = Decode(file, &info, &s);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(info.frames, 2u);
}

// Issue 35: a data chunk that claims fewer bytes than it holds left samples to be read as a chunk
// header, and the error quoted those raw bytes as the chunk's id, cut at the first NUL. A data
// chunk claiming more than the file holds is read as far as it goes, as sox reads it.
TEST(WavFile, DataChunkSizeThatLiesAndChunkIdsInMessages) {
  std::vector<uint8_t> d16;
  for (int16_t v : {8192, -8192, 0, 0, 0, 16384}) PutU16(&d16, static_cast<uint16_t>(v));
  std::vector<uint8_t> file = Wav(Format(1, 1, 16000, 16), d16);
  const size_t data_size_at = file.size() - d16.size() - 4;
  // Claims 4 bytes: sox and ffmpeg read 2 samples and ignore the rest.
  file[data_size_at] = 4;
  WavInfo info;
  std::vector<float> s;
  Status status = Decode(file, &info, &s);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(s, (std::vector<float>{0.25f, -0.25f}));
  // Claims 1001 bytes of 12: the 6 whole samples there, and how many bytes were missing.
  file[data_size_at] = 0xE9;
  file[data_size_at + 1] = 0x03;
  status = Decode(file, &info, &s);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(info.frames, 6u);
  EXPECT_EQ(info.missing_data_bytes, 1001u - 12u);
  EXPECT_EQ(s[5], 0.5f);

  // Before the data, an id of raw bytes (a LIST chunk that claims 2 bytes of its 4) is quoted
  // escaped, never cut at its NUL.
  std::vector<uint8_t> chunks;
  PutChunk(&chunks, "LIST", {'a', 'b', 0, 0});
  chunks[4] = 2;
  PutChunk(&chunks, "fmt ", Format(1, 1, 16000, 16));
  PutChunk(&chunks, "data", d16);
  status = Decode(Riff(chunks), &info, &s);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().find('\0'), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("chunk '\\x00\\x00fm' at byte 22"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("the file has"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace kestrel::audio
