// Whisper-tiny end to end on the real CTranslate2 folder: log-mel window, AudioEncoder, then the
// decoder in a Session (cross_kv, prefill, decode) decoding greedily with faster-whisper's
// prompt and suppressed tokens; the token ids must be faster-whisper's own
// (tests/py/faster_whisper_ref.py) on espeak-ng clips of several voices and speeds, one German.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio/wav_file.h"
#include "runtime/audio_encoder.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace kestrel {
namespace {

const std::string kFolder = KESTREL_WHISPER_CT2_DIR;

std::vector<int32_t> Ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) ids.push_back(std::stoi(item));
  }
  return ids;
}

struct Clip {
  std::string wav;
  std::vector<int32_t> prompt, suppress, blank, want;
  int32_t eot = -1;
};

// One folder per weight type: ctest runs the instances in parallel.
std::vector<Clip> References(const std::string& weights) {
  const std::string dir = test::TmpPath("whisper-clips-" + weights);
  EXPECT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/faster_whisper_ref.py " + kFolder + " " + dir),
            "");
  std::ifstream in(dir + "/reference.txt");
  std::vector<Clip> clips;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string item; std::getline(fields, item, '|');) f.push_back(item);
    if (f.size() == 5) f.push_back("");  // nothing transcribed
    if (f.size() != 6) continue;
    clips.push_back({f[0], Ids(f[1]), Ids(f[2]), Ids(f[3]), Ids(f[5]), std::stoi(f[4])});
  }
  return clips;
}

// Greedy decoding as CTranslate2 does it at beam size 1.
std::vector<int32_t> Greedy(Session& session, const Clip& c) {
  std::vector<int32_t> out;
  EXPECT_TRUE(session.Prefill(c.prompt.data(), c.prompt.size()).ok());
  std::vector<float> logits(session.vocab_size());
  while (c.prompt.size() + out.size() < session.context_length()) {
    std::copy(session.logits(), session.logits() + logits.size(), logits.begin());
    for (int32_t id : c.suppress) logits[id] = -std::numeric_limits<float>::infinity();
    if (out.empty()) {
      for (int32_t id : c.blank) logits[id] = -std::numeric_limits<float>::infinity();
    }
    const int32_t token =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (token == c.eot) break;
    out.push_back(token);
    if (!session.Decode(token).ok()) break;
  }
  return out;
}

class WhisperDecoder : public testing::TestWithParam<const char*> {};

TEST_P(WhisperDecoder, TranscribesAsFasterWhisper) {
  const std::string weights = GetParam();
  const std::string kes = test::TmpPath("whisper-tiny-full-" + weights + ".kes");
  const test::ProcessResult r = test::Convert({kFolder, kes, "--weights", weights});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes, &model);
  ASSERT_TRUE(s.ok()) << s.message();
  AudioEncoderOptions encoder_options;
  encoder_options.n_threads = 2;
  std::unique_ptr<AudioEncoder> encoder;
  s = AudioEncoder::Create(*model, encoder_options, &encoder);
  ASSERT_TRUE(s.ok()) << s.message();
  SessionOptions session_options;
  session_options.n_threads = 2;
  std::unique_ptr<Session> session;
  s = Session::Create(*model, session_options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(session->context_length(), 448u);

  std::unique_ptr<audio::LogMelSpectrogram> mel;
  ASSERT_TRUE(audio::LogMelSpectrogram::Create(80, &mel).ok());
  const std::vector<Clip> clips = References(weights);
  ASSERT_EQ(clips.size(), 5u);
  size_t same = 0;
  for (const Clip& c : clips) {
    audio::WavInfo info;
    std::vector<float> samples;
    ASSERT_TRUE(audio::ReadWav(c.wav, &info, &samples).ok());
    ASSERT_EQ(info.sample_rate, 16000u);
    const size_t frames = audio::LogMelSpectrogram::FrameCount(samples.size());
    std::vector<float> all(80 * frames), window(80 * 3000), hidden(1500 * encoder->d_model());
    mel->Compute(samples.data(), samples.size(), all.data());
    audio::CopyMelWindow(all.data(), 80, frames, 0, window.data());
    encoder->Encode(window.data(), hidden.data());
    session->Reset();
    ASSERT_TRUE(session->SetEncoderStates(hidden.data(), 1500).ok());
    const std::vector<int32_t> got = Greedy(*session, c);
    same += got == c.want;
    std::string text = session->model().tokenizer().Decode(got);
    std::printf("%s weights, %s: %s (%zu tokens)%s\n", weights.c_str(), c.wav.c_str(),
                text.c_str(), got.size(), got == c.want ? "" : " DIFFERENT");
    if (weights == std::string("f32")) {
      EXPECT_EQ(got, c.want) << c.wav << "\nfaster-whisper: "
                             << session->model().tokenizer().Decode(c.want);
    }
  }
  std::printf("%s weights: %zu of %zu clips as faster-whisper\n", weights.c_str(), same,
              clips.size());
  if (weights != std::string("f32")) {
    EXPECT_GE(same, clips.size() - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, WhisperDecoder, testing::Values("f32", "q8"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace kestrel
