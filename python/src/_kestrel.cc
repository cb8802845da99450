// kestrel._kestrel: the C API (include/kestrel/kestrel.h) as a small Python extension, which
// the typed pure-Python package (src/kestrel/*.py) wraps. It binds kes_* calls only, never the
// runtime's C++ classes, so that it follows the C API's stable ABI.
//
// Every call that runs the model (or reads files) releases the GIL; a failed call raises the
// kestrel.KestrelError subclass of its kes_status with the library's message (kestrel/_errors.py
// maps codes to classes). The handles refuse to be used by two threads at once (the C API asks
// for one thread at a time per session); the Python Model keeps a pool of sessions so that
// threads never share one.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kestrel/kestrel.h"

namespace nb = nanobind;

namespace {

// Raises kestrel._errors.error_for(code, message): the GIL must be held.
[[noreturn]] void Raise(kes_status status, const std::string& message) {
  nb::object errors = nb::module_::import_("kestrel._errors");
  nb::object error = errors.attr("error_for")(static_cast<int>(status), message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw nb::python_error();
}

// After a C call, with the GIL held again: raises when it failed. kes_last_error is the calling
// thread's, and a released GIL returns to the same thread.
void Check(kes_status status) {
  if (status != KES_OK) Raise(status, kes_last_error());
}

// Runs `call`, a kes_* call that may run the model or read files, with the GIL released so that
// other Python threads run meanwhile; raises when it failed.
template <typename Call>
void CallReleasingGil(Call&& call) {
  kes_status s;
  {
    nb::gil_scoped_release release;
    s = call();
  }
  Check(s);
}

// For the calls that write into a caller's buffer and report the size they need when it is too
// small: one more try at that size always fits. Returns the size written.
template <typename Buffer, typename Fill>
size_t FillResizingOnce(Buffer& buffer, Fill&& fill) {
  size_t n = 0;
  CallReleasingGil([&] {
    kes_status s = fill(buffer.data(), buffer.size(), &n);
    if (s == KES_BUFFER_TOO_SMALL) {
      buffer.resize(n);
      s = fill(buffer.data(), buffer.size(), &n);
    }
    return s;
  });
  return n;
}

// The ids of `text` from a kes_*tokenize call, given as fill(out, capacity, needed): most texts
// need fewer ids than bytes (plus BOS/EOS); a longer one is retried once at the size the library
// reports.
template <typename Fill>
std::vector<int32_t> TokenIds(const std::string& text, Fill&& fill) {
  std::vector<int32_t> ids(text.size() + 8);
  ids.resize(FillResizingOnce(ids, fill));
  return ids;
}

// A kes_*_info struct as its kes_*_get_info call fills it: struct_size first, as the library
// fills only the fields that this build of the extension knows.
template <typename Info, typename Handle>
Info ReadInfo(kes_status (*get_info)(const Handle*, Info*), const Handle* handle) {
  Info info{};
  info.struct_size = sizeof(info);
  Check(get_info(handle, &info));
  return info;
}

// Marks a handle in use for the length of a call: a second thread gets an error instead of
// a data race inside the library.
class Busy {
 public:
  Busy(std::atomic<bool>* flag, const char* what) : flag_(flag) {
    if (flag_->exchange(true)) {
      flag_ = nullptr;
      Raise(KES_INVALID_ARGUMENT, std::string(what) +
                                      " is in use by another thread: use one "
                                      "per thread (kestrel.Model does so itself)");
    }
  }
  ~Busy() {
    if (flag_ != nullptr) flag_->store(false);
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<bool>* flag_;
};

class ModelHandle {
 public:
  ModelHandle(const std::string& path, int verify_weights) {
    kes_model_params params = kes_model_default_params();
    params.verify_weights = verify_weights;
    CallReleasingGil([&] { return kes_model_open(path.c_str(), &params, &model_); });
  }
  ~ModelHandle() { kes_model_close(model_); }
  ModelHandle(const ModelHandle&) = delete;
  ModelHandle& operator=(const ModelHandle&) = delete;

  const kes_model* get() const { return model_; }

  nb::dict Info() const {
    const kes_model_info info = ReadInfo(kes_model_get_info, model_);
    nb::dict d;
    d["n_vocab"] = info.n_vocab;
    d["context_length"] = info.context_length;
    d["bos_id"] = info.bos_id;
    d["eos_id"] = info.eos_id;
    d["eot_id"] = info.eot_id;
    d["can_generate"] = info.can_generate != 0;
    d["weights_bytes"] = info.weights_bytes;
    return d;
  }

  std::vector<int32_t> Tokenize(const std::string& text, uint32_t flags) const {
    return TokenIds(text, [&](int32_t* out, size_t capacity, size_t* needed) {
      return kes_tokenize(model_, text.data(), text.size(), flags, out, capacity, needed);
    });
  }

  nb::bytes Detokenize(const std::vector<int32_t>& ids) const {
    std::string text(ids.size() * 8 + 16, '\0');
    const size_t n = FillResizingOnce(text, [&](char* out, size_t capacity, size_t* needed) {
      return kes_detokenize(model_, ids.data(), ids.size(), out, capacity, needed);
    });
    return nb::bytes(text.data(), n);
  }

  // kes_chat_apply_template over (role, content) pairs.
  nb::bytes ChatTemplate(const std::vector<std::pair<std::string, std::string>>& messages,
                         const std::optional<std::string>& format,
                         bool add_generation_prompt) const {
    std::vector<kes_chat_message> list(messages.size());
    for (size_t i = 0; i < messages.size(); ++i) {
      list[i].role = messages[i].first.c_str();
      list[i].content = messages[i].second.data();
      list[i].content_len = messages[i].second.size();
    }
    const char* fmt = format ? format->c_str() : nullptr;
    std::string text(1024, '\0');
    const size_t n = FillResizingOnce(text, [&](char* out, size_t capacity, size_t* needed) {
      return kes_chat_apply_template(model_, fmt, list.data(), list.size(),
                                     add_generation_prompt ? 1 : 0, out, capacity, needed);
    });
    return nb::bytes(text.data(), n);
  }

  bool IsEnd(int32_t token) const {
    int is_end = 0;
    Check(kes_token_is_end(model_, token, &is_end));
    return is_end != 0;
  }

 private:
  kes_model* model_ = nullptr;
};

kes_sampler_params Sampler(float temperature, int32_t top_k, float top_p, uint64_t seed) {
  kes_sampler_params p = kes_sampler_default_params();
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

class SessionHandle {
 public:
  // `model` (a ModelHandle) is kept alive as long as the session: the C API asks for it.
  SessionHandle(nb::object model, size_t context_length, size_t n_threads, int32_t kv_type)
      : model_ref_(std::move(model)), model_(nb::cast<const ModelHandle&>(model_ref_).get()) {
    kes_session_params params = kes_session_default_params();
    params.context_length = context_length;
    params.n_threads = n_threads;
    params.kv_type = kv_type;
    CallReleasingGil([&] { return kes_session_create(model_, &params, nullptr, 0, &session_); });
  }
  ~SessionHandle() { kes_session_destroy(session_); }
  SessionHandle(const SessionHandle&) = delete;
  SessionHandle& operator=(const SessionHandle&) = delete;

  void Reset() {
    Busy busy(&busy_, "this session");
    Check(kes_session_reset(session_));
  }

  // Any thread, any time: only sets a flag.
  void Abort() { Check(kes_session_abort(session_)); }

  size_t Position() const {
    size_t position = 0;
    Check(kes_session_position(session_, &position));
    return position;
  }

  void Prefill(const std::vector<int32_t>& ids) {
    Busy busy(&busy_, "this session");
    CallReleasingGil([&] { return kes_session_prefill(session_, ids.data(), ids.size()); });
  }

  // (token, its text piece, whether it ends generation).
  std::tuple<int32_t, nb::bytes, bool> NextToken(float temperature, int32_t top_k, float top_p,
                                                 uint64_t seed) {
    Busy busy(&busy_, "this session");
    const kes_sampler_params sampler = Sampler(temperature, top_k, top_p, seed);
    int32_t token = -1;
    size_t n = 0;
    int is_end = 0;
    CallReleasingGil([&] {
      kes_status s = kes_session_next_token(session_, &sampler, &token, piece_, sizeof(piece_), &n);
      if (s == KES_BUFFER_TOO_SMALL) {
        long_piece_.resize(n);
        s = kes_session_next_token(session_, &sampler, &token, long_piece_.data(),
                                   long_piece_.size(), &n);
      }
      if (s == KES_OK) s = kes_token_is_end(model_, token, &is_end);
      return s;
    });
    const char* piece = n <= sizeof(piece_) ? piece_ : long_piece_.data();
    return {token, nb::bytes(piece, n), is_end != 0};
  }

  nb::bytes SaveState() {
    Busy busy(&busy_, "this session");
    std::string buf;
    size_t size = 0;
    CallReleasingGil([&] {
      kes_status s = kes_session_state_size(session_, &size);
      if (s == KES_OK) {
        buf.resize(size);
        s = kes_session_save_state(session_, buf.data(), buf.size(), &size);
      }
      return s;
    });
    return nb::bytes(buf.data(), size);
  }

  void LoadState(nb::bytes state) {
    Busy busy(&busy_, "this session");
    // `state` is immutable and referenced by the caller: safe to read without the GIL.
    CallReleasingGil([&] { return kes_session_load_state(session_, state.c_str(), state.size()); });
  }

  void SaveStateFile(const std::string& path) {
    Busy busy(&busy_, "this session");
    CallReleasingGil([&] { return kes_session_save_state_file(session_, path.c_str()); });
  }

  void LoadStateFile(const std::string& path) {
    Busy busy(&busy_, "this session");
    CallReleasingGil([&] { return kes_session_load_state_file(session_, path.c_str()); });
  }

  void ChatStart(const std::optional<std::string>& system, const std::optional<std::string>& format,
                 std::optional<bool> thinking) {
    Busy busy(&busy_, "this session");
    kes_chat_params params = kes_chat_default_params();
    if (system) {
      params.system = system->data();
      params.system_len = system->size();
    }
    if (format) params.format = format->c_str();
    if (thinking) params.thinking = *thinking ? KES_THINKING_ON : KES_THINKING_OFF;
    CallReleasingGil([&] { return kes_session_chat_start(session_, &params); });
  }

  // One turn of kes_session_chat. `on_piece` (None: none) is called with each token's piece
  // (bytes) as it comes, the GIL taken only for that; a true return stops the reply. (reply
  // ids, reply text).
  std::tuple<std::vector<int32_t>, nb::bytes> Chat(const std::string& user, size_t max_tokens,
                                                   float temperature, int32_t top_k, float top_p,
                                                   uint64_t seed, nb::object on_piece) {
    Busy busy(&busy_, "this session");
    const kes_sampler_params sampler = Sampler(temperature, top_k, top_p, seed);
    Collected out;
    out.on_piece = on_piece.is_none() ? nullptr : &on_piece;
    kes_status s;
    {
      nb::gil_scoped_release release;
      s = kes_session_chat(session_, user.data(), user.size(), &sampler, max_tokens, &Collect,
                           &out);
    }
    if (out.error) {
      out.error->restore();  // the callback's exception, raised as it was
      throw nb::python_error();
    }
    Check(s);
    return {std::move(out.tokens), nb::bytes(out.text.data(), out.text.size())};
  }

  // kes_generate without a callback into Python: the whole run with the GIL released, the
  // tokens and their text gathered here. (generated ids, their text, stopped by an end token).
  std::tuple<std::vector<int32_t>, nb::bytes> Generate(const std::vector<int32_t>& prompt,
                                                       size_t max_tokens, float temperature,
                                                       int32_t top_k, float top_p, uint64_t seed) {
    Busy busy(&busy_, "this session");
    const kes_sampler_params sampler = Sampler(temperature, top_k, top_p, seed);
    Collected out;
    CallReleasingGil([&] {
      return kes_generate(session_, prompt.data(), prompt.size(), &sampler, max_tokens, &Collect,
                          &out);
    });
    return {std::move(out.tokens), nb::bytes(out.text.data(), out.text.size())};
  }

 private:
  struct Collected {
    std::vector<int32_t> tokens;
    std::string text;
    nb::object* on_piece = nullptr;  // called with the GIL held again
    std::optional<nb::python_error> error;
  };
  static int Collect(void* user_data, int32_t token, const char* piece, size_t n) {
    auto* out = static_cast<Collected*>(user_data);
    out->tokens.push_back(token);
    out->text.append(piece, n);
    if (out->on_piece == nullptr) return 0;
    nb::gil_scoped_acquire acquire;
    try {
      return nb::cast<bool>((*out->on_piece)(nb::bytes(piece, n))) ? 1 : 0;
    } catch (nb::python_error& e) {
      out->error.emplace(std::move(e));
      return 1;
    }
  }
  nb::object model_ref_;
  const kes_model* model_;  // model_ref_'s, read once (the GIL is released where it is used)
  kes_session* session_ = nullptr;
  std::atomic<bool> busy_{false};
  char piece_[256];
  std::string long_piece_;
};

// A C-contiguous float32 array the C calls write in place (numpy.empty made by the caller).
using OutRows = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Samples = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutScores = nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Texts as the C calls take them: a pointer and a length each.
struct TextArrays {
  explicit TextArrays(const std::vector<std::string>& texts) {
    for (const std::string& t : texts) data.push_back(t.data()), lengths.push_back(t.size());
  }
  std::vector<const char*> data;
  std::vector<size_t> lengths;
};

class EncoderHandle {
 public:
  EncoderHandle(nb::object model, size_t n_threads) : model_ref_(std::move(model)) {
    const kes_model* m = nb::cast<const ModelHandle&>(model_ref_).get();
    kes_encoder_params params = kes_encoder_default_params();
    params.n_threads = n_threads;
    CallReleasingGil([&] { return kes_encoder_create(m, &params, nullptr, 0, &encoder_); });
  }
  ~EncoderHandle() { kes_encoder_destroy(encoder_); }
  EncoderHandle(const EncoderHandle&) = delete;
  EncoderHandle& operator=(const EncoderHandle&) = delete;

  nb::dict Info() const {
    const kes_encoder_info info = ReadInfo(kes_encoder_get_info, encoder_);
    nb::dict d;
    d["embedding_dim"] = info.embedding_dim;
    d["max_tokens"] = info.max_tokens;
    d["max_batch"] = info.max_batch;
    d["is_reranker"] = info.is_reranker != 0;
    return d;
  }

  // Embeds texts into out (len(texts), dim), written by kes_embed itself: no copy.
  void Embed(const std::vector<std::string>& texts, OutRows out) {
    Busy busy(&busy_, "this encoder");
    if (out.shape(0) != texts.size()) {
      Raise(KES_INVALID_ARGUMENT, "out: expected " + std::to_string(texts.size()) +
                                      " rows, one per text, found " + std::to_string(out.shape(0)));
    }
    const TextArrays c(texts);
    float* rows = out.data();
    const size_t dim = out.shape(1);
    CallReleasingGil([&] {
      return kes_embed(encoder_, c.data.data(), c.lengths.data(), texts.size(), rows, dim);
    });
  }

  // A reranker's logits of (query, docs[i]) into out (len(docs),), written by kes_rerank.
  void Rerank(const std::string& query, const std::vector<std::string>& docs, OutScores out) {
    Busy busy(&busy_, "this encoder");
    if (out.shape(0) != docs.size()) {
      Raise(KES_INVALID_ARGUMENT, "out: expected " + std::to_string(docs.size()) +
                                      " scores, one per document, found " +
                                      std::to_string(out.shape(0)));
    }
    const TextArrays c(docs);
    float* logits = out.data();
    CallReleasingGil([&] {
      return kes_rerank(encoder_, query.data(), query.size(), c.data.data(), c.lengths.data(),
                        docs.size(), logits);
    });
  }

  std::vector<int32_t> Tokenize(const std::string& text) const {
    return TokenIds(text, [&](int32_t* out, size_t capacity, size_t* needed) {
      return kes_encoder_tokenize(encoder_, text.data(), text.size(), out, capacity, needed);
    });
  }

  // Any thread, any time: only sets a flag (the embed under way stops before its next step).
  void Abort() { Check(kes_encoder_abort(encoder_)); }

 private:
  nb::object model_ref_;  // the model outlives the encoder
  kes_encoder* encoder_ = nullptr;
  std::atomic<bool> busy_{false};
};

// One segment as the callback saw it, copied out (its pointers are valid during the call only).
struct Segment {
  double start, end;
  std::string text;
  std::vector<int32_t> tokens;
};

class TranscriberHandle {
 public:
  TranscriberHandle(nb::object model, size_t n_threads, size_t max_audio_seconds)
      : model_ref_(std::move(model)) {
    const kes_model* m = nb::cast<const ModelHandle&>(model_ref_).get();
    kes_transcriber_params params = kes_transcriber_default_params();
    params.n_threads = n_threads;
    if (max_audio_seconds != 0) params.max_audio_seconds = max_audio_seconds;
    CallReleasingGil([&] { return kes_transcriber_create(m, &params, &transcriber_); });
  }
  ~TranscriberHandle() { kes_transcriber_destroy(transcriber_); }
  TranscriberHandle(const TranscriberHandle&) = delete;
  TranscriberHandle& operator=(const TranscriberHandle&) = delete;

  // (segments as (start, end, text bytes, tokens), the language code).
  std::tuple<nb::list, std::string> Pcm(Samples samples, uint32_t sample_rate,
                                        const std::optional<std::string>& language, int32_t task,
                                        bool timestamps, bool previous_text) {
    return Transcribe(language, task, timestamps, previous_text,
                      [&](const kes_transcribe_params* params, std::vector<Segment>* segments) {
                        return kes_transcribe_pcm(transcriber_, samples.data(), samples.shape(0),
                                                  sample_rate, params, &Collect, segments);
                      });
  }

  std::tuple<nb::list, std::string> File(const std::string& path,
                                         const std::optional<std::string>& language, int32_t task,
                                         bool timestamps, bool previous_text) {
    return Transcribe(language, task, timestamps, previous_text,
                      [&](const kes_transcribe_params* params, std::vector<Segment>* segments) {
                        return kes_transcribe_file(transcriber_, path.c_str(), params, &Collect,
                                                   segments);
                      });
  }

  // Any thread, any time: only sets a flag (the transcription under way stops before its next
  // window).
  void Abort() { Check(kes_transcriber_abort(transcriber_)); }

 private:
  // What Pcm and File return, from `call`(params, segments): their kes_transcribe_* call, made
  // with the GIL released, Collect gathering the segments.
  template <typename Call>
  std::tuple<nb::list, std::string> Transcribe(const std::optional<std::string>& language,
                                               int32_t task, bool timestamps, bool previous_text,
                                               Call&& call) {
    Busy busy(&busy_, "this transcriber");
    const kes_transcribe_params params = Params(language, task, timestamps, previous_text);
    std::vector<Segment> segments;
    CallReleasingGil([&] { return call(&params, &segments); });
    return {ToList(segments), Language()};
  }
  static kes_transcribe_params Params(const std::optional<std::string>& language, int32_t task,
                                      bool timestamps, bool previous_text) {
    kes_transcribe_params p = kes_transcribe_default_params();
    p.language = language ? language->c_str() : nullptr;
    p.task = task;
    p.timestamps = timestamps ? 1 : 0;
    p.previous_text = previous_text ? 1 : 0;
    return p;
  }
  static void Collect(void* user_data, const kes_segment* segment) {
    auto* out = static_cast<std::vector<Segment>*>(user_data);
    out->push_back({segment->start, segment->end, std::string(segment->text, segment->text_len),
                    std::vector<int32_t>(segment->tokens, segment->tokens + segment->n_tokens)});
  }
  static nb::list ToList(const std::vector<Segment>& segments) {
    nb::list list;
    for (const Segment& g : segments) {
      list.append(nb::make_tuple(g.start, g.end, nb::bytes(g.text.data(), g.text.size()),
                                 nb::cast(g.tokens)));
    }
    return list;
  }
  std::string Language() const {
    const char* code = nullptr;
    size_t len = 0;
    Check(kes_transcriber_language(transcriber_, &code, &len));
    return std::string(code, len);
  }

  nb::object model_ref_;
  kes_transcriber* transcriber_ = nullptr;
  std::atomic<bool> busy_{false};
};

void Convert(const std::string& src, const std::string& dst,
             const std::optional<std::string>& weights,
             const std::optional<std::string>& calibration, uint32_t prefill_tokens,
             uint32_t score_tokens, uint32_t max_seq_length, uint32_t max_batch,
             uint32_t step_tokens) {
  kes_convert_params params = kes_convert_default_params();
  if (weights) params.weights = weights->c_str();
  if (calibration) params.calibration = calibration->c_str();
  if (prefill_tokens != 0) params.prefill_tokens = prefill_tokens;
  if (score_tokens != 0) params.score_tokens = score_tokens;
  params.max_seq_length = max_seq_length;
  if (max_batch != 0) params.max_batch = max_batch;
  if (step_tokens != 0) params.step_tokens = step_tokens;
  CallReleasingGil([&] { return kes_convert(src.c_str(), dst.c_str(), &params); });
}

}  // namespace

NB_MODULE(_kestrel, m) {
  m.doc() = "Kestrel's C API, bound one call to one method (use the kestrel package instead)";
  m.attr("TOKENIZE_ADD_SPECIAL") = KES_TOKENIZE_ADD_SPECIAL;
  m.attr("TOKENIZE_PARSE_SPECIAL") = KES_TOKENIZE_PARSE_SPECIAL;
  m.attr("ABI_VERSION") = KES_ABI_VERSION;
  m.def("version", [] { return std::string(kes_version()); });
  m.def("abi_version", [] { return kes_abi_version(); });
  m.def("status_name",
        [](int status) { return std::string(kes_status_name(static_cast<kes_status>(status))); });
  m.def("convert", &Convert, nb::arg("src"), nb::arg("dst"), nb::arg("weights") = nb::none(),
        nb::arg("calibration") = nb::none(), nb::arg("prefill_tokens") = 0,
        nb::arg("score_tokens") = 0, nb::arg("max_seq_length") = 0, nb::arg("max_batch") = 0,
        nb::arg("step_tokens") = 0);

  nb::class_<ModelHandle>(m, "ModelHandle")
      .def(nb::init<const std::string&, int>(), nb::arg("path"), nb::arg("verify_weights") = -1)
      .def("info", &ModelHandle::Info)
      .def("tokenize", &ModelHandle::Tokenize, nb::arg("text"), nb::arg("flags"))
      .def("detokenize", &ModelHandle::Detokenize, nb::arg("ids"))
      .def("chat_template", &ModelHandle::ChatTemplate, nb::arg("messages"),
           nb::arg("format").none(), nb::arg("add_generation_prompt"))
      .def("is_end", &ModelHandle::IsEnd, nb::arg("token"));

  nb::class_<SessionHandle>(m, "SessionHandle")
      .def(nb::init<nb::object, size_t, size_t, int32_t>(), nb::arg("model"),
           nb::arg("context_length"), nb::arg("n_threads"), nb::arg("kv_type"))
      .def("reset", &SessionHandle::Reset)
      .def("abort", &SessionHandle::Abort)
      .def("position", &SessionHandle::Position)
      .def("prefill", &SessionHandle::Prefill, nb::arg("ids"))
      .def("next_token", &SessionHandle::NextToken, nb::arg("temperature"), nb::arg("top_k"),
           nb::arg("top_p"), nb::arg("seed"))
      .def("save_state", &SessionHandle::SaveState)
      .def("load_state", &SessionHandle::LoadState, nb::arg("state"))
      .def("save_state_file", &SessionHandle::SaveStateFile, nb::arg("path"))
      .def("load_state_file", &SessionHandle::LoadStateFile, nb::arg("path"))
      .def("chat_start", &SessionHandle::ChatStart, nb::arg("system").none(),
           nb::arg("format").none(), nb::arg("thinking").none())
      .def("chat", &SessionHandle::Chat, nb::arg("user"), nb::arg("max_tokens"),
           nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed"),
           nb::arg("on_piece").none())
      .def("generate", &SessionHandle::Generate, nb::arg("prompt"), nb::arg("max_tokens"),
           nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed"));

  nb::class_<EncoderHandle>(m, "EncoderHandle")
      .def(nb::init<nb::object, size_t>(), nb::arg("model"), nb::arg("n_threads"))
      .def("info", &EncoderHandle::Info)
      .def("embed", &EncoderHandle::Embed, nb::arg("texts"), nb::arg("out"))
      .def("rerank", &EncoderHandle::Rerank, nb::arg("query"), nb::arg("docs"), nb::arg("out"))
      .def("tokenize", &EncoderHandle::Tokenize, nb::arg("text"))
      .def("abort", &EncoderHandle::Abort);

  nb::class_<TranscriberHandle>(m, "TranscriberHandle")
      .def(nb::init<nb::object, size_t, size_t>(), nb::arg("model"), nb::arg("n_threads"),
           nb::arg("max_audio_seconds"))
      .def("transcribe_pcm", &TranscriberHandle::Pcm, nb::arg("samples"), nb::arg("sample_rate"),
           nb::arg("language"), nb::arg("task"), nb::arg("timestamps"), nb::arg("previous_text"))
      .def("transcribe_file", &TranscriberHandle::File, nb::arg("path"), nb::arg("language"),
           nb::arg("task"), nb::arg("timestamps"), nb::arg("previous_text"))
      .def("abort", &TranscriberHandle::Abort);
}
