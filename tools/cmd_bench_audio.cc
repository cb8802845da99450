// kestrel bench for speech models (Whisper): for each thread count, one warm-up and -r timed runs
// of a 30-second window: the encoder on log-mel features, then (models with a decoder) what
// transcription does with it: the cross-attention keys and values, the prompt, and a fixed
// number of greedy steps under Whisper's rules. Reported: milliseconds per window, the decoder's
// milliseconds per token, the encoder's FLOP rate, and real-time factors (audio seconds per
// compute second) of the encoder and of the whole window.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio_encoder.h"
#include "runtime/session.h"
#include "runtime/whisper_token_rules.h"
#include "runtime/whisper_vocabulary.h"
#include "tools/bench_stats.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

struct AudioResult {
  size_t threads;
  Summary window_ms;   // the encoder
  Summary cross_ms;    // the decoder's cross-attention K/V from the encoder states
  Summary decoder_ms;  // cross K/V, prompt and every step
  Summary token_ms;    // one greedy step (decode and rules)
};

// The decoder's share of one window: cross K/V, the prompt, `tokens` greedy steps. An end token
// does not stop it (the timing does not depend on the token, and a fixed count compares runs).
Status TimeDecoder(Session& session, const WhisperVocabulary& v, const float* states,
                   size_t n_positions, size_t tokens, double* cross_ms, double* total_ms) {
  std::vector<int32_t> prompt = {v.sot};
  if (v.multilingual) prompt.insert(prompt.end(), {v.languages.front(), v.transcribe});
  prompt.push_back(v.no_timestamps);
  std::vector<int32_t> generated(tokens);
  std::vector<float> scratch(session.vocab_size());
  session.Reset();
  const Clock::time_point start = Clock::now();
  KES_RETURN_IF_ERROR(session.SetEncoderStates(states, n_positions));
  *cross_ms = Seconds(start, Clock::now()) * 1e3;
  KES_RETURN_IF_ERROR(session.Prefill(prompt.data(), prompt.size()));
  WhisperStepInput step;
  step.generated = generated.data();
  step.score = false;  // as the transcriber does for a window of speech
  for (size_t i = 0; i < tokens; ++i) {
    step.logits = session.logits();
    step.n_generated = i;
    int32_t token = NextWhisperToken(v, session.vocab_size(), step, scratch.data()).token;
    if (token == v.eot) token = v.suppress_at_start.front();  // go on with some text token
    generated[i] = token;
    KES_RETURN_IF_ERROR(session.Decode(token));
  }
  *total_ms = Seconds(start, Clock::now()) * 1e3;
  return OkStatus();
}

}  // namespace

