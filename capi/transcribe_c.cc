// The C API's transcriber: Whisper from PCM samples or a WAV file, each segment's times and text
// handed to a callback. The steps are `kestrel transcribe`'s (tools/cmd_transcribe.cc): the
// samples resampled to 16 kHz when they are not, the log-mel spectrogram of the whole recording,
// then Transcriber::Transcribe; a segment's text is its text tokens' as the CLI decodes them.
// Compiled with KESTREL_WITH_AUDIO=ON only (else capi/transcribe_without_audio_c.cc); the
// parameters' defaults, the same in both, are in capi/transcribe_params_c.cc.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capi/c_call.h"
#include "capi/c_handles.h"
#include "kestrel/kestrel.h"
#include "runtime/audio/log_mel.h"
#include "runtime/audio/resample.h"
#include "runtime/audio/wav_file.h"
#include "runtime/cpu_count.h"
#include "runtime/executor.h"
#include "runtime/transcriber.h"
#include "runtime/whisper_vocabulary.h"

using namespace kestrel::capi;  // NOLINT: the C API's call helpers (c_call.h)

// The spectrogram, the segment text and the options are sized by kes_transcriber_create, so
// that transcribing 16 kHz samples allocates nothing.
struct kes_transcriber {
  const kes_model* model = nullptr;
  std::unique_ptr<kestrel::Transcriber> transcriber;
  std::unique_ptr<kestrel::audio::LogMelSpectrogram> mel;
  kestrel::TranscriberOptions options;
  std::vector<float> features;   // the recording's log-mel spectrogram; grows past its size
  std::vector<float> resampled;  // samples at 16 kHz, for other rates
  std::string text;              // one segment's text, reserved for the longest
  // kes_transcriber_abort sets it from any thread; the transcriber reads it before each window
  // (TranscriberOptions::stop, pointing here), and the call it stops clears it.
  std::atomic<bool> abort{false};

  mutable std::string error;  // kes_transcriber_last_error (as kes_encoder's)
};

