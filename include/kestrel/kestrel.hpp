// Kestrel's C++ API: the C API (kestrel.h) in C++ clothes, header-only: Model, Session (text
// generation), Encoder (embeddings), Transcriber (Whisper), Status and Result<T>.
//
// Why over the C API rather than classes compiled into the library: a C++ class exported from a
// shared library freezes its layout, its standard library and its compiler's name mangling into
// the ABI, which is what breaks bindings of libraries that export C++. These classes are compiled
// into the program that includes them, so the library's ABI stays the C one (stable, versioned by
// KES_ABI_VERSION), and this header may change freely from release to release. It includes
// nothing of the runtime (no FlatBuffers, no executor).
//
// Conventions:
//  - Nothing throws. Calls that can fail return a Status (a code a caller can branch on and a
//    message that says what was expected and what was found) or a Result<T> (a Status or a T).
//  - Handles are move-only and free what they own when destroyed.
//  - The classes live in kestrel::api_v1, an inline namespace: write kestrel::Model. (The
//    library's own C++ internals use namespace kestrel too; the inline namespace keeps these
//    names, and their symbols in a program linked with the static library, apart from them.)
//  - Thread safety is the C API's: a Model is immutable and its const calls may run on any
//    number of threads at once; a Session, Encoder or Transcriber is used by one thread at a
//    time, except its Abort(), which any thread may call at any time.
#ifndef KESTREL_KESTREL_HPP_
#define KESTREL_KESTREL_HPP_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kestrel/kestrel.h"

