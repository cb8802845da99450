// The C API's transcriber (kes_transcriber, kes_transcribe_pcm / _file) against `kestrel
// transcribe`: the same segments, times and text, from the WAV file and from its samples at their
// own rate and at 16 kHz, with and without timestamps, one transcriber taking each call's
// options. On the tiny random-weight Whisper of tests/py/make_tiny_whisper.py (its 4-second
// window makes several windows of a 6-second clip) everywhere, and in native builds without
// sanitizers on the real Whisper-tiny (scripts/fetch-model.sh whisper) with language detection.
// The speech is espeak-ng's at 22.05 kHz, as the Whisper tests have it. Also the model kinds it
// refuses, its argument and file errors, and kes_transcriber_abort (before a call, from the
// segment callback and from another thread).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kestrel/kestrel.h"
#include "runtime/audio/resample.h"
#include "runtime/audio/wav_file.h"
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

// Files this process made, removed when the tests are done.
std::vector<std::string>& Scratch() {
  static std::vector<std::string> files;
  return files;
}
class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& f : Scratch()) std::remove(f.c_str());
  }
};
const auto* const kRemoveScratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

// espeak-ng's 22.05 kHz speech of two sentences (about 6 seconds), made once per process.
const std::string& Clip() {
  static const std::string wav = [] {
    const std::string path = test::ScratchPath("c-api-speech.wav");
    Scratch().push_back(path);
    EXPECT_EQ(test::RunHostCommand("espeak-ng -w '" + path +
                                   "' 'The quick brown fox jumps over the lazy dog. A kestrel "
                                   "hovers over the field, then drops.'"),
              "")
        << "espeak-ng is installed by scripts/install-deps.sh";
    return path;
  }();
  return wav;
}

// The tiny Whisper (English-only), converted once per process.
const std::string& TinyWhisper() {
  static const std::string kes = [] {
    const std::string folder = test::ScratchPath("c-api-tiny-whisper");
    EXPECT_EQ(test::MakeTinyWhisper(folder), "");
    const std::string path = folder + ".kes";
    Scratch().push_back(path);
    const ProcessResult r = test::Convert({folder, path});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    test::RunHostCommand("rm -rf '" + folder + "'");
    return path;
  }();
  return kes;
}

test::TranscriberPtr Create(const kes_model* model, size_t threads) {
  kes_transcriber_params params = kes_transcriber_default_params();
  params.n_threads = threads;
  kes_transcriber* t = nullptr;
  EXPECT_EQ(kes_transcriber_create(model, &params, &t), KES_OK) << kes_last_error();
  return test::TranscriberPtr(t);
}

std::string Timestamp(double seconds) {
  const long ms = std::lround(seconds * 1000);
  char text[32];
  std::snprintf(text, sizeof(text), "%02ld:%02ld.%03ld", ms / 60000, ms / 1000 % 60, ms % 1000);
  return text;
}

// The segments as `kestrel transcribe` prints them (tools/cmd_transcribe.cc).
struct Printed {
  bool timestamps = false;
  std::string out;
  size_t segments = 0;
  static void Add(void* user_data, const kes_segment* s) {
    auto& p = *static_cast<Printed*>(user_data);
    const std::string text(s->text, s->text_len);
    p.out +=
        p.timestamps ? "[" + Timestamp(s->start) + " --> " + Timestamp(s->end) + "]" + text : text;
    p.out += "\n";
    ++p.segments;
  }
};

std::vector<std::string> CliArgs(const std::string& model, const char* language, bool timestamps) {
  std::vector<std::string> args = {"transcribe", model, Clip(), "--threads", "2"};
  if (language != nullptr) args.insert(args.end(), {"--language", language});
  if (timestamps) args.push_back("--timestamps");
  return args;
}

