#include "runtime/transcriber.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>

#include "runtime/audio/log_mel.h"
#include "runtime/whisper_token_rules.h"

namespace kestrel {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr double kSecondsPerFrame =
    static_cast<double>(audio::kWhisperHop) / audio::kWhisperSampleRate;

// True when the text tokens of ids print as nothing but whitespace (faster-whisper drops such
// segments: `not text.strip()`).
bool IsBlank(const Tokenizer& tokenizer, int32_t eot, const int32_t* ids, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= eot) continue;
    for (char c : tokenizer.TokenText(ids[i])) {
      if (!std::isspace(static_cast<unsigned char>(c))) return false;
    }
  }
  return true;
}

}  // namespace

Status Transcriber::Create(const Model& model, const TranscriberOptions& options,
                           std::unique_ptr<Transcriber>* out) {
  const char* missing = model.has_audio_encoder() ? "no decoder" : "no audio encoder";
  KES_CHECK_OR_RETURN(model.has_audio_encoder() && model.has_decoder(),
                      std::string("expected a speech model with an audio encoder and a decoder "
                                  "(Whisper); this one has ") +
                          missing);
  std::unique_ptr<Transcriber> t(new Transcriber(model));
  t->options_.n_threads = options.n_threads;
  KES_RETURN_IF_ERROR(
      WhisperVocabulary::Find(model.tokenizer(), model.vocab_size(), &t->vocabulary_));
  KES_RETURN_IF_ERROR(t->SetOptions(options));
  AudioEncoderOptions encoder_options;
  encoder_options.n_threads = options.n_threads;
  KES_RETURN_IF_ERROR(AudioEncoder::Create(model, encoder_options, &t->encoder_));
  SessionOptions session_options;
  session_options.n_threads = options.n_threads;
  session_options.context_length = model.hparams().context_length();
  KES_RETURN_IF_ERROR(Session::Create(model, session_options, &t->session_));
  const size_t max_length = t->session_->context_length();
  KES_CHECK_OR_RETURN(max_length >= 8, "a decoder context of " + std::to_string(max_length) +
                                           " tokens is too short for Whisper's prompt");
  t->window_.resize(t->encoder_->n_mels() * t->encoder_->n_frames());
  t->states_.resize(t->encoder_->n_positions() * t->encoder_->d_model());
  t->scratch_.resize(model.vocab_size());
  t->prompt_.resize(max_length);
  t->generated_.resize(max_length);
  t->previous_.resize(max_length / 2 - 1);  // faster-whisper keeps max_length // 2 - 1
  *out = std::move(t);
  return OkStatus();
}

Status Transcriber::SetOptions(const TranscriberOptions& options) {
  const WhisperVocabulary& v = vocabulary_;
  int32_t language = -1;
  // Messages are built only on failure: this runs where nothing may allocate.
  if (!options.language.empty()) {
    language = v.Language(model_.tokenizer(), options.language);
    KES_CHECK_OR_RETURN(language >= 0,
                        "unknown language '" + options.language + "': expected a code of " +
                            std::to_string(v.languages.size()) + " such as en, de, fr");
  }
  if (!v.multilingual) {
    KES_CHECK_OR_RETURN(options.language.empty() || options.language == "en",
                        "this model is English-only: it cannot transcribe language '" +
                            options.language + "' (use a multilingual Whisper)");
    KES_CHECK_OR_RETURN(!options.translate, "this model is English-only: it has no translate task");
  }
  const size_t n_threads = options_.n_threads;
  options_ = options;  // a valid code fits the string's inline buffer: nothing is allocated
  options_.n_threads = n_threads;
  fixed_language_ = language;
  return OkStatus();
}

// The language token most likely after <|startoftranscript|> (CTranslate2's detect_language)
// on the first window of the recording, its last frame included, as faster-whisper encodes it.
int32_t Transcriber::DetectLanguage(const float* mel, size_t frames) {
  const size_t window = encoder_->n_frames();
  audio::CopyMelFrames(mel, static_cast<int>(n_mels()), frames, 0, window, window, window_.data());
  encoder_->Encode(window_.data(), states_.data());
  session_->Reset();
  const int32_t sot = vocabulary_.sot;
  if (!session_->SetEncoderStates(states_.data(), encoder_->n_positions()).ok() ||
      !session_->Prefill(&sot, 1).ok()) {
    return vocabulary_.languages.front();
  }
  const float* logits = session_->logits();
  int32_t best = vocabulary_.languages.front();
  for (int32_t id : vocabulary_.languages) {
    if (logits[id] > logits[best]) best = id;
  }
  session_->Reset();
  return best;
}

