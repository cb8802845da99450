#include "converters/hf/sentence_transformers.h"

#include <sys/stat.h>

#include "converters/safetensors/json_reader.h"

namespace kestrel {
namespace {

using nlohmann::json;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A module type is "sentence_transformers.models.Pooling" or, in older files, just "Pooling".
bool IsModule(const std::string& type, const std::string& name) {
  return type == name || type == "sentence_transformers.models." + name;
}

Status ReadPooling(const std::string& path, SentenceEmbeddingConfig* out) {
  json config;
  KES_RETURN_IF_ERROR(safetensors::ReadJson(path, json::value_t::object, &config));
  int modes = 0;
  const auto flag = [&](const char* key) {
    const auto it = config.find(key);
    return it != config.end() && it->is_boolean() && it->get<bool>();
  };
  if (flag("pooling_mode_mean_tokens")) ++modes, out->pooling = fb::PoolMode::Mean;
  if (flag("pooling_mode_cls_token")) ++modes, out->pooling = fb::PoolMode::Cls;
  if (flag("pooling_mode_max_tokens")) ++modes, out->pooling = fb::PoolMode::Max;
  for (const char* unsupported : {"pooling_mode_mean_sqrt_len_tokens",
                                  "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"}) {
    KES_CHECK_OR_RETURN(!flag(unsupported), path + ": " + unsupported +
                                                " is not supported (supported: mean, cls, max)");
  }
  KES_CHECK_OR_RETURN(modes == 1, path +
                                      ": expected exactly one of pooling_mode_mean_tokens, "
                                      "pooling_mode_cls_token, pooling_mode_max_tokens true, " +
                                      (modes == 0 ? std::string("found none")
                                                  : "found " + std::to_string(modes) +
                                                        " (concatenated poolings are not "
                                                        "supported)"));
  return OkStatus();
}

}  // namespace

Status ReadSentenceEmbeddingConfig(const std::string& folder, SentenceEmbeddingConfig* out) {
  SentenceEmbeddingConfig c;
  const std::string modules_path = folder + "/modules.json";
  if (!Exists(modules_path)) {
    *out = c;
    return OkStatus();
  }
  c.found = true;
  json modules;
  KES_RETURN_IF_ERROR(safetensors::ReadJson(modules_path, json::value_t::array, &modules));
  bool transformer = false, pooling = false;
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& m = modules[i];
    const std::string where = modules_path + ": module " + std::to_string(i);
    KES_CHECK_OR_RETURN(m.is_object() && m.contains("type") && m["type"].is_string(),
                        where + ": expected an object with a string \"type\"");
    const std::string type = m["type"].get<std::string>();
    const std::string path =
        m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
    KES_CHECK_OR_RETURN(path.find("..") == std::string::npos && (path.empty() || path[0] != '/'),
                        where + ": expected a path inside the folder, found '" + path + "'");
    if (IsModule(type, "Transformer")) {
      KES_CHECK_OR_RETURN(i == 0 && path.empty(),
                          where + ": expected the Transformer first, in the folder itself");
      transformer = true;
    } else if (IsModule(type, "Pooling")) {
      KES_CHECK_OR_RETURN(transformer && !pooling, where +
                                                       ": expected one Pooling after the "
                                                       "Transformer");
      KES_RETURN_IF_ERROR(ReadPooling(folder + "/" + path + "/config.json", &c));
      pooling = true;
    } else if (IsModule(type, "Normalize")) {
      KES_CHECK_OR_RETURN(pooling && i + 1 == modules.size(),
                          where + ": expected Normalize last, after Pooling");
      c.normalize = true;
    } else {
      return Status::Error(where + ": unsupported module '" + type +
                           "' (supported: Transformer, Pooling, Normalize)");
    }
  }
  KES_CHECK_OR_RETURN(transformer && pooling,
                      modules_path + ": expected a Transformer and a Pooling module");
  const std::string bert_config = folder + "/sentence_bert_config.json";
  if (Exists(bert_config)) {
    json config;
    KES_RETURN_IF_ERROR(safetensors::ReadJson(bert_config, json::value_t::object, &config));
    if (config.contains("max_seq_length")) {
      const json& v = config["max_seq_length"];
      KES_CHECK_OR_RETURN(
          v.is_number_unsigned() && v.get<uint64_t>() >= 3 && v.get<uint64_t>() <= 65536,
          bert_config +
              ": max_seq_length: expected a whole number 3..65536, "
              "found " +
              v.dump());
      c.max_seq_length = v.get<uint32_t>();
    }
  }
  *out = c;
  return OkStatus();
}

}  // namespace kestrel
