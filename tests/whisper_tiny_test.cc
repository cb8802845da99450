// A tiny random-weight Whisper (tests/py/make_tiny_whisper.py: a CTranslate2 folder with the real
// 80 mels and 200 positions, width 32) converted by kestrel-convert and run by the AudioEncoder
// on every target, qemu ARM included, against the float64 NumPy Whisper of
// tests/py/whisper_oracle.py (which agrees with CTranslate2 within 3e-5 on the real model):
// f32, f16, q8 and q4 weights, thread counts, the front end's windows, and clear errors for
// damaged folders and for the wrong API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio_encoder.h"
#include "runtime/session.h"
#include "runtime/transcriber.h"
#include "runtime/whisper_token_rules.h"
#include "runtime/whisper_vocabulary.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

// The tiny maker's window: 200 positions of two frames each (Whisper's is 1500: 30 seconds).
constexpr size_t kWidth = 32, kPositions = 200, kFrames = 2 * kPositions, kMels = 80;

// A tiny folder (made once per process) and its conversion with `weights`.
std::string TinyKes(const std::string& weights, const std::string& flags = "") {
  const std::string folder = test::ScratchPath("tiny-whisper" + flags);
  if (!test::Exists(folder + "/model.bin")) {
    const std::string made = test::MakeTinyWhisper(folder, flags);
    if (!made.empty()) return made;
  }
  const std::string kes = folder + "-" + weights + ".kes";
  const test::ProcessResult r = test::Convert({folder, kes, "--weights", weights});
  return r.exited && r.exit_code == 0 ? "" : test::Describe(r);
}

std::string FolderOf(const std::string& flags = "") {
  return test::ScratchPath("tiny-whisper" + flags);
}

// One log-mel window of a 4-second test signal: tones, a chirp and noise.
std::vector<float> TestWindow() {
  std::vector<float> x(4 * 16000);
  const double pi = std::acos(-1.0);
  uint32_t state = 99;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 16000;
    state = state * 1664525u + 1013904223u;
    const double noise = static_cast<double>(state >> 8) / 8388608.0 - 1.0;
    x[i] = static_cast<float>(0.3 * std::sin(2 * pi * 300 * t) * (t < 1.5) +
                              0.2 * std::sin(2 * pi * (200 + 900 * t) * t) * (t >= 1.5) +
                              0.02 * noise);
  }
  std::unique_ptr<audio::LogMelSpectrogram> mel;
  EXPECT_TRUE(audio::LogMelSpectrogram::Create(kMels, &mel).ok());
  const size_t frames = audio::LogMelSpectrogram::FrameCount(x.size());
  std::vector<float> all(kMels * frames), window(kMels * kFrames);
  mel->Compute(x.data(), x.size(), all.data());
  audio::CopyMelFrames(all.data(), kMels, frames, 0, kFrames, kFrames, window.data());
  return window;
}

std::vector<float> Oracle(const std::vector<float>& window) {
  const std::string in = test::ScratchPath("oracle-mel.f32"),
                    out = test::ScratchPath("oracle-hidden.f32");
  EXPECT_TRUE(test::WriteRaw(in, window));
  EXPECT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/whisper_oracle.py encode --folder '" + FolderOf() +
                                 "' --mel '" + in + "' --out '" + out + "'"),
            "");
  std::vector<float> hidden = test::ReadRaw<float>(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  return hidden;
}

Status Encode(const std::string& weights, size_t threads, const std::vector<float>& window,
              std::vector<float>* out) {
  std::unique_ptr<Model> model;
  KES_RETURN_IF_ERROR(Model::Open(FolderOf() + "-" + weights + ".kes", &model));
  AudioEncoderOptions options;
  options.n_threads = threads;
  std::unique_ptr<AudioEncoder> encoder;
  KES_RETURN_IF_ERROR(AudioEncoder::Create(*model, options, &encoder));
  KES_CHECK_OR_RETURN(encoder->n_mels() == kMels && encoder->n_frames() == kFrames &&
                          encoder->n_positions() == kPositions && encoder->d_model() == kWidth,
                      "unexpected encoder shape");
  out->assign(kPositions * kWidth, 0.0f);
  encoder->Encode(window.data(), out->data());
  return OkStatus();
}

