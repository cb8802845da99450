// POST /v1/rerank (and /rerank, as llama.cpp's server names it) with the --rerank-model
// cross-encoder, in the shape Cohere's and Jina's rerank APIs share: `query` a string,
// `documents` a list of strings (or of {"text": ...} objects), `top_n` optional,
// `return_documents` optional. Each document is scored against the query by kes_rerank, so the
// logits are `kestrel rerank --json`'s; `relevance_score` is their sigmoid (the score
// sentence-transformers' CrossEncoder gives, in [0, 1] as those APIs' scores are) and `logit`
// the model's raw output. Results are best first.
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/memory_release.h"
#include "server/server_state.h"

namespace kestrel::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxDocuments = 1000;  // Cohere's limit per request

// The documents as texts: strings, or objects with a "text" string.
ApiError ReadDocuments(const json& documents, std::vector<std::string>* out) {
  if (!documents.is_array() || documents.empty() || documents.size() > kMaxDocuments) {
    return InvalidRequest("documents: expected a list of 1 to " + std::to_string(kMaxDocuments) +
                              " strings, got " +
                              (documents.is_array() ? std::to_string(documents.size()) + " items"
                                                    : std::string(documents.type_name())),
                          "documents", "invalid_value");
  }
  for (const json& d : documents) {
    const json* text = &d;
    if (d.is_object()) {
      const auto t = d.find("text");
      if (t != d.end()) text = &*t;
    }
    if (!text->is_string()) {
      return InvalidRequest(std::string("documents: expected strings or {\"text\": string} "
                                        "objects, got ") +
                                d.dump(),
                            "documents", "invalid_type");
    }
    out->push_back(text->get<std::string>());
  }
  return {};
}

void Rerank(ServerState& state, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (ApiError e = ParseJsonObject(req, &body); !e.ok()) return SendError(res, e);
  if (!state.rerank_model) return SendError(res, NoModel("reranker", "--rerank-model R.kes"));
  if (const auto model = body.find("model"); model != body.end() && !model->is_null()) {
    if (!model->is_string() || *model != state.rerank_model_id) {
      return SendError(res, NotFound("The model " + model->dump() +
                                         " does not exist; this server reranks with '" +
                                         state.rerank_model_id + "'",
                                     "model", "model_not_found"));
    }
  }
  const auto query = body.find("query");
  if (query == body.end() || !query->is_string()) {
    return SendError(res, InvalidRequest("query: expected a string", "query",
                                         query == body.end() ? "missing" : "invalid_type"));
  }
  const auto documents = body.find("documents");
  if (documents == body.end()) {
    return SendError(res, InvalidRequest("documents: required", "documents", "missing"));
  }
  std::vector<std::string> texts;
  ApiError e = ReadDocuments(*documents, &texts);
  if (!e.ok()) return SendError(res, e);
  size_t top_n = texts.size();
  if (const auto t = body.find("top_n"); t != body.end() && !t->is_null()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 1) {
      return SendError(res, InvalidRequest("top_n: expected a whole number >= 1, got " + t->dump(),
                                           "top_n", "invalid_value"));
    }
    top_n = std::min(top_n, static_cast<size_t>(t->get<int64_t>()));
  }
  bool return_documents = false;
  if (const auto r = body.find("return_documents"); r != body.end() && !r->is_null()) {
    if (!r->is_boolean()) {
      return SendError(res,
                       InvalidRequest("return_documents: expected true or false, got " + r->dump(),
                                      "return_documents", "invalid_type"));
    }
    return_documents = r->get<bool>();
  }

  std::unique_ptr<EncoderPool::Lease> encoder = state.rerankers->Acquire();
  if (encoder == nullptr) {
    return SendBusy(state, res,
                    "the server is busy: every reranker is scoring and the queue is full; retry "
                    "later");
  }
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  for (const std::string& t : texts) pointers.push_back(t.data()), lengths.push_back(t.size());
  std::vector<float> logits(texts.size());
  const std::string& q = query->get_ref<const std::string&>();
  if (kes_rerank(encoder->get(), q.data(), q.size(), pointers.data(), lengths.data(), texts.size(),
                 logits.data()) != KES_OK) {
    return SendError(res, InvalidRequest(kes_encoder_last_error(encoder->get()), "documents"));
  }
  encoder.reset();
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  json results = json::array();
  for (size_t r = 0; r < top_n; ++r) {
    const size_t i = order[r];
    json item = {{"index", i},
                 {"relevance_score", 1.0 / (1.0 + std::exp(-double{logits[i]}))},
                 {"logit", logits[i]}};
    if (return_documents) item["document"] = {{"text", texts[i]}};
    results.push_back(std::move(item));
  }
  SendJson(
      res,
      json({{"object", "list"}, {"model", state.rerank_model_id}, {"results", results}}).dump());
}

}  // namespace

std::string LoadRerankModel(ServerState& state) {
  const ServeOptions& o = state.options;
  EncoderModel m;
  std::string error =
      LoadEncoderModel(o, o.rerank_model_path, "--rerank-model", true, "reranker", &m);
  if (!error.empty()) return error;
  state.rerank_model_id = ModelId(o.rerank_model_path);
  state.rerankers = std::move(m.pool);
  state.rerank_model = std::move(m.model);
  return "";
}

void AddRerankRoutes(httplib::Server& http, ServerState& state) {
  for (const char* path : {"/v1/rerank", "/rerank"}) {
    http.Post(path, [&state](const httplib::Request& req, httplib::Response& res) {
      const ComputeScope computing(state.computing);
      Rerank(state, req, res);
    });
  }
}

}  // namespace kestrel::server