namespace {

constexpr uint32_t kRate = kestrel::audio::kWhisperSampleRate;

// Refuses a model that is not Whisper, with what to use instead.
CallStatus CheckIsSpeechModel(const kestrel::Model& model) {
  if (model.has_audio_encoder() && model.has_decoder()) return Ok();
  if (model.has_audio_encoder()) {
    return Error(KES_UNSUPPORTED, "this speech model (" + model.meta().architecture()->str() +
                                      ") has an audio encoder but no decoder: transcribers need "
                                      "Whisper's decoder too");
  }
  if (model.is_encoder()) {
    return WrongModel(model, "an encoder model",
                      "embed with a kes_encoder; transcribers take speech models (Whisper)");
  }
  return WrongModel(model, "a text decoder",
                    "generate with a kes_session; transcribers take speech models (Whisper)");
}

bool IsFlag(int32_t v) { return v == 0 || v == 1; }

// The runtime's options for a call's parameters, set on the transcriber (which checks the
// language against the model). Nothing here allocates for a valid language code.
CallStatus ApplyParams(kes_transcriber* t, const kes_transcribe_params* in) {
  kes_transcribe_params p;
  KES_C_RETURN_IF_ERROR(
      kestrel::capi::ReadParams(in, kes_transcribe_default_params(), "kes_transcribe_params", &p));
  if (p.task != KES_TASK_TRANSCRIBE && p.task != KES_TASK_TRANSLATE) {
    return Error(KES_INVALID_ARGUMENT,
                 "kes_transcribe_params.task: expected "
                 "KES_TASK_TRANSCRIBE or KES_TASK_TRANSLATE, found " +
                     std::to_string(p.task));
  }
  if (!IsFlag(p.timestamps) || !IsFlag(p.previous_text)) {
    return Error(KES_INVALID_ARGUMENT,
                 "kes_transcribe_params: expected timestamps and "
                 "previous_text 0 or 1, found " +
                     std::to_string(p.timestamps) + " and " + std::to_string(p.previous_text));
  }
  if (p.reserved0 != 0) {
    return Error(KES_INVALID_ARGUMENT, "kes_transcribe_params.reserved0 != 0");
  }
  kestrel::TranscriberOptions& o = t->options;
  o.language.assign(p.language != nullptr ? p.language : "");
  o.translate = p.task == KES_TASK_TRANSLATE;
  o.timestamps = p.timestamps != 0;
  o.condition_on_previous_text = p.previous_text != 0;
  return FromStatus(KES_INVALID_ARGUMENT, t->transcriber->SetOptions(o));
}

// What Transcribe's sink needs to hand a segment to the caller.
struct SegmentContext {
  kes_transcriber* t;
  kes_segment_callback callback;
  void* user_data;
};

// A segment's text as the CLI makes it, Tokenizer::Decode of its text tokens (those below
// <|endoftext|>), built in the transcriber's reserved string instead of a new one.
void SendSegment(void* context, const kestrel::TranscriptSegment& s) {
  auto& c = *static_cast<SegmentContext*>(context);
  if (c.callback == nullptr) return;
  const kestrel::Tokenizer& tokenizer = c.t->model->model->tokenizer();
  const int32_t eot = c.t->transcriber->vocabulary().eot;
  std::string& text = c.t->text;
  text.clear();
  for (size_t i = 0; i < s.n_tokens; ++i) {
    if (s.tokens[i] < eot) text.append(tokenizer.TokenText(s.tokens[i]));
  }
  const kestrel::TokenizerConfig& config = tokenizer.config();
  const bool spaced =
      config.add_space_prefix || config.algorithm == kestrel::TokenizerAlgorithm::kWordPiece;
  const size_t skip = spaced && !text.empty() && text[0] == ' ' ? 1 : 0;
  kes_segment segment = kestrel::capi::ZeroedStruct<kes_segment>();
  segment.start = s.start;
  segment.end = s.end;
  segment.text = text.data() + skip;
  segment.text_len = text.size() - skip;
  segment.tokens = s.tokens;
  segment.n_tokens = s.n_tokens;
  c.callback(c.user_data, &segment);
}

// Transcribes samples[n] at 16 kHz: the spectrogram into the transcriber's buffer (grown only
// for a recording longer than any before), then the windows.
CallStatus Run(kes_transcriber* t, const float* samples, size_t n, kes_segment_callback callback,
               void* user_data) {
  const size_t n_mels = t->transcriber->n_mels();
  const size_t frames = kestrel::audio::LogMelSpectrogram::FrameCount(n);
  if (t->features.size() < n_mels * frames) t->features.resize(n_mels * frames);
  t->mel->Compute(samples, n, t->features.data());
  SegmentContext context{t, callback, user_data};
  kestrel::TranscribeStats stats;
  const kestrel::Status s =
      t->transcriber->Transcribe(t->features.data(), frames, SendSegment, &context, &stats);
  if (s.ok() || !stats.stopped) return FromStatus(KES_INTERNAL, s);
  t->abort.store(false);  // answered
  return Error(KES_ABORTED, "aborted by kes_transcriber_abort");
}

// Resamples samples[n] at `rate` into the transcriber's buffer, as the CLI resamples a WAV file.
CallStatus ToWhisperRate(kes_transcriber* t, std::vector<float> samples, uint32_t rate) {
  return FromStatus(KES_INVALID_ARGUMENT,
                    kestrel::audio::Resample(samples, rate, kRate, &t->resampled));
}

// kes_transcriber_create's checks of the handle's model and `params`, and the transcriber made
// and sized in `handle`.
CallStatus SetUp(kes_transcriber* handle, const kes_transcriber_params* params) {
  const kes_model* model = handle->model;
  if (model == nullptr) return NullArgument("model");
  KES_C_RETURN_IF_ERROR(CheckIsSpeechModel(*model->model));
  kes_transcriber_params p;
  KES_C_RETURN_IF_ERROR(kestrel::capi::ReadParams(params, kes_transcriber_default_params(),
                                                  "kes_transcriber_params", &p));
  // At most a day: the spectrogram of longer ones would not fit most memories anyway.
  if (p.max_audio_seconds > 24 * 3600) {
    return Error(KES_INVALID_ARGUMENT,
                 "kes_transcriber_params.max_audio_seconds: expected at "
                 "most 86400, found " +
                     std::to_string(p.max_audio_seconds));
  }
  handle->options.n_threads = p.n_threads == 0 ? kestrel::PhysicalCores() : p.n_threads;
  handle->options.stop = &handle->abort;
  KES_C_RETURN_IF_ERROR(kestrel::capi::CheckCanRunThreads(handle->options.n_threads));
  const kestrel::Model& m = *model->model;
  KES_C_RETURN_IF_ERROR(FromStatus(
      KES_BAD_MODEL, kestrel::Transcriber::Create(m, handle->options, &handle->transcriber)));
  const kestrel::Transcriber& tr = *handle->transcriber;
  KES_C_RETURN_IF_ERROR(FromStatus(
      KES_BAD_MODEL,
      kestrel::audio::LogMelSpectrogram::Create(static_cast<int>(tr.n_mels()), &handle->mel)));
  handle->features.resize(
      tr.n_mels() * kestrel::audio::LogMelSpectrogram::FrameCount(p.max_audio_seconds * kRate));
  // A segment has at most the decoder's context of tokens (Transcriber's generated tokens).
  size_t longest_text = 0;
  for (size_t id = 0; id < m.vocab_size(); ++id) {
    longest_text = std::max(longest_text, m.tokenizer().TokenText(static_cast<int32_t>(id)).size());
  }
  handle->text.reserve(tr.session().context_length() * longest_text);
  // Room for any language code, so that setting one never allocates (they are 2 or 3 bytes).
  handle->options.language.reserve(8);
  return Ok();
}

}  // namespace