Status Transcriber::DecodeWindow(size_t prompt_length, float* no_speech_prob, float* avg_log_prob) {
  const int32_t* prompt = prompt_.data();
  const size_t sot_index =
      static_cast<size_t>(std::find(prompt, prompt + prompt_length, vocabulary_.sot) - prompt);
  const size_t vocab = model_.vocab_size();
  // The no-speech probability: <|nospeech|> after <|startoftranscript|>, unmasked softmax.
  KES_RETURN_IF_ERROR(session_->Prefill(prompt, sot_index + 1));
  {
    const float* l = session_->logits();
    const float top = *std::max_element(l, l + vocab);
    double sum = 0;
    for (size_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(l[i] - top));
    *no_speech_prob = static_cast<float>(std::exp(l[vocabulary_.no_speech] - top) / sum);
  }
  if (sot_index + 1 < prompt_length) {
    KES_RETURN_IF_ERROR(session_->Prefill(prompt + sot_index + 1, prompt_length - sot_index - 1));
  }
  // CTranslate2 decodes at most half the context, and no further than the context.
  const size_t max_length = session_->context_length();
  const size_t max_new = std::min(max_length / 2, max_length - (prompt_length - 1));
  WhisperStepInput step;
  step.generated = generated_.data();
  step.timestamps = options_.timestamps;
  step.max_initial_timestamp =
      vocabulary_.timestamp_begin +
      static_cast<int32_t>(
          std::lround(options_.max_initial_timestamp /
                      (kSecondsPerFrame * (encoder_->n_frames() / encoder_->n_positions()))));
  // The average log-probability matters only when the window may be silence (see Transcribe).
  step.score = *no_speech_prob > options_.no_speech_threshold;
  double log_prob = 0;
  n_generated_ = 0;
  while (n_generated_ < max_new) {
    step.logits = session_->logits();
    step.n_generated = n_generated_;
    const WhisperStepResult r = NextWhisperToken(vocabulary_, vocab, step, scratch_.data());
    log_prob += r.log_prob;
    if (r.token == vocabulary_.eot) break;
    generated_[n_generated_++] = r.token;
    if (n_generated_ == max_new) break;
    KES_RETURN_IF_ERROR(session_->Decode(r.token));
  }
  *avg_log_prob =
      step.score ? static_cast<float>(log_prob / static_cast<double>(n_generated_ + 1)) : 0.0f;
  return OkStatus();
}