int BenchAudioEncoder(const std::string& model_path, const Model& model,
                      const EncoderBenchOptions& options) {
  const fb::HyperParams& hp = model.hparams();
  const bool decoder = model.has_decoder();
  WhisperVocabulary vocabulary;
  size_t tokens = 0;
  if (decoder) {
    Status s = WhisperVocabulary::Find(model.tokenizer(), model.vocab_size(), &vocabulary);
    if (!s.ok()) return Fail(model_path + ": " + s.message());
    // Whisper decodes at most half its context per window.
    const size_t most = model.hparams().context_length() / 2;
    tokens = options.decoder_tokens ? options.decoder_tokens : std::min<size_t>(100, most);
    if (tokens == 0 || tokens > most) {
      return Fail("-n: this model decodes 1 to " + std::to_string(most) +
                  " tokens per window; got " + std::to_string(tokens));
    }
  }
  std::vector<AudioResult> results;
  size_t arena_bytes = 0, positions = 0, frames = 0;
  for (size_t threads : options.threads) {
    AudioEncoderOptions encoder_options;
    encoder_options.n_threads = threads;
    std::unique_ptr<AudioEncoder> encoder;
    Status s = AudioEncoder::Create(model, encoder_options, &encoder);
    if (!s.ok()) return Fail(s.message());
    std::unique_ptr<Session> session;
    if (decoder) {
      SessionOptions session_options;
      session_options.n_threads = threads;
      session_options.context_length = model.hparams().context_length();
      s = Session::Create(model, session_options, &session);
      if (!s.ok()) return Fail(s.message());
    }
    arena_bytes = encoder->memory().arena_bytes + (session ? session->memory().arena_bytes : 0);
    positions = encoder->n_positions();
    frames = encoder->n_frames();
    // Values in the range of real log-mel features; the encoder's work does not depend on them.
    std::vector<float> mel(encoder->n_mels() * frames);
    for (size_t i = 0; i < mel.size(); ++i) mel[i] = static_cast<float>((i * 7919) % 200) / 100 - 1;
    std::vector<float> hidden(positions * encoder->d_model());
    std::vector<double> ms, cross_ms, decoder_ms, token_ms;
    for (size_t rep = 0; rep <= options.repetitions; ++rep) {
      const Clock::time_point start = Clock::now();
      encoder->Encode(mel.data(), hidden.data());
      const double encode = Seconds(start, Clock::now()) * 1e3;
      double cross = 0, total = 0;
      if (session) {
        s = TimeDecoder(*session, vocabulary, hidden.data(), positions, tokens, &cross, &total);
        if (!s.ok()) return Fail(s.message());
      }
      if (rep == 0) continue;  // warm-up
      ms.push_back(encode);
      cross_ms.push_back(cross);
      decoder_ms.push_back(total);
      token_ms.push_back(tokens ? (total - cross) / static_cast<double>(tokens) : 0);
    }
    results.push_back(
        {threads, Summarize(ms), Summarize(cross_ms), Summarize(decoder_ms), Summarize(token_ms)});
  }

  const double window_seconds =
      static_cast<double>(frames) * audio::kWhisperHop / audio::kWhisperSampleRate;
  const double gflop =
      (static_cast<double>(MatMulFlopsPerToken(model)) * positions +
       4.0 * positions * positions * hp.n_heads() * hp.head_dim() * hp.n_layers()) /
      1e9;
  if (options.json) {
    std::printf(
        "{\n%s  \"window_seconds\": %.2f,\n  \"gflop_per_window\": %.4f,\n"
        "  \"decoder_tokens_per_window\": %zu,\n  \"encode\": [\n",
        EncoderBenchJsonFields(model, arena_bytes, options.repetitions).c_str(), window_seconds,
        gflop, tokens);
    for (size_t i = 0; i < results.size(); ++i) {
      const AudioResult& r = results[i];
      std::printf(
          "    {\"threads\": %zu, \"window_ms\": %.4f, \"real_time_factor\": %.3f, "
          "\"window\": %s",
          r.threads, r.window_ms.median, window_seconds * 1e3 / r.window_ms.median,
          JsonSummary(r.window_ms).c_str());
      if (decoder) {
        std::printf(
            ",\n     \"cross_kv_ms\": %.4f, \"decoder_window_ms\": %.4f, "
            "\"decoder_ms_per_token\": %.4f, \"end_to_end_real_time_factor\": %.3f,\n"
            "     \"decoder_window\": %s",
            r.cross_ms.median, r.decoder_ms.median, r.token_ms.median,
            window_seconds * 1e3 / (r.window_ms.median + r.decoder_ms.median),
            JsonSummary(r.decoder_ms).c_str());
      }
      std::printf("}%s\n", i + 1 < results.size() ? "," : "");
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  PrintEncoderBenchHeader("speech", model_path, model, arena_bytes);
  std::printf("one %.0f-second window (%zu positions, encoder %.2f GFLOP)", window_seconds,
              positions, gflop);
  if (decoder) std::printf(", %zu decoded tokens", tokens);
  std::printf("; median of %zu repetitions after one warm-up; ± is the standard deviation\n\n",
              options.repetitions);
  std::printf(
      "| threads |     encoder ms | encoder GFLOP/s | decoder ms (cross K/V) |"
      " ms/token | real-time factor |\n");
  std::printf(
      "|--------:|---------------:|----------------:|-----------------------:|"
      "---------:|-----------------:|\n");
  for (const AudioResult& r : results) {
    char ms[64], dec[64];
    std::snprintf(ms, sizeof(ms), "%.1f ± %.1f", r.window_ms.median, r.window_ms.stddev);
    std::snprintf(dec, sizeof(dec), decoder ? "%.1f (%.1f)" : "-", r.decoder_ms.median,
                  r.cross_ms.median);
    std::printf("| %7zu | %14s | %15.1f | %22s | %8.2f | %15.1fx |\n", r.threads, ms,
                gflop * 1e3 / r.window_ms.median, dec, r.token_ms.median,
                window_seconds * 1e3 / (r.window_ms.median + r.decoder_ms.median));
  }
  return 0;
}

}  // namespace kestrel::cli