// Transcribes the clip with `kestrel transcribe` and through `t` from the file and from its
// samples at 22.05 kHz (and at 16 kHz with `at_16k`), expecting the same printout each time.
void ExpectCliTranscript(const std::string& model, kes_transcriber* t, const char* language,
                         bool timestamps, bool at_16k, std::string* transcript = nullptr) {
  SCOPED_TRACE(std::string(timestamps ? "timestamps" : "no timestamps") + ", language " +
               (language ? language : "detected"));
  const ProcessResult cli = test::Cli(CliArgs(model, language, timestamps));
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << Describe(cli);
  ASSERT_FALSE(cli.out.empty()) << "no segments to compare";
  if (transcript != nullptr) *transcript = cli.out;

  kes_transcribe_params params = kes_transcribe_default_params();
  params.language = language;
  params.timestamps = timestamps ? 1 : 0;
  Printed from_file, from_samples, from_16k;
  from_file.timestamps = from_samples.timestamps = from_16k.timestamps = timestamps;
  ASSERT_EQ(kes_transcribe_file(t, Clip().c_str(), &params, Printed::Add, &from_file), KES_OK)
      << kes_transcriber_last_error(t);
  EXPECT_EQ(from_file.out, cli.out) << "kes_transcribe_file";

  audio::WavInfo info;
  std::vector<float> samples, resampled;
  ASSERT_TRUE(audio::ReadWav(Clip(), &info, &samples).ok());
  ASSERT_EQ(info.sample_rate, 22050u);
  ASSERT_EQ(kes_transcribe_pcm(t, samples.data(), samples.size(), info.sample_rate, &params,
                               Printed::Add, &from_samples),
            KES_OK)
      << kes_transcriber_last_error(t);
  EXPECT_EQ(from_samples.out, cli.out) << "kes_transcribe_pcm at 22.05 kHz";
  if (!at_16k) return;
  ASSERT_TRUE(audio::Resample(samples, info.sample_rate, 16000, &resampled).ok());
  ASSERT_EQ(kes_transcribe_pcm(t, resampled.data(), resampled.size(), 16000, &params, Printed::Add,
                               &from_16k),
            KES_OK)
      << kes_transcriber_last_error(t);
  EXPECT_EQ(from_16k.out, cli.out) << "kes_transcribe_pcm at 16 kHz";
}

TEST(CApiTranscribe, TinyWhisperEqualsKestrelTranscribe) {
  test::ModelPtr model = test::Open(TinyWhisper());
  ASSERT_NE(model, nullptr);
  // One transcriber for every call: each call's options replace the last's.
  test::TranscriberPtr t = Create(model.get(), 2);
  ASSERT_NE(t, nullptr);
  for (bool timestamps : {true, false, true}) {
    ExpectCliTranscript(TinyWhisper(), t.get(), nullptr, timestamps, true);
  }
  ExpectCliTranscript(TinyWhisper(), t.get(), "en", false, true);
  const char* code = nullptr;
  size_t len = 0;
  ASSERT_EQ(kes_transcriber_language(t.get(), &code, &len), KES_OK);
  EXPECT_EQ(std::string(code, len), "en") << "an English-only model's";

  // No samples: no segments, and no error.
  Printed none;
  EXPECT_EQ(kes_transcribe_pcm(t.get(), nullptr, 0, 16000, nullptr, Printed::Add, &none), KES_OK);
  EXPECT_EQ(none.segments, 0u);
}