Status Transcriber::Transcribe(const float* mel, size_t frames, SegmentSink sink, void* context,
                               TranscribeStats* stats) {
  TranscribeStats local;
  TranscribeStats& st = stats ? *stats : local;
  st = TranscribeStats();
  const WhisperVocabulary& v = vocabulary_;
  const Tokenizer& tokenizer = model_.tokenizer();
  const size_t window = encoder_->n_frames();
  const size_t stride = window / encoder_->n_positions();  // frames per timestamp step
  const double precision = kSecondsPerFrame * static_cast<double>(stride);
  // faster-whisper leaves out the spectrogram's last frame (its padding's).
  const size_t content_frames = frames > 0 ? frames - 1 : 0;
  language_ = v.multilingual ? fixed_language_ : v.Language(tokenizer, "en");
  if (v.multilingual && language_ < 0 && content_frames > 0) {
    language_ = DetectLanguage(mel, frames);
  }
  n_previous_ = 0;
  size_t seek = 0;
  while (seek < content_frames) {
    if (options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed)) {
      st.stopped = true;
      return Status::Error("stopped at frame " + std::to_string(seek) + " of " +
                           std::to_string(content_frames) + ": TranscriberOptions::stop was set");
    }
    const size_t segment_size = std::min(window, content_frames - seek);
    audio::CopyMelFrames(mel, static_cast<int>(n_mels()), frames, seek, segment_size, window,
                         window_.data());
    Clock::time_point start = Clock::now();
    encoder_->Encode(window_.data(), states_.data());
    st.encoder_seconds += Since(start);
    ++st.windows;

    start = Clock::now();
    session_->Reset();
    KES_RETURN_IF_ERROR(session_->SetEncoderStates(states_.data(), encoder_->n_positions()));
    size_t n = 0;
    if (n_previous_ > 0) {
      prompt_[n++] = v.sot_prev;
      std::copy(previous_.begin(), previous_.begin() + n_previous_, prompt_.begin() + n);
      n += n_previous_;
    }
    prompt_[n++] = v.sot;
    if (v.multilingual) {
      prompt_[n++] = language_;
      prompt_[n++] = options_.translate ? v.translate : v.transcribe;
    }
    if (!options_.timestamps) prompt_[n++] = v.no_timestamps;
    float no_speech_prob = 0, avg_log_prob = 0;
    KES_RETURN_IF_ERROR(DecodeWindow(n, &no_speech_prob, &avg_log_prob));
    st.decoder_seconds += Since(start);
    st.tokens += n_generated_ + 1;

    if (no_speech_prob > options_.no_speech_threshold &&
        !(avg_log_prob > options_.log_prob_threshold)) {
      seek += segment_size;  // silence
      continue;
    }

    // Segments: the tokens between consecutive timestamps (faster-whisper's
    // _split_segments_by_timestamps), or the whole window when there are none.
    const int32_t tb = v.timestamp_begin;
    const int32_t* tokens = generated_.data();
    const size_t count = n_generated_;
    const double offset = static_cast<double>(seek) * kSecondsPerFrame;
    TranscriptSegment segment;
    segment.seek = seek;
    segment.avg_log_prob = avg_log_prob;
    segment.no_speech_prob = no_speech_prob;
    auto emit = [&](size_t first, size_t end, double t0, double t1) {
      if (t0 == t1 || IsBlank(tokenizer, v.eot, tokens + first, end - first)) return;
      segment.start = t0;
      segment.end = t1;
      segment.tokens = tokens + first;
      segment.n_tokens = end - first;
      sink(context, segment);
      if (!options_.condition_on_previous_text) return;
      // Keep the last previous_.size() tokens of the text so far.
      const size_t add = std::min(end - first, previous_.size());
      const size_t keep = std::min(n_previous_, previous_.size() - add);
      std::memmove(previous_.data(), previous_.data() + n_previous_ - keep, keep * sizeof(int32_t));
      std::memcpy(previous_.data() + keep, tokens + end - add, add * sizeof(int32_t));
      n_previous_ = keep + add;
    };
    const bool single_ending = count >= 2 && tokens[count - 2] < tb && tokens[count - 1] >= tb;
    size_t last_slice = 0;
    bool pairs = false;
    for (size_t i = 1; i < count; ++i) {
      if (tokens[i] >= tb && tokens[i - 1] >= tb) {
        pairs = true;
        emit(last_slice, i, offset + (tokens[last_slice] - tb) * precision,
             offset + (tokens[i - 1] - tb) * precision);
        last_slice = i;
      }
    }
    if (pairs) {
      if (single_ending) {
        emit(last_slice, count, offset + (tokens[last_slice] - tb) * precision,
             offset + (tokens[count - 1] - tb) * precision);
        seek += segment_size;
      } else {
        // The words after the last pair are cut off: decode them again in the next window
        // (from the window's start again only if the last pair ended at <|0.00|>, which would
        // loop forever: then on past the window).
        const size_t advance = static_cast<size_t>(tokens[last_slice - 1] - tb) * stride;
        seek += advance > 0 ? advance : segment_size;
      }
    } else {
      double duration = static_cast<double>(segment_size) * kSecondsPerFrame;
      for (size_t i = count; i-- > 0;) {
        if (tokens[i] < tb) continue;
        if (tokens[i] != tb) duration = (tokens[i] - tb) * precision;
        break;
      }
      emit(0, count, offset, offset + duration);
      seek += segment_size;
    }
  }
  return OkStatus();
}

}  // namespace kestrel
