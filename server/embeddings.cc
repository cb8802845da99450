// POST /v1/embeddings with the --embed-model encoder: `input` a string, a list of strings, a
// list of token ids or a list of such lists; `encoding_format` "float" or "base64" (little-
// endian float32, which the official Python client asks for by default and decodes itself).
// Texts are tokenized as `kestrel embed` does (kes_encoder_tokenize), then embedded from their
// ids (kes_embed_tokens, which allocates nothing), so the vectors are `kestrel embed`'s.
#include <httplib.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/memory_release.h"
#include "server/server_state.h"

namespace kestrel::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxInputs = 2048;  // as OpenAI's limit per request

std::string Base64(const void* data, size_t size) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t b0 = bytes[i];
    const uint32_t b1 = i + 1 < size ? bytes[i + 1] : 0;
    const uint32_t b2 = i + 2 < size ? bytes[i + 2] : 0;
    const uint32_t v = (b0 << 16) | (b1 << 8) | b2;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[v & 63] : '=';
  }
  return out;
}

ApiError Tokenize(const ServerState& state, kes_encoder* encoder, const std::string& text,
                  std::vector<int32_t>* ids) {
  ids->resize(state.embed_max_tokens);
  size_t n = 0;
  const kes_status s =
      kes_encoder_tokenize(encoder, text.data(), text.size(), ids->data(), ids->size(), &n);
  if (s != KES_OK) return InvalidRequest(kes_encoder_last_error(encoder), "input");
  ids->resize(n);
  return {};
}

// The inputs as token ids; texts are tokenized with `encoder`.
ApiError ReadInputs(const ServerState& state, kes_encoder* encoder, const json& input,
                    std::vector<std::vector<int32_t>>* out) {
  const char* expected = "a string, a list of strings, a list of token ids or a list of them";
  const auto ids_of = [&](const json& list, std::vector<int32_t>* ids) -> ApiError {
    if (list.empty() || list.size() > state.embed_max_tokens) {
      return InvalidRequest("input: a list of token ids must hold 1 to " +
                                std::to_string(state.embed_max_tokens) + " ids, got " +
                                std::to_string(list.size()),
                            "input", "invalid_value");
    }
    for (const json& t : list) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<uint64_t>() >= state.embed_vocab) {
        return InvalidRequest("input: expected token ids in [0, " +
                                  std::to_string(state.embed_vocab) + "), got " + t.dump(),
                              "input", "invalid_value");
      }
      ids->push_back(t.get<int32_t>());
    }
    return {};
  };
  if (input.is_string()) {
    out->emplace_back();
    return Tokenize(state, encoder, input.get<std::string>(), &out->back());
  }
  if (!input.is_array() || input.empty()) {
    return InvalidRequest(std::string("input: expected ") + expected + ", got " +
                              (input.is_array() ? "an empty list" : input.type_name()),
                          "input", input.is_array() ? "empty" : "invalid_type");
  }
  if (input.size() > kMaxInputs) {
    return InvalidRequest("input: at most " + std::to_string(kMaxInputs) + " inputs, got " +
                              std::to_string(input.size()),
                          "input", "invalid_value");
  }
  if (input[0].is_number_integer()) {
    out->emplace_back();
    return ids_of(input, &out->back());
  }
  for (const json& item : input) {
    out->emplace_back();
    ApiError e;
    if (item.is_string()) {
      e = Tokenize(state, encoder, item.get<std::string>(), &out->back());
    } else if (item.is_array()) {
      e = ids_of(item, &out->back());
    } else {
      e = InvalidRequest(
          std::string("input: expected ") + expected + ", got a list holding " + item.type_name(),
          "input", "invalid_type");
    }
    if (!e.ok()) return e;
  }
  return {};
}