TEST(CApiTranscribe, ErrorsSayWhatWasExpected) {
  test::ModelPtr model = test::Open(TinyWhisper());
  ASSERT_NE(model, nullptr);
  test::TranscriberPtr t = Create(model.get(), 1);
  ASSERT_NE(t, nullptr);
  const std::vector<float> samples(16000, 0.0f);
  auto error = [&] { return std::string(kes_transcriber_last_error(t.get())); };

  kes_transcribe_params params = kes_transcribe_default_params();
  params.language = "xx";
  EXPECT_EQ(
      kes_transcribe_pcm(t.get(), samples.data(), samples.size(), 16000, &params, nullptr, nullptr),
      KES_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown language 'xx'"), std::string::npos) << error();
  params = kes_transcribe_default_params();
  params.task = KES_TASK_TRANSLATE;
  EXPECT_EQ(
      kes_transcribe_pcm(t.get(), samples.data(), samples.size(), 16000, &params, nullptr, nullptr),
      KES_INVALID_ARGUMENT);
  EXPECT_NE(error().find("English-only"), std::string::npos) << error();
  params = kes_transcribe_default_params();
  params.task = 7;
  EXPECT_EQ(
      kes_transcribe_pcm(t.get(), samples.data(), samples.size(), 16000, &params, nullptr, nullptr),
      KES_INVALID_ARGUMENT);
  EXPECT_NE(error().find("KES_TASK_TRANSCRIBE"), std::string::npos) << error();
  EXPECT_EQ(
      kes_transcribe_pcm(t.get(), samples.data(), samples.size(), 0, nullptr, nullptr, nullptr),
      KES_INVALID_ARGUMENT);
  EXPECT_EQ(kes_transcribe_pcm(t.get(), nullptr, 5, 16000, nullptr, nullptr, nullptr),
            KES_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "samples is NULL");
  // A good call after the failed ones works, with the defaults again.
  EXPECT_EQ(
      kes_transcribe_pcm(t.get(), samples.data(), samples.size(), 16000, nullptr, nullptr, nullptr),
      KES_OK)
      << error();

  const std::string missing = test::ScratchPath("no-such.wav");
  EXPECT_EQ(kes_transcribe_file(t.get(), missing.c_str(), nullptr, nullptr, nullptr), KES_IO_ERROR);
  EXPECT_NE(error().find(missing), std::string::npos) << error();
  EXPECT_EQ(kes_transcribe_file(t.get(), TinyWhisper().c_str(), nullptr, nullptr, nullptr),
            KES_INVALID_ARGUMENT)
      << "a .kes file is no WAV";
  EXPECT_NE(error().find("RIFF"), std::string::npos) << error();

  kes_transcriber_params bad = kes_transcriber_default_params();
  bad.struct_size = sizeof(size_t) - 1;  // shorter than its own struct_size field
  kes_transcriber* refused = nullptr;
  EXPECT_EQ(kes_transcriber_create(model.get(), &bad, &refused), KES_INVALID_ARGUMENT);
  EXPECT_EQ(refused, nullptr);
}

// The segment callback of a transcription that its first segment aborts.
struct AbortAtFirstSegment {
  kes_transcriber* t;
  Printed printed;
  static void Add(void* user_data, const kes_segment* s) {
    auto& a = *static_cast<AbortAtFirstSegment*>(user_data);
    Printed::Add(&a.printed, s);
    if (a.printed.segments == 1) {
      EXPECT_EQ(kes_transcriber_abort(a.t), KES_OK);
    }
  }
};

// An abort requested before a call stops it before its first window (no segment), with
// KES_ABORTED and a message that names the abort; one requested during the call (here by the
// segment callback) stops it before its next window, after the segments of those before; the
// answer clears the request, so that the next call transcribes the whole clip again.
TEST(CApiTranscribe, AbortStopsTheCallBeforeItsNextWindow) {
  test::ModelPtr model = test::Open(TinyWhisper());
  ASSERT_NE(model, nullptr);
  test::TranscriberPtr t = Create(model.get(), 1);
  ASSERT_NE(t, nullptr);
  auto error = [&] { return std::string(kes_transcriber_last_error(t.get())); };
  audio::WavInfo info;
  std::vector<float> samples;
  ASSERT_TRUE(audio::ReadWav(Clip(), &info, &samples).ok());
  kes_transcribe_params params = kes_transcribe_default_params();
  params.timestamps = 1;
  auto transcribe = [&](kes_segment_callback callback, void* user_data) {
    return kes_transcribe_pcm(t.get(), samples.data(), samples.size(), info.sample_rate, &params,
                              callback, user_data);
  };
  Printed whole;
  whole.timestamps = true;
  ASSERT_EQ(transcribe(Printed::Add, &whole), KES_OK) << error();
  ASSERT_GE(whole.segments, 2u);

  ASSERT_EQ(kes_transcriber_abort(t.get()), KES_OK);
  Printed none;
  EXPECT_EQ(transcribe(Printed::Add, &none), KES_ABORTED);
  EXPECT_EQ(error(), "aborted by kes_transcriber_abort");
  EXPECT_EQ(none.segments, 0u) << "stopped before the first window";
  ASSERT_EQ(kes_transcriber_abort(t.get()), KES_OK);
  EXPECT_EQ(kes_transcribe_file(t.get(), Clip().c_str(), &params, Printed::Add, &none),
            KES_ABORTED);
  EXPECT_EQ(none.segments, 0u);

  AbortAtFirstSegment first{t.get(), {}};
  first.printed.timestamps = true;
  EXPECT_EQ(transcribe(AbortAtFirstSegment::Add, &first), KES_ABORTED) << error();
  EXPECT_LT(first.printed.segments, whole.segments) << "the clip's later windows were skipped";
  EXPECT_EQ(whole.out.compare(0, first.printed.out.size(), first.printed.out), 0)
      << "the segments before the stop are the whole run's";

  Printed again;
  again.timestamps = true;
  ASSERT_EQ(transcribe(Printed::Add, &again), KES_OK) << error();
  EXPECT_EQ(again.out, whole.out);
  EXPECT_EQ(kes_transcriber_abort(nullptr), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_last_error(), "transcriber is NULL");
}

// Another thread's abort stops the call under way (or, when it comes as a call ends, the next
// one) with KES_ABORTED. TSan-able.
TEST(CApiTranscribe, AbortFromAnotherThreadStopsTheCallUnderWay) {
  test::ModelPtr model = test::Open(TinyWhisper());
  ASSERT_NE(model, nullptr);
  test::TranscriberPtr t = Create(model.get(), 1);
  ASSERT_NE(t, nullptr);
  audio::WavInfo info;
  std::vector<float> samples, at_16k;
  ASSERT_TRUE(audio::ReadWav(Clip(), &info, &samples).ok());
  ASSERT_TRUE(audio::Resample(samples, info.sample_rate, 16000, &at_16k).ok());
  std::atomic<bool> transcribing{false}, aborted{false};
  std::thread aborter([&] {
    while (!transcribing.load()) std::this_thread::yield();
    EXPECT_EQ(kes_transcriber_abort(t.get()), KES_OK);
    aborted.store(true);
  });
  transcribing.store(true);
  const auto transcribe = [&] {
    return kes_transcribe_pcm(t.get(), at_16k.data(), at_16k.size(), 16000, nullptr, nullptr,
                              nullptr);
  };
  // Calls until the abort has been asked, however late a loaded machine runs the aborter; the
  // request stays until a call answers it, so one that ended too soon to see it leaves it to
  // the next call.
  kes_status s = KES_OK;
  while (s == KES_OK && !aborted.load()) s = transcribe();
  if (s == KES_OK) s = transcribe();
  aborter.join();
  EXPECT_EQ(s, KES_ABORTED) << kes_transcriber_last_error(t.get());
  EXPECT_EQ(transcribe(), KES_OK) << kes_transcriber_last_error(t.get());
}

TEST(CApiTranscribe, EachHandleTakesItsOwnKindOfModel) {
  test::ModelPtr whisper = test::Open(TinyWhisper());
  ASSERT_NE(whisper, nullptr);
  kes_encoder* encoder = nullptr;
  EXPECT_EQ(kes_encoder_create(whisper.get(), nullptr, nullptr, 0, &encoder), KES_UNSUPPORTED);
  EXPECT_NE(std::string(kes_last_error()).find("kes_transcriber"), std::string::npos)
      << kes_last_error();
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(whisper.get(), nullptr, nullptr, 0, &session), KES_UNSUPPORTED);
  EXPECT_NE(std::string(kes_last_error()).find("speech model"), std::string::npos)
      << kes_last_error();

  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny), "");
  test::ModelPtr decoder = test::Open(tiny.kes);
  ASSERT_NE(decoder, nullptr);
  kes_transcriber* t = nullptr;
  EXPECT_EQ(kes_transcriber_create(decoder.get(), nullptr, &t), KES_UNSUPPORTED);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(std::string(kes_last_error()).find("kes_session"), std::string::npos)
      << kes_last_error();
}

