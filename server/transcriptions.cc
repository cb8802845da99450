// POST /v1/audio/transcriptions with the --whisper-model: a multipart upload of a WAV file
// ("file"), decoded as `kestrel transcribe` decodes it (greedy, as faster-whisper's beam size
// 1), answered as `response_format` asks: json (default), text, srt, vtt or verbose_json with
// the segments. The upload is written to a private temporary file for kes_transcribe_file,
// which reads every WAV flavour `kestrel transcribe` reads; anything else is a 400.
#include <httplib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/memory_release.h"
#include "server/server_state.h"
#include "server/utf8.h"

namespace kestrel::server {
namespace {

using nlohmann::json;

struct Segment {
  double start = 0, end = 0;
  std::string text;
  std::vector<int32_t> tokens;
};

void Collect(void* user_data, const kes_segment* s) {
  Segment segment{s->start, s->end, ValidUtf8(std::string_view(s->text, s->text_len)),
                  std::vector<int32_t>(s->tokens, s->tokens + s->n_tokens)};
  static_cast<std::vector<Segment>*>(user_data)->push_back(std::move(segment));
}

// "00:01:02,345" (SubRip, comma) or "00:01:02.345" (WebVTT, dot).
std::string Timestamp(double seconds, char separator) {
  const long ms = std::lround(seconds * 1000);
  char text[32];
  std::snprintf(text, sizeof(text), "%02ld:%02ld:%02ld%c%03ld", ms / 3600000, ms / 60000 % 60,
                ms / 1000 % 60, separator, ms % 1000);
  return text;
}

// A temporary file holding `data`, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::string& data) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/kestrel-upload-XXXXXX";
    const int fd = mkstemp(&path_[0]);  // created 0600: the upload is the client's speech
    if (fd < 0) {
      path_.clear();
      return;
    }
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ok_ = done == data.size();
    close(fd);
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool ok_ = false;
};

std::string Field(const httplib::Request& req, const char* name) {
  return req.has_file(name) ? req.get_file_value(name).content : std::string();
}

void Transcribe(ServerState& state, const httplib::Request& req, httplib::Response& res) {
  if (!state.whisper_model) return SendError(res, NoModel("speech model", "--whisper-model W.kes"));
  if (!req.is_multipart_form_data()) {
    return SendError(res, InvalidRequest("expected a multipart/form-data upload with the audio "
                                         "in the field 'file'",
                                         "file", "invalid_type"));
  }
  if (!req.has_file("file")) {
    return SendError(res, InvalidRequest("file: required (a WAV file)", "file", "missing"));
  }
  const std::string model = Field(req, "model");
  if (!model.empty() && model != state.whisper_model_id) {
    return SendError(res, NotFound("The model '" + model +
                                       "' does not exist; this server "
                                       "transcribes with '" +
                                       state.whisper_model_id + "'",
                                   "model", "model_not_found"));
  }
  std::string format = Field(req, "response_format");
  if (format.empty()) format = "json";
  if (format != "json" && format != "text" && format != "srt" && format != "vtt" &&
      format != "verbose_json") {
    return SendError(res, InvalidRequest("response_format: expected json, text, srt, vtt or "
                                         "verbose_json, got '" +
                                             format + "'",
                                         "response_format", "invalid_value"));
  }
  const std::string language = Field(req, "language");

  const TempFile upload(req.get_file_value("file").content);
  if (!upload.ok()) {
    return SendError(res, ServerError("cannot store the upload in a temporary file"));
  }
  std::unique_ptr<TranscriberPool::Lease> transcriber = state.transcribers->Acquire();
  if (transcriber == nullptr) {
    return SendBusy(state, res,
                    "the server is busy: every transcriber is working and the queue is full; "
                    "retry later");
  }
  kes_transcribe_params params = kes_transcribe_default_params();
  params.language = language.empty() ? nullptr : language.c_str();
  std::vector<Segment> segments;
  const kes_status s =
      kes_transcribe_file(transcriber->get(), upload.path().c_str(), &params, Collect, &segments);
  if (s != KES_OK) {
    const std::string message = kes_transcriber_last_error(transcriber->get());
    if (s == KES_INVALID_ARGUMENT) {
      return SendError(
          res, InvalidRequest("file: " + message, language.empty() ? "file" : "", "invalid_audio"));
    }
    return SendError(res, ServerError(message));
  }
  const char* code = "";
  size_t code_len = 0;
  kes_transcriber_language(transcriber->get(), &code, &code_len);
  transcriber.reset();

  std::string text;
  for (const Segment& segment : segments) text += segment.text;
  if (format == "text") {
    res.set_content(text + "\n", "text/plain; charset=utf-8");
  } else if (format == "srt" || format == "vtt") {
    std::string out = format == "vtt" ? "WEBVTT\n\n" : "";
    for (size_t i = 0; i < segments.size(); ++i) {
      const char separator = format == "vtt" ? '.' : ',';
      if (format == "srt") out += std::to_string(i + 1) + "\n";
      out += Timestamp(segments[i].start, separator) + " --> " +
             Timestamp(segments[i].end, separator) + "\n" + segments[i].text + "\n\n";
    }
    res.set_content(out, format == "vtt" ? "text/vtt; charset=utf-8" : "text/plain; charset=utf-8");
  } else if (format == "json") {
    SendJson(res, json({{"text", text}}).dump());
  } else {
    json list = json::array();
    for (size_t i = 0; i < segments.size(); ++i) {
      list.push_back({{"id", i},
                      {"seek", 0},
                      {"start", segments[i].start},
                      {"end", segments[i].end},
                      {"text", segments[i].text},
                      {"tokens", segments[i].tokens},
                      {"temperature", 0.0}});
    }
    SendJson(res, json({{"task", "transcribe"},
                        {"language", std::string(code, code_len)},
                        {"duration", segments.empty() ? 0.0 : segments.back().end},
                        {"text", text},
                        {"segments", list}})
                      .dump());
  }
}

}  // namespace

std::string LoadWhisperModel(ServerState& state) {
  const ServeOptions& o = state.options;
  std::optional<kestrel::Model> model;
  kestrel::ModelInfo info{};
  if (std::string error = OpenModel(o.whisper_model_path, &model, &info); !error.empty())
    return error;
  kes_transcriber_params params = kes_transcriber_default_params();
  params.n_threads = o.n_threads;
  std::vector<TranscriberPool::Owned> transcribers;
  for (size_t i = 0; i < o.parallel; ++i) {
    kes_transcriber* transcriber = nullptr;
    if (kes_transcriber_create(model->get(), &params, &transcriber) != KES_OK) {
      return "--whisper-model " + o.whisper_model_path + ": " + kes_last_error();
    }
    transcribers.emplace_back(transcriber);
  }
  std::printf("speech model %s: %zu transcriber%s, weights %s\n",
              ModelId(o.whisper_model_path).c_str(), o.parallel, o.parallel == 1 ? "" : "s",
              o.Bytes(info.weights_bytes).c_str());
  state.whisper_model_id = ModelId(o.whisper_model_path);
  state.transcribers = std::make_unique<TranscriberPool>(std::move(transcribers), o.queue);
  state.whisper_model = std::move(model);
  return "";
}

void AddTranscriptionRoutes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/audio/transcriptions",
            [&state](const httplib::Request& req, httplib::Response& res) {
              const ComputeScope computing(state.computing);
              Transcribe(state, req, res);
            });
}

}  // namespace kestrel::server
