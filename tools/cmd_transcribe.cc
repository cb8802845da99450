// kestrel transcribe MODEL.kes AUDIO.wav: speech to text with a Whisper model. The WAV file is
// resampled to 16 kHz when needed, turned into a log-mel spectrogram, and decoded window by
// window (runtime/transcriber.h).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio/resample.h"
#include "runtime/audio/wav_file.h"
#include "runtime/model.h"
#include "runtime/transcriber.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

// The error for a command line without both paths, the model's and the audio's.
const char kNoInput[] = "expected a model and a WAV file";

const char kTranscribeUsage[] =
    "usage: kestrel transcribe MODEL.kes AUDIO.wav [options]\n"
    "  --language XX       the spoken language, e.g. en, de (default: detected from the first\n"
    "                      30 seconds; English-only models: en)\n"
    "  --task T            transcribe (default) or translate (to English)\n"
    "  --timestamps        segment timestamps\n"
    "  --previous-text     the text so far as the prompt of each next 30-second window\n"
    "                      (faster-whisper's condition_on_previous_text; default "
    "off)\n" KESTREL_THREADS_USAGE
    "  --json              print {\"language\", \"text\", \"segments\": [{\"start\", \"end\",\n"
    "                      \"text\", \"tokens\"}], and the timings}\n"
    "  --disable-targets T SIMD targets not to use, e.g. AVX3_DL (compare targets on one CPU)\n"
    "Greedy decoding as faster-whisper's beam_size 1, temperature 0.\n";

struct Segment {
  double start, end;
  std::vector<int32_t> tokens;
  std::string text;
};

struct Collector {
  const Tokenizer* tokenizer;
  int32_t eot;
  std::vector<Segment> segments;
  bool stream;  // print each segment as it comes
  bool timestamps;
};

std::string Timestamp(double seconds) {
  const long ms = std::lround(seconds * 1000);
  char text[32];
  std::snprintf(text, sizeof(text), "%02ld:%02ld.%03ld", ms / 60000, ms / 1000 % 60, ms % 1000);
  return text;
}

void Collect(void* context, const TranscriptSegment& s) {
  Collector& c = *static_cast<Collector*>(context);
  Segment seg{s.start, s.end, std::vector<int32_t>(s.tokens, s.tokens + s.n_tokens), {}};
  std::vector<int32_t> text_ids;
  for (int32_t id : seg.tokens) {
    if (id < c.eot) text_ids.push_back(id);
  }
  seg.text = c.tokenizer->Decode(text_ids);
  if (c.stream) {
    if (c.timestamps) {
      std::printf("[%s --> %s]%s\n", Timestamp(s.start).c_str(), Timestamp(s.end).c_str(),
                  seg.text.c_str());
    } else {
      std::printf("%s\n", seg.text.c_str());
    }
    std::fflush(stdout);
  }
  c.segments.push_back(std::move(seg));
}

}  // namespace