// Left out where the model_ tests are (cross builds, under qemu) and of the sanitizer builds
// (two minutes under ASan), which run the tiny Whisper's test above.
#if !KESTREL_CROSS_BUILD && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// The real Whisper-tiny (multilingual): the language detected, then given, with timestamps.
TEST(CApiTranscribe, RealWhisperTinyEqualsKestrelTranscribe) {
  const std::string kes = test::ScratchPath("c-api-whisper-tiny.kes");
  Scratch().push_back(kes);
  const ProcessResult r = test::Convert({KESTREL_WHISPER_CT2_DIR, kes});
  ASSERT_TRUE(r.exited && r.exit_code == 0)
      << Describe(r) << " (fetch the model with scripts/fetch-model.sh whisper)";
  test::ModelPtr model = test::Open(kes);
  ASSERT_NE(model, nullptr);
  test::TranscriberPtr t = Create(model.get(), 2);
  ASSERT_NE(t, nullptr);
  std::string transcript;
  ExpectCliTranscript(kes, t.get(), nullptr, false, false, &transcript);
  EXPECT_NE(transcript.find("lazy dog"), std::string::npos) << transcript;
  const char* code = nullptr;
  size_t len = 0;
  ASSERT_EQ(kes_transcriber_language(t.get(), &code, &len), KES_OK);
  EXPECT_EQ(std::string(code, len), "en") << "detected";
  ExpectCliTranscript(kes, t.get(), "en", true, false);
}
#endif

}  // namespace
}  // namespace kestrel