double MeanRowCosine(const std::vector<float>& a, const std::vector<float>& b, double* max_abs) {
  double total = 0;
  *max_abs = 0;
  for (size_t row = 0; row < kPositions; ++row) {
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = row * kWidth; i < (row + 1) * kWidth; ++i) {
      dot += static_cast<double>(a[i]) * b[i];
      aa += static_cast<double>(a[i]) * a[i];
      bb += static_cast<double>(b[i]) * b[i];
      *max_abs = std::max(*max_abs, std::fabs(static_cast<double>(a[i]) - b[i]));
    }
    total += dot / std::sqrt(aa * bb);
  }
  return total / kPositions;
}

struct WeightCase {
  const char* weights;
  double max_abs;     // bound on |ours - oracle| (0: not checked)
  double min_cosine;  // bound on the mean row cosine
};
void PrintTo(const WeightCase& c, std::ostream* os) { *os << c.weights; }

class TinyWhisperEncoder : public testing::TestWithParam<WeightCase> {};

TEST_P(TinyWhisperEncoder, MatchesNumPyWhisper) {
  const WeightCase& c = GetParam();
  ASSERT_EQ(TinyKes(c.weights), "");
  const std::vector<float> window = TestWindow();
  const std::vector<float> want = Oracle(window);
  ASSERT_EQ(want.size(), kPositions * kWidth);
  std::vector<float> ours;
  Status s = Encode(c.weights, 1, window, &ours);
  ASSERT_TRUE(s.ok()) << s.message();
  double max_abs = 0;
  const double cosine = MeanRowCosine(ours, want, &max_abs);
  std::printf("%s: max |ours - numpy| = %.3g, mean row cosine %.7f\n", c.weights, max_abs, cosine);
  if (c.max_abs > 0) {
    EXPECT_LE(max_abs, c.max_abs);
  }
  EXPECT_GE(cosine, c.min_cosine);

  // Threads split rows, heads and frames, never a sum: the same bits.
  std::vector<float> threaded;
  s = Encode(c.weights, 3, window, &threaded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(threaded, ours);
}

INSTANTIATE_TEST_SUITE_P(Weights, TinyWhisperEncoder,
                         testing::Values(WeightCase{"f32", 1e-4, 0.9999999},
                                         WeightCase{"f16", 0, 0.99999}, WeightCase{"q8", 0, 0.999},
                                         WeightCase{"q4", 0, 0.98}),
                         [](const testing::TestParamInfo<WeightCase>& info) {
                           return std::string(info.param.weights);
                         });

TEST(TinyWhisper, KeepsTheFolder16BitWeights) {
  ASSERT_EQ(TinyKes("keep", "--dtype f16"), "");
  std::unique_ptr<Model> model;
  Status s = Model::Open(FolderOf("--dtype f16") + "-keep.kes", &model);
  ASSERT_TRUE(s.ok()) << s.message();
  size_t f16 = 0;
  for (const fb::Tensor* t : *model->meta().tensors()) f16 += t->dtype() == fb::DType::F16;
  // The encoder's convolutions and q, k, v, out, up and down of both layers; the decoder's
  // embeddings and self q, k, v, out, cross q, k, v, out, up and down of both layers.
  EXPECT_EQ(f16, 2u + 2 * 6 + 1 + 2 * 10);
}

// --weights f32 stores every matrix in panels of 16 rows (converters/arch/whisper.h
// WhisperMatrixDType): the same 35 as above, the tied token table included, whose lookup reads
// its rows out of the panels. Vectors and the position tables stay plain f32.
TEST(TinyWhisper, StoresF32MatricesInPanels) {
  ASSERT_EQ(TinyKes("f32"), "");
  std::unique_ptr<Model> model;
  Status s = Model::Open(FolderOf() + "-f32.kes", &model);
  ASSERT_TRUE(s.ok()) << s.message();
  size_t panels = 0;
  for (const fb::Tensor* t : *model->meta().tensors()) {
    const std::string name = t->name()->str();
    if (t->dtype() == fb::DType::F32_PANELS) {
      ++panels;
    } else {
      EXPECT_EQ(t->dtype(), fb::DType::F32) << name;
      EXPECT_TRUE(t->shape()->size() == 1 || name.find("position") != std::string::npos) << name;
    }
  }
  EXPECT_EQ(panels, 2u + 2 * 6 + 1 + 2 * 10);
}

TEST(TinyWhisper, TheWrongApiSaysWhichToUse) {
  ASSERT_EQ(TinyKes("f32", "--no-decoder"), "");
  std::unique_ptr<Model> model;
  Status s = Model::Open(FolderOf("--no-decoder") + "-f32.kes", &model);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(model->has_audio_encoder());
  EXPECT_FALSE(model->has_decoder());
  std::unique_ptr<Session> session;
  s = Session::Create(*model, SessionOptions(), &session);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("AudioEncoder"), std::string::npos) << s.message();

  test::TinyModel text;
  ASSERT_EQ(test::MakeTinyModel(&text), "");
  std::unique_ptr<Model> decoder;
  s = Model::Open(text.kes, &decoder);
  ASSERT_TRUE(s.ok()) << s.message();
  std::unique_ptr<AudioEncoder> encoder;
  s = AudioEncoder::Create(*decoder, AudioEncoderOptions(), &encoder);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no 'encode_audio' plan"), std::string::npos) << s.message();
}