namespace kestrel {
inline namespace api_v1 {

// The C API's kes_status values, named.
enum class StatusCode : int {
  kOk = KES_OK,
  kInvalidArgument = KES_INVALID_ARGUMENT,
  kIoError = KES_IO_ERROR,
  kBadModel = KES_BAD_MODEL,
  kUnsupported = KES_UNSUPPORTED,
  kBufferTooSmall = KES_BUFFER_TOO_SMALL,
  kContextFull = KES_CONTEXT_FULL,
  kOutOfMemory = KES_OUT_OF_MEMORY,
  kAborted = KES_ABORTED,
  kInternal = KES_INTERNAL,
};

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  // A C call's status with the message that explains it (ignored when `status` is KES_OK).
  static Status FromC(kes_status status, const char* message) {
    if (status == KES_OK) return Status();
    return Status(static_cast<StatusCode>(status), message != nullptr ? message : "");
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "KES_BAD_MODEL: <message>", or "KES_OK".
  std::string ToString() const {
    std::string text = kes_status_name(static_cast<kes_status>(code_));
    if (!ok()) text += ": " + message_;
    return text;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A T, or the Status that says why there is none. value() on a failed Result is a bug in the
// caller: it prints the status and aborts (nothing throws).
template <typename T>
class Result {
 public:
  Result(T value) : has_value_(true) { new (storage_) T(std::move(value)); }  // NOLINT
  Result(Status status) : status_(std::move(status)) {                        // NOLINT
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result made from an OK status");
  }
  Result(Result&& other) noexcept(std::is_nothrow_move_constructible<T>::value)
      : status_(std::move(other.status_)), has_value_(other.has_value_) {
    if (has_value_) new (storage_) T(std::move(*other.get()));
  }
  Result& operator=(Result&& other) noexcept(std::is_nothrow_move_constructible<T>::value) {
    if (this != &other) {
      Destroy();
      status_ = std::move(other.status_);
      has_value_ = other.has_value_;
      if (has_value_) new (storage_) T(std::move(*other.get()));
    }
    return *this;
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ~Result() { Destroy(); }

  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }

  T& value() & { return *Checked(); }
  const T& value() const& { return *Checked(); }
  T&& value() && { return std::move(*Checked()); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return Checked(); }
  const T* operator->() const { return Checked(); }

 private:
  T* get() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  T* Checked() {
    if (!has_value_) Die();
    return get();
  }
  const T* Checked() const {
    if (!has_value_) Die();
    return get();
  }
  void Die() const {
    std::fprintf(stderr, "kestrel::Result::value() without a value: %s\n",
                 status_.ToString().c_str());
    std::abort();
  }
  void Destroy() {
    if (has_value_) get()->~T();
    has_value_ = false;
  }

  Status status_;
  bool has_value_ = false;
  alignas(T) unsigned char storage_[sizeof(T)];
};

// What a call that makes a handle or a size gave: `value`, or the call's status with
// kes_last_error() (the calls that make a handle leave their message there: none exists yet).
namespace detail {
template <typename T>
Result<T> MadeOrLastError(kes_status status, T value) {
  if (status != KES_OK) return Status::FromC(status, kes_last_error());
  return value;
}

// Texts as the C calls take them: a pointer and a length each.
struct TextArrays {
  explicit TextArrays(const std::vector<std::string_view>& texts) {
    for (std::string_view t : texts) data.push_back(t.data()), lengths.push_back(t.size());
  }
  std::vector<const char*> data;
  std::vector<size_t> lengths;
};
}  // namespace detail

// The C parameter structs, used as they are: make them with these calls (which set struct_size
// and every default), then change the fields you need.
using ModelParams = kes_model_params;
using SessionParams = kes_session_params;
using SamplerParams = kes_sampler_params;
using ModelInfo = kes_model_info;
using EncoderParams = kes_encoder_params;
using EncoderInfo = kes_encoder_info;
using TranscriberParams = kes_transcriber_params;
using TranscribeParams = kes_transcribe_params;
inline ModelParams DefaultModelParams() { return kes_model_default_params(); }
inline SessionParams DefaultSessionParams() { return kes_session_default_params(); }
inline SamplerParams DefaultSamplerParams() { return kes_sampler_default_params(); }
inline EncoderParams DefaultEncoderParams() { return kes_encoder_default_params(); }
inline TranscriberParams DefaultTranscriberParams() { return kes_transcriber_default_params(); }
inline TranscribeParams DefaultTranscribeParams() { return kes_transcribe_default_params(); }
inline SamplerParams GreedySampler() {
  SamplerParams sampler = kes_sampler_default_params();
  sampler.temperature = 0.0f;
  return sampler;
}

// kes_tokenize's flags: with both (the default), the ids `kestrel run` gives a prompt.
constexpr uint32_t kAddSpecial = KES_TOKENIZE_ADD_SPECIAL;
constexpr uint32_t kParseSpecial = KES_TOKENIZE_PARSE_SPECIAL;

inline std::string Version() { return kes_version(); }

// A loaded, verified .kes model; see kes_model in kestrel.h. Must outlive its sessions.
class Model {
 public:
  static Result<Model> Open(const std::string& path, const ModelParams* params = nullptr) {
    kes_model* model = nullptr;
    const kes_status s = kes_model_open(path.c_str(), params, &model);
    return detail::MadeOrLastError(s, Model(model));
  }
  // `data` must be KES_ALIGNMENT-aligned and stay unchanged until the Model is destroyed.
  static Result<Model> OpenMemory(const void* data, size_t size,
                                  const ModelParams* params = nullptr) {
    kes_model* model = nullptr;
    const kes_status s = kes_model_open_memory(data, size, params, &model);
    return detail::MadeOrLastError(s, Model(model));
  }

  Result<ModelInfo> Info() const {
    ModelInfo info{};
    info.struct_size = sizeof(info);
    const kes_status s = kes_model_get_info(model_.get(), &info);
    if (s != KES_OK) return Error(s);
    return info;
  }

  Result<std::vector<int32_t>> Tokenize(std::string_view text,
                                        uint32_t flags = kAddSpecial | kParseSpecial) const {
    std::vector<int32_t> tokens(text.size() + 8);
    size_t n = 0;
    kes_status s = kes_tokenize(model_.get(), text.data(), text.size(), flags, tokens.data(),
                                tokens.size(), &n);
    if (s == KES_BUFFER_TOO_SMALL) {
      tokens.resize(n);
      s = kes_tokenize(model_.get(), text.data(), text.size(), flags, tokens.data(),
                       tokens.size(), &n);
    }
    if (s != KES_OK) return Error(s);
    tokens.resize(n);
    return tokens;
  }

  Result<std::string> Detokenize(const int32_t* tokens, size_t n) const {
    std::string text(n * 8, '\0');
    size_t bytes = 0;
    kes_status s = kes_detokenize(model_.get(), tokens, n, &text[0], text.size(), &bytes);
    if (s == KES_BUFFER_TOO_SMALL) {
      text.resize(bytes);
      s = kes_detokenize(model_.get(), tokens, n, &text[0], text.size(), &bytes);
    }
    if (s != KES_OK) return Error(s);
    text.resize(bytes);
    return text;
  }
  Result<std::string> Detokenize(const std::vector<int32_t>& tokens) const {
    return Detokenize(tokens.data(), tokens.size());
  }

  // True when `token` ends generation (EOS or end of turn).
  bool IsEnd(int32_t token) const {
    int is_end = 0;
    return kes_token_is_end(model_.get(), token, &is_end) == KES_OK && is_end != 0;
  }

  // The C handle, for calls this header does not wrap.
  const kes_model* get() const { return model_.get(); }

 private:
  struct Close {
    void operator()(kes_model* model) const { kes_model_close(model); }
  };
  explicit Model(kes_model* model) : model_(model) {}
  Status Error(kes_status s) const { return Status::FromC(s, kes_model_last_error(get())); }

  std::unique_ptr<kes_model, Close> model_;
};

// One sequence run through a model, all its memory in one arena; see kes_session in kestrel.h.
class Session {
 public:
  // The arena bytes a session with `params` needs.
  static Result<size_t> ArenaSize(const Model& model, const SessionParams* params = nullptr) {
    size_t bytes = 0;
    const kes_status s = kes_session_arena_size(model.get(), params, &bytes);
    return detail::MadeOrLastError(s, bytes);
  }
  // arena nullptr: the session allocates its arena once, here; otherwise the caller's
  // (KES_ALIGNMENT-aligned, ArenaSize bytes at least, valid until the Session is destroyed).
  static Result<Session> Create(const Model& model, const SessionParams* params = nullptr,
                                void* arena = nullptr, size_t arena_bytes = 0) {
    kes_session* session = nullptr;
    const kes_status s = kes_session_create(model.get(), params, arena, arena_bytes, &session);
    return detail::MadeOrLastError(s, Session(session));
  }

  Status Prefill(const int32_t* tokens, size_t n) {
    return Check(kes_session_prefill(session_.get(), tokens, n));
  }
  Status Prefill(const std::vector<int32_t>& tokens) {
    return Prefill(tokens.data(), tokens.size());
  }

  // The logits for the next token, valid until the session's next call.
  struct Logits {
    const float* data = nullptr;
    size_t size = 0;
  };
  Result<Logits> GetLogits() {
    Logits logits;
    const kes_status s = kes_session_logits(session_.get(), &logits.data, &logits.size);
    if (s != KES_OK) return Check(s);
    return logits;
  }

  // One generated token; `piece` points into the session and is valid until its next call, so
  // pulling tokens allocates nothing once the piece buffer has grown to the longest piece.
  struct Token {
    int32_t id = -1;
    std::string_view piece;
  };
  Result<Token> NextToken(const SamplerParams& sampler = DefaultSamplerParams()) {
    Token token;
    size_t len = 0;
    kes_status s = kes_session_next_token(session_.get(), &sampler, &token.id, &piece_[0],
                                          piece_.size(), &len);
    if (s == KES_BUFFER_TOO_SMALL) {
      piece_.resize(len);
      s = kes_session_next_token(session_.get(), &sampler, &token.id, &piece_[0],
                                 piece_.size(), &len);
    }
    if (s != KES_OK) return Check(s);
    token.piece = std::string_view(piece_.data(), len);
    return token;
  }

  // Appends `prompt` and generates up to max_tokens tokens (kes_generate), calling
  // on_token(int32_t id, std::string_view piece) with each; it may return bool, false to stop
  // after that token, or void.
  template <typename OnToken>
  Status Generate(const std::vector<int32_t>& prompt, const SamplerParams& sampler,
                  size_t max_tokens, OnToken&& on_token) {
    auto call = [](void* user, int32_t id, const char* piece, size_t len) -> int {
      OnToken& f = *static_cast<std::remove_reference_t<OnToken>*>(user);
      if constexpr (std::is_same<decltype(f(id, std::string_view())), void>::value) {
        f(id, std::string_view(piece, len));
        return 0;
      } else {
        return f(id, std::string_view(piece, len)) ? 0 : 1;
      }
    };
    return Check(kes_generate(session_.get(), prompt.data(), prompt.size(), &sampler, max_tokens,
                              call, const_cast<void*>(static_cast<const void*>(&on_token))));
  }

  Result<size_t> Position() const {
    size_t position = 0;
    const kes_status s = kes_session_position(session_.get(), &position);
    if (s != KES_OK) return Status::FromC(s, kes_session_last_error(session_.get()));
    return position;
  }
  Status Reset() { return Check(kes_session_reset(session_.get())); }
  // Back to the first `position` tokens (kes_session_rewind): a prompt sharing a beginning
  // with what the session holds then prefills only the rest.
  Status Rewind(size_t position) { return Check(kes_session_rewind(session_.get(), position)); }
  // Any thread, any time: the running call stops after its current step with kAborted.
  Status Abort() { return Check(kes_session_abort(session_.get())); }

  kes_session* get() { return session_.get(); }

 private:
  struct Destroy {
    void operator()(kes_session* session) const { kes_session_destroy(session); }
  };
  explicit Session(kes_session* session) : session_(session), piece_(64, '\0') {}
  Status Check(kes_status s) const {
    return Status::FromC(s, kes_session_last_error(session_.get()));
  }

  std::unique_ptr<kes_session, Destroy> session_;
  std::string piece_;
};

// Sentence embeddings from an encoder model; see kes_encoder in kestrel.h. `kestrel embed`'s
// vectors, bit for bit.
class Encoder {
 public:
  static Result<size_t> ArenaSize(const Model& model, const EncoderParams* params = nullptr) {
    size_t bytes = 0;
    const kes_status s = kes_encoder_arena_size(model.get(), params, &bytes);
    return detail::MadeOrLastError(s, bytes);
  }
  static Result<Encoder> Create(const Model& model, const EncoderParams* params = nullptr,
                                void* arena = nullptr, size_t arena_bytes = 0) {
    kes_encoder* encoder = nullptr;
    const kes_status s = kes_encoder_create(model.get(), params, arena, arena_bytes, &encoder);
    return detail::MadeOrLastError(s, Encoder(encoder));
  }

  Result<EncoderInfo> Info() const {
    EncoderInfo info{};
    info.struct_size = sizeof(info);
    const kes_status s = kes_encoder_get_info(encoder_.get(), &info);
    if (s != KES_OK) return Status::FromC(s, kes_encoder_last_error(encoder_.get()));
    return info;
  }

  // texts[i]'s vector in out[i * dim, (i + 1) * dim); dim is Info().embedding_dim.
  Status Embed(const std::vector<std::string_view>& texts, float* out, size_t dim) {
    const detail::TextArrays c(texts);
    return Check(
        kes_embed(encoder_.get(), c.data.data(), c.lengths.data(), texts.size(), out, dim));
  }
  // The same, into a vector of texts.size() * embedding_dim floats.
  Result<std::vector<float>> Embed(const std::vector<std::string_view>& texts) {
    Result<EncoderInfo> info = Info();
    if (!info.ok()) return info.status();
    std::vector<float> out(texts.size() * info->embedding_dim);
    Status s = Embed(texts, out.data(), info->embedding_dim);
    if (!s.ok()) return s;
    return out;
  }

  // A reranker's logit of (query, docs[i]) for each document (kes_rerank).
  Result<std::vector<float>> Rerank(std::string_view query,
                                    const std::vector<std::string_view>& docs) {
    const detail::TextArrays c(docs);
    std::vector<float> logits(docs.size());
    Status s = Check(kes_rerank(encoder_.get(), query.data(), query.size(), c.data.data(),
                                c.lengths.data(), docs.size(), logits.data()));
    if (!s.ok()) return s;
    return logits;
  }

  // Any thread, any time: the running Embed stops before its next step of the encoder with
  // kAborted (kes_encoder_abort).
  Status Abort() { return Check(kes_encoder_abort(encoder_.get())); }

  kes_encoder* get() { return encoder_.get(); }

 private:
  struct Destroy {
    void operator()(kes_encoder* encoder) const { kes_encoder_destroy(encoder); }
  };
  explicit Encoder(kes_encoder* encoder) : encoder_(encoder) {}
  // The status of a call made before (as an argument, the message could be read before the
  // call wrote it).
  Status Check(kes_status s) const {
    return Status::FromC(s, kes_encoder_last_error(encoder_.get()));
  }

  std::unique_ptr<kes_encoder, Destroy> encoder_;
};

// Speech to text with a Whisper model; see kes_transcriber in kestrel.h. `kestrel transcribe`'s
// text and times.
class Transcriber {
 public:
  struct Segment {
    double start = 0, end = 0;  // seconds
    std::string text;
  };

  static Result<Transcriber> Create(const Model& model,
                                    const TranscriberParams* params = nullptr) {
    kes_transcriber* transcriber = nullptr;
    const kes_status s = kes_transcriber_create(model.get(), params, &transcriber);
    return detail::MadeOrLastError(s, Transcriber(transcriber));
  }

  // Mono samples in [-1, 1] at sample_rate Hz (16000 allocates nothing in the library).
  Result<std::vector<Segment>> Transcribe(const float* samples, size_t n, uint32_t sample_rate,
                                          const TranscribeParams* params = nullptr) {
    std::vector<Segment> segments;
    const kes_status s = kes_transcribe_pcm(transcriber_.get(), samples, n, sample_rate, params,
                                            &Collect, &segments);
    if (s != KES_OK) return Status::FromC(s, kes_transcriber_last_error(transcriber_.get()));
    return segments;
  }
  // A WAV file, read as `kestrel transcribe` reads it.
  Result<std::vector<Segment>> TranscribeFile(const std::string& wav_path,
                                              const TranscribeParams* params = nullptr) {
    std::vector<Segment> segments;
    const kes_status s =
        kes_transcribe_file(transcriber_.get(), wav_path.c_str(), params, &Collect, &segments);
    if (s != KES_OK) return Status::FromC(s, kes_transcriber_last_error(transcriber_.get()));
    return segments;
  }

  // Any thread, any time: the running Transcribe stops before its next window with kAborted
  // (kes_transcriber_abort).
  Status Abort() {
    const kes_status s = kes_transcriber_abort(transcriber_.get());
    return Status::FromC(s, kes_transcriber_last_error(transcriber_.get()));
  }

  // The language of the last transcription ("en"), "" before any.
  std::string Language() const {
    const char* code = nullptr;
    size_t len = 0;
    if (kes_transcriber_language(transcriber_.get(), &code, &len) != KES_OK) return "";
    return std::string(code, len);
  }

  kes_transcriber* get() { return transcriber_.get(); }

 private:
  struct Destroy {
    void operator()(kes_transcriber* transcriber) const { kes_transcriber_destroy(transcriber); }
  };
  explicit Transcriber(kes_transcriber* transcriber) : transcriber_(transcriber) {}
  static void Collect(void* user, const kes_segment* segment) {
    static_cast<std::vector<Segment>*>(user)->push_back(
        {segment->start, segment->end, std::string(segment->text, segment->text_len)});
  }

  std::unique_ptr<kes_transcriber, Destroy> transcriber_;
};

}  // namespace api_v1
}  // namespace kestrel

#endif  // KESTREL_KESTREL_HPP_