void Embed(ServerState& state, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (ApiError e = ParseJsonObject(req, &body); !e.ok()) return SendError(res, e);
  if (!state.embed_model) return SendError(res, NoModel("embedding model", "--embed-model E.kes"));
  const auto model = body.find("model");
  if (model != body.end() && !model->is_null()) {
    if (!model->is_string()) {
      return SendError(
          res, InvalidRequest(std::string("model: expected a string, got ") + model->type_name(),
                              "model", "invalid_type"));
    }
    if (*model != state.embed_model_id) {
      return SendError(res, NotFound("The model '" + model->get<std::string>() +
                                         "' does not exist; this server embeds with '" +
                                         state.embed_model_id + "'",
                                     "model", "model_not_found"));
    }
  }
  bool base64 = false;
  if (const auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      return SendError(res, InvalidRequest("encoding_format: expected \"float\" or \"base64\", "
                                           "got " +
                                               f->dump(),
                                           "encoding_format", "invalid_value"));
    }
    base64 = *f == "base64";
  }
  if (const auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() != static_cast<int64_t>(state.embed_dim)) {
      return SendError(res,
                       InvalidRequest("dimensions: this model's embeddings have " +
                                          std::to_string(state.embed_dim) + ", got " + d->dump(),
                                      "dimensions", "invalid_value"));
    }
  }
  const auto input = body.find("input");
  if (input == body.end()) return SendError(res, InvalidRequest("input: required", "input"));

  std::unique_ptr<EncoderPool::Lease> encoder = state.encoders->Acquire();
  if (encoder == nullptr) {
    return SendBusy(state, res,
                    "the server is busy: every encoder is embedding and the queue is full; "
                    "retry later");
  }
  std::vector<std::vector<int32_t>> ids;
  ApiError e = ReadInputs(state, encoder->get(), *input, &ids);
  if (!e.ok()) return SendError(res, e);
  std::vector<const int32_t*> starts;
  std::vector<size_t> lengths;
  size_t tokens = 0;
  for (const std::vector<int32_t>& one : ids) {
    starts.push_back(one.data());
    lengths.push_back(one.size());
    tokens += one.size();
  }
  std::vector<float> vectors(ids.size() * state.embed_dim);
  if (kes_embed_tokens(encoder->get(), starts.data(), lengths.data(), ids.size(), vectors.data(),
                       state.embed_dim) != KES_OK) {
    return SendError(res, InvalidRequest(kes_encoder_last_error(encoder->get()), "input"));
  }
  encoder.reset();
  json data = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* v = vectors.data() + i * state.embed_dim;
    json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = Base64(v, state.embed_dim * sizeof(float));
    } else {
      item["embedding"] = std::vector<float>(v, v + state.embed_dim);
    }
    data.push_back(std::move(item));
  }
  SendJson(res, json({{"object", "list"},
                      {"data", data},
                      {"model", state.embed_model_id},
                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}})
                    .dump());
}

}  // namespace

std::string LoadEncoderModel(const ServeOptions& o, const std::string& path, const char* flag,
                             bool reranker, const char* what, EncoderModel* out) {
  kestrel::ModelInfo info{};
  if (std::string error = OpenModel(path, &out->model, &info); !error.empty()) return error;
  kes_encoder_params params = kes_encoder_default_params();
  params.n_threads = o.n_threads;
  size_t arena = 0;
  if (kes_encoder_arena_size(out->model->get(), &params, &arena) != KES_OK) {
    return std::string(flag) + " " + path + ": " + kes_model_last_error(out->model->get());
  }
  std::vector<EncoderPool::Owned> encoders;
  for (size_t i = 0; i < o.parallel; ++i) {
    kes_encoder* encoder = nullptr;
    if (kes_encoder_create(out->model->get(), &params, nullptr, 0, &encoder) != KES_OK) {
      return std::string(flag) + " " + path + ": " + kes_last_error();
    }
    encoders.emplace_back(encoder);
  }
  out->info.struct_size = sizeof(out->info);
  if (kes_encoder_get_info(encoders[0].get(), &out->info) != KES_OK) {
    return kes_encoder_last_error(encoders[0].get());
  }
  if ((out->info.is_reranker != 0) != reranker) {
    return std::string(flag) + " " + path +
           (reranker ? " embeds texts; a reranker (cross-encoder) scores pairs: give it as "
                       "--embed-model"
                     : " is a reranker (a cross-encoder): give it as --rerank-model");
  }
  std::printf("%s %s: %zu tokens per input, %zu encoder%s\n", what, ModelId(path).c_str(),
              out->info.max_tokens, o.parallel, o.parallel == 1 ? "" : "s");
  std::printf("  weights:      %s\n", o.Bytes(info.weights_bytes).c_str());
  std::printf("  arenas:       %s (%zu x %s)\n", o.Bytes(arena * o.parallel).c_str(), o.parallel,
              o.Bytes(arena).c_str());
  out->n_vocab = info.n_vocab;
  out->pool = std::make_unique<EncoderPool>(std::move(encoders), o.queue);
  return "";
}

std::string LoadEmbedModel(ServerState& state) {
  const ServeOptions& o = state.options;
  EncoderModel m;
  std::string error =
      LoadEncoderModel(o, o.embed_model_path, "--embed-model", false, "embedding model", &m);
  if (!error.empty()) return error;
  std::printf("  dimensions:   %zu\n", m.info.embedding_dim);
  state.embed_dim = m.info.embedding_dim;
  state.embed_max_tokens = m.info.max_tokens;
  state.embed_vocab = m.n_vocab;
  state.embed_model_id = ModelId(o.embed_model_path);
  state.encoders = std::move(m.pool);
  state.embed_model = std::move(m.model);
  return "";
}

void AddEmbeddingRoutes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/embeddings", [&state](const httplib::Request& req, httplib::Response& res) {
    const ComputeScope computing(state.computing);
    Embed(state, req, res);
  });
}

}  // namespace kestrel::server
