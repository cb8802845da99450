// A Transcriber turns a recording's log-mel spectrogram into text with a speech model (Whisper),
// decoding as faster-whisper does with beam size 1 and temperature 0: window by window from a
// seek position, each window's encoder states fed to a decoder Session, the prompt
// (<|startoftranscript|>, language, task, <|notimestamps|>), greedy steps under Whisper's rules
// (runtime/whisper_token_rules.h), segments split at timestamp pairs, the seek advanced past what
// was transcribed, windows of silence skipped (the no-speech probability), and optionally the
// previous text as a prompt.
//
// Create allocates everything (the encoder's and the session's arenas, one window, the encoder
// states, the token buffers); Transcribe allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/audio_encoder.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/whisper_vocabulary.h"

namespace kestrel {

struct TranscriberOptions {
  size_t n_threads = 1;
  // "" detects the language from the first window (multilingual models); English-only models
  // take "" or "en".
  std::string language;
  bool translate = false;   // the task: translate to English instead of transcribing
  bool timestamps = false;  // segment timestamps (otherwise <|notimestamps|>)
  // The text of the earlier windows as the prompt of the next (faster-whisper's
  // condition_on_previous_text; off by default, as the acceptance settings have it).
  bool condition_on_previous_text = false;
  float max_initial_timestamp = 1.0f;  // seconds
  // A window is skipped as silence when its no-speech probability is above the first and its
  // average token log-probability at most the second (faster-whisper's defaults).
  float no_speech_threshold = 0.6f;
  float log_prob_threshold = -1.0f;
  // Read before every window; another thread may set it (the C API's abort). Once true,
  // Transcribe stops there with an error and TranscribeStats::stopped.
  const std::atomic<bool>* stop = nullptr;
};

struct TranscriptSegment {
  double start = 0, end = 0;        // seconds from the start of the recording
  size_t seek = 0;                  // the window's first frame
  const int32_t* tokens = nullptr;  // text tokens, and timestamps when they are on
  size_t n_tokens = 0;
  // Of the window's tokens, the end token included; computed only when the no-speech
  // probability is above its threshold (0 otherwise).
  float avg_log_prob = 0;
  float no_speech_prob = 0;  // of the window
};

// Called once per segment, in order; the tokens are valid during the call only.
using SegmentSink = void (*)(void* context, const TranscriptSegment& segment);

struct TranscribeStats {
  size_t windows = 0;          // windows decoded (skipped ones included)
  size_t tokens = 0;           // tokens generated, end tokens included
  double encoder_seconds = 0;  // the encoder, language detection excluded
  double decoder_seconds = 0;  // cross K/V, prompt, steps and the rules
  bool stopped = false;        // by TranscriberOptions::stop
};

class Transcriber {
 public:
  static Status Create(const Model& model, const TranscriberOptions& options,
                       std::unique_ptr<Transcriber>* out);

  // mel: the whole recording, n_mels() rows of `frames` values (audio::LogMelSpectrogram).
  // Fails only on a decoder error, or when stopped (TranscriberOptions::stop) after the
  // segments of the windows before.
  Status Transcribe(const float* mel, size_t frames, SegmentSink sink, void* context,
                    TranscribeStats* stats = nullptr);

  // Changes the decoding options of later Transcribe calls (language, task, timestamps, the
  // previous text, the thresholds) without allocating, so that one Transcriber serves calls
  // with different options (the C API's per-call parameters); n_threads keeps Create's. Checked
  // as Create checks them; on error nothing changes.
  Status SetOptions(const TranscriberOptions& options);

  size_t n_mels() const { return encoder_->n_mels(); }
  size_t window_frames() const { return encoder_->n_frames(); }
  // The language token of the last Transcribe (given, detected, or <|en|> for English-only).
  int32_t language() const { return language_; }
  const WhisperVocabulary& vocabulary() const { return vocabulary_; }
  const Model& model() const { return model_; }
  const Session& session() const { return *session_; }
  const AudioEncoder& encoder() const { return *encoder_; }

 private:
  explicit Transcriber(const Model& model) : model_(model) {}
  int32_t DetectLanguage(const float* mel, size_t frames);
  // Decodes the current window (its encoder states are in the session) from `prompt`:
  // fills generated_ / n_generated_ and the window's scores.
  Status DecodeWindow(size_t prompt_length, float* no_speech_prob, float* avg_log_prob);

  const Model& model_;
  TranscriberOptions options_;
  WhisperVocabulary vocabulary_;
  std::unique_ptr<AudioEncoder> encoder_;
  std::unique_ptr<Session> session_;
  int32_t language_ = -1;
  int32_t fixed_language_ = -1;  // from options.language
  std::vector<float> window_, states_, scratch_;
  std::vector<int32_t> prompt_, generated_, previous_;
  size_t n_generated_ = 0, n_previous_ = 0;
};

}  // namespace kestrel