// The decoder: cross_kv from the encoder's states, then a prefill and decode steps of a fixed
// token sequence; every step's logits against the NumPy decoder's, teacher-forced
// (whisper_oracle.py score), with an f32 KV cache on 1 and 2 threads and with the default f16
// one (self- and cross-attention rings), within the same tolerance. And its learned positions
// end at the context.
class TinyWhisperDecoder : public testing::TestWithParam<WeightCase> {};

TEST_P(TinyWhisperDecoder, LogitsMatchNumPyWhisper) {
  const WeightCase& c = GetParam();
  ASSERT_EQ(TinyKes(c.weights), "");
  const std::vector<float> window = TestWindow();
  std::unique_ptr<Model> model;
  Status s = Model::Open(FolderOf() + "-" + c.weights + ".kes", &model);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(model->has_decoder());
  std::unique_ptr<AudioEncoder> encoder;
  ASSERT_TRUE(AudioEncoder::Create(*model, AudioEncoderOptions(), &encoder).ok());
  std::vector<float> hidden(kPositions * kWidth);
  encoder->Encode(window.data(), hidden.data());

  // A start-of-transcript-like prompt of 3, then 20 tokens spread over the vocabulary.
  const size_t first = 3, vocab = model->vocab_size();
  std::vector<int32_t> tokens = {262, 271, 270};
  for (int32_t i = 0; i < 20; ++i) tokens.push_back((i * 97 + 5) % 287);
  const std::string mel = test::ScratchPath("decoder-mel.f32"),
                    out = test::ScratchPath("decoder-logits.f32");
  ASSERT_TRUE(test::WriteRaw(mel, window));
  std::string list;
  for (int32_t t : tokens) list += (list.empty() ? "" : ",") + std::to_string(t);
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/whisper_oracle.py score --folder '" + FolderOf() +
                                 "' --mel '" + mel + "' --tokens " + list + " --first " +
                                 std::to_string(first) + " --out '" + out + "'"),
            "");
  const std::vector<float> want = test::ReadRaw<float>(out);
  const size_t rows = tokens.size() - first + 1;
  ASSERT_EQ(want.size(), rows * vocab);

  const struct {
    size_t threads;
    ops::KvType kv;
  } runs[] = {{1, ops::KvType::kF32}, {2, ops::KvType::kF32}, {1, KvOptions().type}};
  ASSERT_EQ(runs[2].kv, ops::KvType::kF16);
  for (const auto& run : runs) {
    const size_t threads = run.threads;
    SessionOptions options;
    options.n_threads = threads;
    options.kv.type = run.kv;
    std::unique_ptr<Session> session;
    s = Session::Create(*model, options, &session);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(session->context_length(), 64u);
    ASSERT_TRUE(session->SetEncoderStates(hidden.data(), kPositions).ok());
    std::vector<float> ours;
    ASSERT_TRUE(session->Prefill(tokens.data(), first).ok());
    ours.insert(ours.end(), session->logits(), session->logits() + vocab);
    for (size_t i = first; i < tokens.size(); ++i) {
      ASSERT_TRUE(session->Decode(tokens[i]).ok());
      ours.insert(ours.end(), session->logits(), session->logits() + vocab);
    }
    const double error = test::LargestLogitError(ours.data(), want.data(), rows, vocab);
    std::printf("%s, %zu thread(s), %s KV: largest logit error %.3g of the row's range\n",
                c.weights, threads, ops::KvTypeName(run.kv), error);
    // f16 keys and values stay within the f32 tolerance (3e-4 measured with f32 weights).
    EXPECT_LE(error, c.weights == std::string("f32") ? test::kLogitTolerance : 0.05);

    // One prefill of the whole sequence ends with the same logits as the steps.
    session->Reset();
    ASSERT_TRUE(session->Prefill(tokens.data(), tokens.size()).ok());
    EXPECT_LE(
        test::LargestLogitError(session->logits(), ours.data() + (rows - 1) * vocab, 1, vocab),
        1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, TinyWhisperDecoder,
                         testing::Values(WeightCase{"f32", 0, 0}, WeightCase{"q8", 0, 0}),
                         [](const testing::TestParamInfo<WeightCase>& info) {
                           return std::string(info.param.weights);
                         });

TEST(TinyWhisper, LearnedPositionsEndAtTheContext) {
  ASSERT_EQ(TinyKes("f32"), "");
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(FolderOf() + "-f32.kes", &model).ok());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<float> hidden(kPositions * kWidth, 0.5f);
  EXPECT_FALSE(session->SetEncoderStates(hidden.data(), kPositions - 1).ok());
  ASSERT_TRUE(session->SetEncoderStates(hidden.data(), kPositions).ok());
  const std::vector<int32_t> tokens(64, 5);
  ASSERT_TRUE(session->Prefill(tokens.data(), 64).ok());
  const Status s = session->Decode(5);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("learned positions end at 64"), std::string::npos) << s.message();
}