int TranscribeCommand(const std::vector<std::string>& args) {
  std::string model_path, audio_path, task = "transcribe";
  bool json = false;
  TranscriberOptions options;
  options.n_threads = DefaultThreads();
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "--language") {
      *s = flags.Value(arg, &options.language);
    } else if (arg == "--task") {
      *s = flags.Value(arg, &task);
      if (s->ok() && task != "transcribe" && task != "translate") {
        *s = Status::Error("--task: expected transcribe or translate, got '" + task + "'");
      }
    } else if (arg == "--timestamps") {
      options.timestamps = true;
    } else if (arg == "--previous-text") {
      options.condition_on_previous_text = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--disable-targets") {
      *s = flags.DisableTargets(arg);
    } else if (!model_path.empty() && audio_path.empty() && !arg.empty() && arg[0] != '-') {
      audio_path = arg;  // the second path; the first is the model's
    } else {
      return ThreadsFlag(flags, arg, &options.n_threads, s);
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "transcribe", kTranscribeUsage, flag, &model_path, kNoInput)) {
    return *exit_code;
  }
  if (audio_path.empty()) return Fail(std::string(kNoInput) + "\n" + kTranscribeUsage);
  options.translate = task == "translate";

  std::unique_ptr<Model> model;
  Status s = OpenModel(model_path, ModelKind::kSpeech, &model);
  if (!s.ok()) return Fail(s.message());
  std::unique_ptr<Transcriber> transcriber;
  s = Transcriber::Create(*model, options, &transcriber);
  if (!s.ok()) return Fail(model_path + ": " + s.message());

  audio::WavInfo info;
  std::vector<float> samples;
  s = audio::ReadWav(audio_path, &info, &samples);
  if (s.ok() && info.sample_rate != audio::kWhisperSampleRate) {
    std::vector<float> resampled;
    s = audio::Resample(samples, info.sample_rate, audio::kWhisperSampleRate, &resampled);
    samples.swap(resampled);
  }
  if (!s.ok()) return Fail(s.message());
  std::unique_ptr<audio::LogMelSpectrogram> mel;
  s = audio::LogMelSpectrogram::Create(static_cast<int>(transcriber->n_mels()), &mel);
  if (!s.ok()) return Fail(s.message());
  const size_t frames = audio::LogMelSpectrogram::FrameCount(samples.size());
  std::vector<float> features(transcriber->n_mels() * frames);
  const Clock::time_point start = Clock::now();
  mel->Compute(samples.data(), samples.size(), features.data());
  const double mel_seconds = Seconds(start, Clock::now());

  Collector collector{
      &model->tokenizer(), transcriber->vocabulary().eot, {}, !json, options.timestamps};
  TranscribeStats stats;
  s = transcriber->Transcribe(features.data(), frames, Collect, &collector, &stats);
  if (!s.ok()) return Fail(s.message());
  const double total_seconds = Seconds(start, Clock::now());
  const double audio_seconds = static_cast<double>(samples.size()) / audio::kWhisperSampleRate;
  const std::string language(
      WhisperVocabulary::LanguageCode(model->tokenizer(), transcriber->language()));
  if (json) {
    std::string text;
    for (const Segment& seg : collector.segments) text += seg.text;
    std::printf("{\"language\": \"%s\", \"text\": \"%s\",\n \"segments\": [", language.c_str(),
                JsonEscape(text).c_str());
    for (size_t i = 0; i < collector.segments.size(); ++i) {
      const Segment& seg = collector.segments[i];
      std::printf("%s{\"start\": %.2f, \"end\": %.2f, \"text\": \"%s\", \"tokens\": [",
                  i ? ",\n  " : "\n  ", seg.start, seg.end, JsonEscape(seg.text).c_str());
      for (size_t j = 0; j < seg.tokens.size(); ++j) {
        std::printf("%s%d", j ? ", " : "", seg.tokens[j]);
      }
      std::printf("]}");
    }
    std::printf(
        "],\n \"audio_seconds\": %.3f, \"windows\": %zu, \"tokens\": %zu,\n"
        " \"mel_seconds\": %.4f, \"encoder_seconds\": %.4f, \"decoder_seconds\": %.4f,"
        " \"total_seconds\": %.4f, \"real_time_factor\": %.3f}\n",
        audio_seconds, stats.windows, stats.tokens, mel_seconds, stats.encoder_seconds,
        stats.decoder_seconds, total_seconds, audio_seconds / total_seconds);
  } else {
    std::fprintf(stderr,
                 "%.1f s of audio (%s) in %.2f s: %zu windows, encoder %.2f s, decoder %.2f s "
                 "(%zu tokens), real-time factor %.1f\n",
                 audio_seconds, language.c_str(), total_seconds, stats.windows,
                 stats.encoder_seconds, stats.decoder_seconds, stats.tokens,
                 audio_seconds / total_seconds);
  }
  return 0;
}

}  // namespace kestrel::cli