extern "C" {

kes_status kes_transcriber_create(const kes_model* model, const kes_transcriber_params* params,
                                  kes_transcriber** transcriber) {
  return kestrel::capi::CreateHandle(model, "transcriber", transcriber,
                                     [&](kes_transcriber* t) { return SetUp(t, params); });
}

void kes_transcriber_destroy(kes_transcriber* transcriber) { delete transcriber; }

const char* kes_transcriber_last_error(const kes_transcriber* transcriber) {
  return transcriber == nullptr ? "" : transcriber->error.c_str();
}

kes_status kes_transcribe_pcm(kes_transcriber* transcriber, const float* samples, size_t n,
                              uint32_t sample_rate, const kes_transcribe_params* params,
                              kes_segment_callback callback, void* user_data) {
  return kestrel::capi::OnHandle(transcriber, "transcriber", [&]() -> CallStatus {
    if (samples == nullptr && n > 0) return NullArgument("samples");
    if (sample_rate == 0) return Error(KES_INVALID_ARGUMENT, "sample_rate: expected Hz, found 0");
    KES_C_RETURN_IF_ERROR(ApplyParams(transcriber, params));
    if (sample_rate == kRate) return Run(transcriber, samples, n, callback, user_data);
    KES_C_RETURN_IF_ERROR(
        ToWhisperRate(transcriber, std::vector<float>(samples, samples + n), sample_rate));
    return Run(transcriber, transcriber->resampled.data(), transcriber->resampled.size(), callback,
               user_data);
  });
}

kes_status kes_transcribe_file(kes_transcriber* transcriber, const char* wav_path,
                               const kes_transcribe_params* params, kes_segment_callback callback,
                               void* user_data) {
  return kestrel::capi::OnHandle(transcriber, "transcriber", [&]() -> CallStatus {
    if (wav_path == nullptr) return NullArgument("wav_path");
    KES_C_RETURN_IF_ERROR(ApplyParams(transcriber, params));
    kestrel::audio::WavInfo info;
    std::vector<float> samples;
    const kestrel::Status s = kestrel::audio::ReadWav(wav_path, &info, &samples);
    if (!s.ok()) {
      return Error(CanOpenRegularFile(wav_path) ? KES_INVALID_ARGUMENT : KES_IO_ERROR, s.message());
    }
    if (info.sample_rate == kRate) {
      return Run(transcriber, samples.data(), samples.size(), callback, user_data);
    }
    KES_C_RETURN_IF_ERROR(ToWhisperRate(transcriber, std::move(samples), info.sample_rate));
    return Run(transcriber, transcriber->resampled.data(), transcriber->resampled.size(), callback,
               user_data);
  });
}

kes_status kes_transcriber_abort(kes_transcriber* transcriber) {
  if (transcriber == nullptr) return kestrel::capi::NullHandle("transcriber");
  transcriber->abort.store(true);
  return KES_OK;
}

kes_status kes_transcriber_language(const kes_transcriber* transcriber, const char** code,
                                    size_t* len) {
  return kestrel::capi::OnHandle(transcriber, "transcriber", [&]() -> CallStatus {
    if (code == nullptr) return NullArgument("code");
    if (len == nullptr) return NullArgument("len");
    const std::string_view language = kestrel::WhisperVocabulary::LanguageCode(
        transcriber->model->model->tokenizer(), transcriber->transcriber->language());
    *code = language.data() != nullptr ? language.data() : "";
    *len = language.size();
    return Ok();
  });
}

}  // extern "C"