// The same weights as a Hugging Face checkpoint (config.json, model.safetensors, tokenizer.json
// with the timestamps as added tokens) give the same tokenizer and the same hidden states, to
// the bit: the keys' missing bias is CTranslate2's zero one.
TEST(TinyWhisper, HuggingFaceCheckpointGivesTheSameModel) {
  ASSERT_EQ(TinyKes("f32"), "");
  const std::string hf = test::ScratchPath("tiny-whisper-hf");
  ASSERT_EQ(test::MakeTinyWhisper(hf, "--hf"), "");
  test::ProcessResult r = test::Convert({hf, hf + ".kes", "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  std::unique_ptr<Model> from_hf, from_ct2;
  ASSERT_TRUE(Model::Open(hf + ".kes", &from_hf).ok());
  ASSERT_TRUE(Model::Open(FolderOf() + "-f32.kes", &from_ct2).ok());
  ASSERT_EQ(from_hf->vocab_size(), from_ct2->vocab_size());
  for (int32_t id = 0; id < static_cast<int32_t>(from_hf->vocab_size()); ++id) {
    ASSERT_EQ(from_hf->tokenizer().Decode({id}), from_ct2->tokenizer().Decode({id})) << id;
  }
  const std::vector<float> window = TestWindow();
  std::vector<float> a(kPositions * kWidth), b(kPositions * kWidth);
  std::unique_ptr<AudioEncoder> ea, eb;
  ASSERT_TRUE(AudioEncoder::Create(*from_hf, AudioEncoderOptions(), &ea).ok());
  ASSERT_TRUE(AudioEncoder::Create(*from_ct2, AudioEncoderOptions(), &eb).ok());
  ea->Encode(window.data(), a.data());
  eb->Encode(window.data(), b.data());
  EXPECT_EQ(a, b);

  // A missing tensor is named with its Hugging Face name.
  const std::string damaged = test::ScratchPath("tiny-whisper-hf-damaged");
  ASSERT_EQ(test::MakeTinyWhisper(damaged, "--hf --drop encoder/layer_1/ffn/linear_1/bias"), "");
  r = test::Convert({damaged, damaged + ".kes"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
  EXPECT_NE(r.err.find("no tensor 'model.encoder.layers.1.fc2.bias'"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(damaged + ".kes"));
  fs::remove_all(damaged);
  ASSERT_EQ(test::MakeTinyWhisper(damaged, "--hf --drop decoder/layer_1/attention/linear_2/bias"),
            "");
  r = test::Convert({damaged, damaged + ".kes"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
  EXPECT_NE(r.err.find("no tensor 'model.decoder.layers.1.encoder_attn.out_proj.bias'"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(test::Exists(damaged + ".kes"));
  std::error_code ec;
  fs::remove_all(hf, ec);
  fs::remove_all(damaged, ec);
}

// The CLI on a speech model: inspect describes it, bench times encoder and decoder, run (text
// alone, no audio) refuses clearly.
TEST(TinyWhisper, CliInspectsBenchesAndRefusesToGenerate) {
  ASSERT_EQ(TinyKes("q8"), "");
  const std::string kes = FolderOf() + "-q8.kes";
  test::ProcessResult r = test::Cli({"inspect", kes});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  EXPECT_NE(r.out.find("whisper speech model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decoder:        2 layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("200 encoder positions"), std::string::npos) << r.out;
  r = test::Cli({"bench", kes, "-r", "1", "-t", "1,2", "--json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  EXPECT_NE(r.out.find("\"real_time_factor\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"threads\": 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"decoder_tokens_per_window\": 32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"end_to_end_real_time_factor\""), std::string::npos) << r.out;
  r = test::Cli({"bench", kes, "-r", "1", "-n", "33"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
  EXPECT_NE(r.err.find("decodes 1 to 32 tokens per window; got 33"), std::string::npos) << r.err;
  r = test::Cli({"run", kes, "-p", "hello"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
  EXPECT_NE(r.err.find("is a speech model (whisper); use 'kestrel transcribe"), std::string::npos)
      << r.err;
}

// 16-bit mono PCM WAV of `seconds` of a gliding tone at `rate` Hz.
void WriteToneWav(const std::string& path, uint32_t rate, double seconds) {
  const uint32_t n = static_cast<uint32_t>(rate * seconds), data_bytes = 2 * n;
  std::vector<uint8_t> b;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto u16 = [&](uint16_t v) { b.push_back(v & 0xff), b.push_back(v >> 8); };
  b.insert(b.end(), {'R', 'I', 'F', 'F'});
  u32(36 + data_bytes);
  b.insert(b.end(), {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '});
  u32(16), u16(1), u16(1), u32(rate), u32(2 * rate), u16(2), u16(16);
  b.insert(b.end(), {'d', 'a', 't', 'a'});
  u32(data_bytes);
  for (uint32_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    const double x = 8000 * std::sin(2 * 3.14159265 * (200 + 300 * t) * t);
    u16(static_cast<uint16_t>(static_cast<int16_t>(x)));
  }
  ASSERT_TRUE(test::WriteBytes(path, b.data(), b.size()));
}

// The segments of `kestrel transcribe --json` (without the timings, which vary).
std::string Segments(const std::string& json) {
  const size_t begin = json.find("\"segments\""), end = json.find("\"audio_seconds\"");
  if (begin == std::string::npos || end == std::string::npos) return "";
  return json.substr(begin, end - begin);
}

// kestrel transcribe on a tiny Whisper: a 22.05 kHz recording (resampled) and one of 9 seconds,
// three of its 4-second windows; the same tokens with 1 and 2 threads and from the Hugging Face
// layout of the same weights; timestamps and the previous
// text; clear errors for what the model cannot do and for bad flags.
TEST(TinyWhisper, CliTranscribes) {
  ASSERT_EQ(TinyKes("q8"), "");
  const std::string kes = FolderOf() + "-q8.kes";
  const std::string wav = test::ScratchPath("tone.wav"), wav22 = test::ScratchPath("tone-22k.wav");
  WriteToneWav(wav, 16000, 9.0);
  // Resampling (libsamplerate's best sinc) is slow under qemu: a short recording for it.
  WriteToneWav(wav22, 22050, 2.0);
  test::ProcessResult resampled = test::Cli({"transcribe", kes, wav22, "--json"});
  ASSERT_TRUE(resampled.exited && resampled.exit_code == 0) << test::Describe(resampled);
  EXPECT_NE(resampled.out.find("\"audio_seconds\": 2.000,"), std::string::npos) << resampled.out;
  test::ProcessResult one = test::Cli({"transcribe", kes, wav, "--json", "-t", "1"});
  ASSERT_TRUE(one.exited && one.exit_code == 0) << test::Describe(one);
  EXPECT_NE(one.out.find("\"windows\": 3,"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("\"language\": \"en\""), std::string::npos) << one.out;
  EXPECT_NE(Segments(one.out).find("\"tokens\": ["), std::string::npos) << one.out;
  test::ProcessResult two = test::Cli({"transcribe", kes, wav, "--json", "-t", "2"});
  ASSERT_TRUE(two.exited && two.exit_code == 0) << test::Describe(two);
  EXPECT_EQ(Segments(one.out), Segments(two.out));
  // The same weights in the Hugging Face layout (decoder included) transcribe the same.
  const std::string hf = test::ScratchPath("tiny-whisper-hf-transcribe");
  ASSERT_EQ(test::MakeTinyWhisper(hf, "--hf"), "");
  test::ProcessResult converted = test::Convert({hf, hf + ".kes", "--weights", "q8"});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << test::Describe(converted);
  test::ProcessResult from_hf = test::Cli({"transcribe", hf + ".kes", wav, "--json"});
  ASSERT_TRUE(from_hf.exited && from_hf.exit_code == 0) << test::Describe(from_hf);
  EXPECT_EQ(Segments(one.out), Segments(from_hf.out));
  std::error_code ec;
  fs::remove_all(hf, ec);
  std::remove((hf + ".kes").c_str());
  for (const char* flag : {"--timestamps", "--previous-text"}) {
    test::ProcessResult r = test::Cli({"transcribe", kes, wav, flag});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << flag << ": " << test::Describe(r);
    EXPECT_NE(r.err.find("9.0 s of audio (en)"), std::string::npos) << r.err;
    if (flag == std::string("--timestamps")) {
      EXPECT_NE(r.out.find("[00:00.000 --> "), std::string::npos) << r.out;
    }
  }
  const struct {
    std::vector<std::string> args;
    const char* expected;
  } errors[] = {
      {{"transcribe", kes, wav, "--task", "summarize"}, "expected transcribe or translate"},
      {{"transcribe", kes, wav, "--language", "xx"}, "unknown language 'xx'"},
      {{"transcribe", kes, wav, "--language", "de"}, "English-only"},
      {{"transcribe", kes, wav, "--task", "translate"}, "has no translate task"},
      {{"transcribe", kes, wav + ".missing"}, "tone.wav.missing"},
      {{"transcribe", kes}, "expected a model and a WAV file"},
  };
  for (const auto& e : errors) {
    test::ProcessResult r = test::Cli(e.args);
    EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
    EXPECT_NE(r.err.find(e.expected), std::string::npos) << r.err;
  }
  std::remove(wav.c_str());
  std::remove(wav22.c_str());
}

// An encoder window of fewer positions (8) than the decoder's context (64) is a valid model:
// the encoder's position table must cover its window, not the decoder's context.
TEST(TinyWhisper, EncoderWindowShorterThanTheDecodersContext) {
  const std::string folder = test::ScratchPath("tiny-whisper-8");
  ASSERT_EQ(test::MakeTinyWhisper(folder, "--positions 8"), "");
  test::ProcessResult r = test::Convert({folder, folder + ".kes", "--weights", "q8"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  const std::string wav = test::ScratchPath("tone-8.wav");
  WriteToneWav(wav, 16000, 1.0);
  r = test::Cli({"transcribe", folder + ".kes", wav, "--json"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  // 100 frames of content in windows of 16.
  EXPECT_NE(r.out.find("\"windows\": 7,"), std::string::npos) << r.out;
  std::error_code ec;
  fs::remove_all(folder, ec);
  std::remove((folder + ".kes").c_str());
  std::remove(wav.c_str());
}

struct FirstSegment {
  std::vector<int32_t> tokens;
  size_t segments = 0;
};
void KeepFirstSegment(void* context, const TranscriptSegment& segment) {
  auto* first = static_cast<FirstSegment*>(context);
  if (first->segments++ == 0) {
    first->tokens.assign(segment.tokens, segment.tokens + segment.n_tokens);
  }
}

// A multilingual vocabulary (OpenAI's layout of 51865 tokens): the language detected is the
// likeliest language token after <|startoftranscript|> on the first window, and the prompt is
// <|startoftranscript|>, the language, the task, <|notimestamps|>: the transcript begins as
// greedy decoding from that prompt does, for a detected and for a given language, transcribing
// and translating.
TEST(TinyWhisper, MultilingualDetectsTheLanguageAndTranslates) {
  const std::string folder = test::ScratchPath("tiny-whisper-multilingual");
  ASSERT_EQ(test::MakeTinyWhisper(folder, "--multilingual"), "");
  const test::ProcessResult r = test::Convert({folder, folder + ".kes", "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(folder + ".kes", &model).ok());
  WhisperVocabulary v;
  ASSERT_TRUE(WhisperVocabulary::Find(model->tokenizer(), model->vocab_size(), &v).ok());
  ASSERT_TRUE(v.multilingual);
  ASSERT_EQ(v.languages.size(), 99u);
  const int32_t german = v.Language(model->tokenizer(), "de");
  ASSERT_GE(german, 0);

  // 3 seconds: shorter than a window, so the first window is the whole recording.
  std::vector<float> mel = TestWindow();
  const size_t frames = 301;
  std::vector<float> recording(kMels * frames);
  for (size_t m = 0; m < kMels; ++m) {
    std::copy(mel.begin() + m * kFrames, mel.begin() + m * kFrames + frames,
              recording.begin() + m * frames);
  }
  std::unique_ptr<AudioEncoder> encoder;
  ASSERT_TRUE(AudioEncoder::Create(*model, AudioEncoderOptions(), &encoder).ok());
  std::unique_ptr<Session> session;
  SessionOptions session_options;
  session_options.context_length = 64;
  ASSERT_TRUE(Session::Create(*model, session_options, &session).ok());
  std::vector<float> window(kMels * kFrames), states(kPositions * kWidth);
  std::vector<float> scratch(model->vocab_size());
  // Greedy decoding of the window of frames [0, count) from `prompt`.
  auto greedy = [&](size_t count, const std::vector<int32_t>& prompt) {
    audio::CopyMelFrames(recording.data(), kMels, frames, 0, count, kFrames, window.data());
    encoder->Encode(window.data(), states.data());
    session->Reset();
    EXPECT_TRUE(session->SetEncoderStates(states.data(), kPositions).ok());
    EXPECT_TRUE(session->Prefill(prompt.data(), prompt.size()).ok());
    std::vector<int32_t> out;
    WhisperStepInput step;
    step.score = false;
    while (out.size() < 32) {
      step.logits = session->logits();
      step.generated = out.data();
      step.n_generated = out.size();
      const int32_t token = NextWhisperToken(v, model->vocab_size(), step, scratch.data()).token;
      if (token == v.eot) break;
      out.push_back(token);
      if (out.size() < 32) {
        EXPECT_TRUE(session->Decode(token).ok());
      }
    }
    return out;
  };
  // The detection window keeps the last frame, as faster-whisper's does.
  audio::CopyMelFrames(recording.data(), kMels, frames, 0, kFrames, kFrames, window.data());
  encoder->Encode(window.data(), states.data());
  ASSERT_TRUE(session->SetEncoderStates(states.data(), kPositions).ok());
  ASSERT_TRUE(session->Prefill(&v.sot, 1).ok());
  int32_t likeliest = v.languages[0];
  for (int32_t id : v.languages) {
    if (session->logits()[id] > session->logits()[likeliest]) likeliest = id;
  }

  const struct {
    const char* language;
    bool translate;
    int32_t expected_language;
  } cases[] = {{"", false, likeliest}, {"de", false, german}, {"de", true, german}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.language) + (c.translate ? " translate" : " transcribe"));
    TranscriberOptions options;
    options.language = c.language;
    options.translate = c.translate;
    std::unique_ptr<Transcriber> transcriber;
    ASSERT_TRUE(Transcriber::Create(*model, options, &transcriber).ok());
    FirstSegment first;
    ASSERT_TRUE(transcriber->Transcribe(recording.data(), frames, KeepFirstSegment, &first).ok());
    EXPECT_EQ(transcriber->language(), c.expected_language);
    const std::vector<int32_t> want = greedy(
        frames - 1,
        {v.sot, c.expected_language, c.translate ? v.translate : v.transcribe, v.no_timestamps});
    // Segments split at timestamp pairs (the random model writes timestamps even without
    // timestamp mode, and faster-whisper splits those too): the first one begins the decoding.
    ASSERT_FALSE(first.tokens.empty());
    ASSERT_LE(first.tokens.size(), want.size());
    EXPECT_TRUE(std::equal(first.tokens.begin(), first.tokens.end(), want.begin()))
        << "first segment of " << first.tokens.size() << " tokens differs from greedy decoding";
  }
  std::error_code ec;
  fs::remove_all(folder, ec);
  std::remove((folder + ".kes").c_str());
}

// A folder whose model.bin lacks a variable or has one of the wrong shape: a clear error naming
// it, and no output file.
TEST(TinyWhisper, DamagedFoldersFailClearly) {
  ASSERT_EQ(TinyKes("f32"), "");
  const std::string good = FolderOf();
  const struct {
    const char* flags;
    const char* expected;
  } cases[] = {
      {"--drop encoder/layer_1/ffn/linear_1/bias",
       "model.bin has no variable 'encoder/layer_1/ffn/linear_1/bias'"},
      {"--reshape encoder/layer_0/self_attention/linear_1/weight",
       "'encoder/layer_0/self_attention/linear_1/weight': expected shape [32, 32], found"},
      {"--drop encoder/conv1/weight", "expected encoder/conv1/weight"},
  };
  for (const auto& c : cases) {
    const std::string dir = test::ScratchPath("tiny-whisper-damaged");
    std::error_code ec;
    fs::remove_all(dir, ec);
    ASSERT_EQ(test::MakeTinyWhisper(dir, c.flags), "");
    const std::string out = dir + ".kes";
    const test::ProcessResult r = test::Convert({dir, out});
    EXPECT_TRUE(r.exited && r.exit_code == 1) << test::Describe(r);
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.flags << ": " << r.err;
    EXPECT_FALSE(test::Exists(out));
    fs::remove_all(dir, ec);
  }
  std::ofstream(good + "/vocabulary.txt", std::ios::app) << "one-piece-too-many\n";
  const test::ProcessResult r = test::Convert({good, good + "-bad-vocab.kes"});
  EXPECT_NE(r.err.find("vocabulary.txt"), std::string::npos) << test::Describe(r);
  EXPECT_FALSE(test::Exists(good + "-bad-vocab.kes"));
  std::error_code ec;
  fs::remove_all(good, ec);  // damaged: the next TinyKes remakes it
}

}  // namespace
}  // namespace kestrel
