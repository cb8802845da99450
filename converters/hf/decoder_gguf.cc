#include "converters/hf/decoder_gguf.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <set>

#include "converters/hf/hf_import.h"
#include "converters/hf_json_fields.h"
#include "converters/safetensors/checkpoint.h"
#include "converters/safetensors/json_reader.h"
#include "converters/store_weights.h"

namespace kestrel {
namespace {

using hf::JsonNode;
using nlohmann::json;

std::string Num(uint64_t v) { return std::to_string(v); }

bool FieldIsTrue(const JsonNode& node, const char* key) {
  const JsonNode child = node.Child(key);
  return child.present() && child.value->is_boolean() && child.value->get<bool>();
}

// The GGUF architecture llama.cpp's converter writes for a config.json model_type; "" for none.
std::string GgufArchitecture(const std::string& model_type) {
  if (model_type == "llama" || model_type == "mistral") return "llama";
  if (model_type == "qwen2" || model_type == "qwen3" || model_type == "smollm3") return model_type;
  if (model_type == "gemma2" || model_type == "phi3") return model_type;
  // gemma3_text: 270M and 1B; gemma3: 4B and up, whose text_config is the decoder.
  if (model_type == "gemma3_text" || model_type == "gemma3") return "gemma3";
  return "";
}

bool IsGemma(const std::string& arch) { return arch == "gemma2" || arch == "gemma3"; }

// config.json as llama.cpp's converter reads it: a multimodal Gemma 3's text_config moved to the
// top level, and defaults where a Gemma 3 text_config leaves keys out (the 4B and larger ones
// do).
void NormalizeConfig(json* config) {
  const auto text = config->find("text_config");
  if (text != config->end() && text->is_object()) {
    const json inner = *text;
    for (const auto& [key, value] : inner.items()) (*config)[key] = value;
  }
  const auto type = config->find("model_type");
  if (type == config->end() || !type->is_string() || GgufArchitecture(*type) != "gemma3") return;
  // Those llama.cpp's Gemma3Model defaults too, and the vocabulary every Gemma 3 shares.
  const std::pair<const char*, json> defaults[] = {
      {"vocab_size", 262208},     {"max_position_embeddings", 131072},
      {"num_attention_heads", 8}, {"num_key_value_heads", 4},
      {"head_dim", 256},          {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0}};
  for (const auto& [key, value] : defaults) {
    if (!config->contains(key)) (*config)[key] = value;
  }
}

// A required whole number in [1, max].
Status Dimension(const JsonNode& node, uint64_t max, uint32_t* out) {
  uint64_t v = 0;
  KES_RETURN_IF_ERROR(hf::GetUint(node, &v));
  KES_CHECK_OR_RETURN(v >= 1 && v <= max, node.Where() + ": expected a whole number 1.." +
                                              Num(max) + ", found " + Num(v));
  *out = static_cast<uint32_t>(v);
  return OkStatus();
}

Status PositiveNumber(const JsonNode& node, double* out) {
  KES_CHECK_OR_RETURN(node.present() && node.value->is_number() && node.value->get<double>() > 0 &&
                          std::isfinite(node.value->get<double>()),
                      node.Where() + ": expected a positive number, found " +
                          (node.present() ? node.value->dump() : std::string("no such field")));
  *out = node.value->get<double>();
  return OkStatus();
}

struct DecoderShape {
  std::string arch;
  bool permute_qk = false;  // llama.cpp's `llama` and `smollm3` files hold Q/K rows permuted
  uint32_t vocab = 0, d_model = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
};

// The rope_scaling (or transformers 5's rope_parameters) object: linear scaling as GGUF keys,
// Llama 3's frequency factors as the rope_freqs tensor, anything else named for the converter to
// refuse (its message lists what is supported).
Status AddRopeScaling(const JsonNode& config, const DecoderShape& s, double theta,
                      gguf::Builder* out) {
  JsonNode rope = config.Child("rope_scaling");
  if (rope.is_null()) rope = config.Child("rope_parameters");
  if (rope.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(hf::ExpectType(rope, json::value_t::object));
  if (rope.Child("full_attention").present()) rope = rope.Child("full_attention");
  std::string type;
  const JsonNode type_node =
      rope.Child("rope_type").present() ? rope.Child("rope_type") : rope.Child("type");
  if (type_node.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(hf::GetString(type_node, &type));
  if (type == "default") return OkStatus();
  const std::string a = s.arch;
  if (type == "llama3") {
    double factor = 8, low = 1, high = 4, original = 8192;
    const auto optional = [&](const char* key, double* v) {
      return rope.Child(key).present() ? PositiveNumber(rope.Child(key), v) : OkStatus();
    };
    KES_RETURN_IF_ERROR(optional("factor", &factor));
    KES_RETURN_IF_ERROR(optional("low_freq_factor", &low));
    KES_RETURN_IF_ERROR(optional("high_freq_factor", &high));
    KES_RETURN_IF_ERROR(optional("original_max_position_embeddings", &original));
    KES_CHECK_OR_RETURN(high > low, rope.Where() + ": expected high_freq_factor above " +
                                        "low_freq_factor, found " + std::to_string(high) + " and " +
                                        std::to_string(low));
    // LlamaModel.generate_extra_tensors: per rotated pair, the divisor of its frequency,
    // computed in float32 as torch computes it there.
    std::vector<float> factors;
    for (uint32_t i = 0; i < s.head_dim; i += 2) {
      const float freq = 1.0f / std::pow(static_cast<float>(theta),
                                         static_cast<float>(i) / static_cast<float>(s.head_dim));
      const double wavelen = 2 * M_PI / freq;
      if (wavelen < original / high) {
        factors.push_back(1.0f);
      } else if (wavelen > original / low) {
        factors.push_back(static_cast<float>(factor));
      } else {
        const double smooth = (original / wavelen - low) / (high - low);
        factors.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
      }
    }
    std::vector<uint8_t> bytes(factors.size() * 4);
    std::memcpy(bytes.data(), factors.data(), bytes.size());
    out->AddOwnedTensor("rope_freqs.weight", {factors.size()}, gguf::GgmlType::F32,
                        std::move(bytes));
    return OkStatus();
  }
  out->SetString(a + ".rope.scaling.type", type);
  if (type == "linear") {
    double factor = 0;
    KES_RETURN_IF_ERROR(PositiveNumber(rope.Child("factor"), &factor));
    out->SetFloat32(a + ".rope.scaling.factor", static_cast<float>(factor));
  }
  return OkStatus();
}

// SmolLM3's no_rope_layers (1: the layer rotates) must be the pattern llama.cpp hard-codes: no
// RoPE in every 4th layer.
Status CheckNoRopeLayers(const JsonNode& config, uint32_t layers) {
  const JsonNode list = config.Child("no_rope_layers");
  if (list.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(hf::ExpectType(list, json::value_t::array));
  bool matches = list.value->size() == layers;
  for (uint32_t l = 0; matches && l < layers; ++l) {
    const json& v = (*list.value)[l];
    matches = v.is_number_integer() && v.get<int64_t>() == ((l + 1) % 4 != 0 ? 1 : 0);
  }
  KES_CHECK_OR_RETURN(matches, list.Where() + ": expected RoPE skipped in every 4th layer (" +
                                   Num(layers) +
                                   " flags, 0 at layers 3, 7, ...: what llama.cpp's smollm3 "
                                   "runs), found " +
                                   list.value->dump());
  return OkStatus();
}

Status ReadShape(const JsonNode& config, DecoderShape* s) {
  KES_RETURN_IF_ERROR(Dimension(config.Child("vocab_size"), 1u << 24, &s->vocab));
  KES_RETURN_IF_ERROR(Dimension(config.Child("hidden_size"), 1u << 16, &s->d_model));
  KES_RETURN_IF_ERROR(Dimension(config.Child("intermediate_size"), 1u << 20, &s->ffn));
  KES_RETURN_IF_ERROR(Dimension(config.Child("num_hidden_layers"), 1024, &s->layers));
  KES_RETURN_IF_ERROR(Dimension(config.Child("num_attention_heads"), 1024, &s->heads));
  s->kv_heads = s->heads;
  if (!config.Child("num_key_value_heads").is_null()) {
    KES_RETURN_IF_ERROR(Dimension(config.Child("num_key_value_heads"), 1024, &s->kv_heads));
  }
  s->head_dim = s->d_model / s->heads;
  if (!config.Child("head_dim").is_null()) {
    KES_RETURN_IF_ERROR(Dimension(config.Child("head_dim"), 1024, &s->head_dim));
  }
  for (const char* flag : {"mlp_bias", "use_sliding_window"}) {
    const JsonNode node = config.Child(flag);
    if (node.is_null()) continue;
    bool on = false;
    KES_RETURN_IF_ERROR(hf::GetBool(node, &on));
    KES_CHECK_OR_RETURN(
        !on, node.Where() + ": expected false, found true (" +
                 (std::string(flag) == "mlp_bias"
                      ? "feed-forward biases are not supported)"
                      : "sliding-window attention is not supported for " + s->arch + ")"));
  }
  return OkStatus();
}

void AddHyperParameters(const DecoderShape& s, uint32_t context, double eps, double theta,
                        bool has_head_dim, gguf::Builder* out) {
  const std::string& a = s.arch;
  out->SetUint32(a + ".vocab_size", s.vocab);
  out->SetUint32(a + ".context_length", context);
  out->SetUint32(a + ".embedding_length", s.d_model);
  out->SetUint32(a + ".feed_forward_length", s.ffn);
  out->SetUint32(a + ".block_count", s.layers);
  out->SetUint32(a + ".attention.head_count", s.heads);
  out->SetUint32(a + ".attention.head_count_kv", s.kv_heads);
  out->SetFloat32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(eps));
  out->SetFloat32(a + ".rope.freq_base", static_cast<float>(theta));
  if (has_head_dim) {
    out->SetUint32(a + ".attention.key_length", s.head_dim);
    out->SetUint32(a + ".attention.value_length", s.head_dim);
  }
  if (s.arch == "llama") out->SetUint32(a + ".rope.dimension_count", s.head_dim);
}

// A soft-cap from config.json: null (none) is 0, which the GGUF converters read as off.
Status SoftCap(const JsonNode& node, float* out) {
  *out = 0;
  if (node.is_null()) return OkStatus();
  double v = 0;
  KES_RETURN_IF_ERROR(PositiveNumber(node, &v));
  *out = static_cast<float>(v);
  return OkStatus();
}

// Gemma's sliding-window layers: `layer_types` (or sliding_window_pattern) must be what llama.cpp
// runs, every `period`-th layer global (Gemma 2: odd layers; Gemma 3: every sixth).
Status CheckSlidingLayers(const JsonNode& config, uint32_t layers, uint32_t period) {
  const JsonNode pattern = config.Child("sliding_window_pattern");
  if (!pattern.is_null()) {
    uint32_t p = 0;
    KES_RETURN_IF_ERROR(Dimension(pattern, 1024, &p));
    KES_CHECK_OR_RETURN(p == period, pattern.Where() + ": expected " + Num(period) +
                                         " (what llama.cpp runs), found " + Num(p));
  }
  const JsonNode types = config.Child("layer_types");
  if (types.is_null()) return OkStatus();
  KES_RETURN_IF_ERROR(hf::ExpectType(types, json::value_t::array));
  bool matches = types.value->size() == layers;
  for (uint32_t l = 0; matches && l < layers; ++l) {
    const bool global = (l + 1) % period == 0;
    matches = (*types.value)[l] == (global ? "full_attention" : "sliding_attention");
  }
  KES_CHECK_OR_RETURN(matches, types.Where() + ": expected every " + Num(period) +
                                   "th layer full_attention and the others sliding_attention "
                                   "(what llama.cpp runs), found " +
                                   types.value->dump().substr(0, 300));
  return OkStatus();
}

// Gemma 2's and Gemma 3's own keys, as Gemma2Model and Gemma3Model write them.
Status AddGemmaParameters(const JsonNode& config, const DecoderShape& s, gguf::Builder* out) {
  const std::string& a = s.arch;
  KES_RETURN_IF_ERROR(CheckSlidingLayers(config, s.layers, a == "gemma2" ? 2 : 6));
  uint32_t window = 0;
  KES_RETURN_IF_ERROR(Dimension(config.Child("sliding_window"), 1u << 24, &window));
  out->SetUint32(a + ".attention.sliding_window", window);
  float attn_cap = 0, final_cap = 0;
  KES_RETURN_IF_ERROR(SoftCap(config.Child("attn_logit_softcapping"), &attn_cap));
  KES_RETURN_IF_ERROR(SoftCap(config.Child("final_logit_softcapping"), &final_cap));
  if (a == "gemma2") {
    out->SetFloat32(a + ".attn_logit_softcapping", attn_cap);
    out->SetFloat32(a + ".final_logit_softcapping", final_cap);
    return OkStatus();
  }
  KES_CHECK_OR_RETURN(attn_cap == 0, config.Child("attn_logit_softcapping").Where() +
                                         ": expected null (Gemma 3 has no attention soft-cap)");
  if (final_cap != 0) out->SetFloat32(a + ".final_logit_softcapping", final_cap);
  JsonNode local = config.Child("rope_local_base_freq");
  if (local.is_null())
    local = config.Child("rope_parameters").Child("sliding_attention").Child("rope_theta");
  if (!local.is_null()) {
    double theta = 0;
    KES_RETURN_IF_ERROR(PositiveNumber(local, &theta));
    out->SetFloat32(a + ".rope.freq_base_swa", static_cast<float>(theta));
  }
  return OkStatus();
}

// Phi-3's keys and LongRoPE tensors, as Phi3MiniModel writes them: the rotated dimensions from
// partial_rotary_factor, the original context, the sliding window (0 when none), and for the 128k
// models rope_factors_long/short with the attention factor computed from the context ratio.
Status AddPhi3Parameters(const JsonNode& config, const DecoderShape& s, uint32_t context,
                         gguf::Builder* out) {
  const std::string& a = s.arch;
  JsonNode rope = config.Child("rope_scaling");
  if (rope.is_null()) rope = config.Child("rope_parameters");
  const auto rope_or_top = [&](const char* key) {
    return rope.Child(key).is_null() ? config.Child(key) : rope.Child(key);
  };
  uint32_t original = 0;
  KES_RETURN_IF_ERROR(
      Dimension(rope_or_top("original_max_position_embeddings"), 1u << 24, &original));
  out->SetUint32(a + ".rope.scaling.original_context_length", original);
  double partial = 1;
  if (!rope_or_top("partial_rotary_factor").is_null()) {
    KES_RETURN_IF_ERROR(PositiveNumber(rope_or_top("partial_rotary_factor"), &partial));
  }
  const uint32_t rope_dims = static_cast<uint32_t>(partial * s.d_model) / s.heads;
  out->SetUint32(a + ".rope.dimension_count", rope_dims);
  uint32_t window = 0;
  if (!config.Child("sliding_window").is_null()) {
    KES_RETURN_IF_ERROR(Dimension(config.Child("sliding_window"), 1u << 24, &window));
  }
  out->SetUint32(a + ".attention.sliding_window", window);
  const JsonNode long_factors = rope.Child("long_factor");
  if (long_factors.is_null()) return OkStatus();
  std::string type;
  const JsonNode type_node =
      rope.Child("rope_type").present() ? rope.Child("rope_type") : rope.Child("type");
  KES_RETURN_IF_ERROR(hf::GetString(type_node, &type));
  KES_CHECK_OR_RETURN(
      type == "longrope" || type == "su",
      type_node.Where() + ": expected \"longrope\" with long_factor, found \"" + type + "\"");
  const double scale = static_cast<double>(context) / original;
  const double attn_factor = scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(original)) : 1;
  out->SetFloat32(a + ".rope.scaling.attn_factor", static_cast<float>(attn_factor));
  for (const char* kind : {"long", "short"}) {
    const JsonNode list = rope.Child(std::string(kind) + "_factor");
    KES_RETURN_IF_ERROR(hf::ExpectType(list, json::value_t::array));
    KES_CHECK_OR_RETURN(list.value->size() * 2 == rope_dims,
                        list.Where() + ": expected " + Num(rope_dims / 2) +
                            " factors (half the rotated dimensions), found " +
                            Num(list.value->size()));
    std::vector<uint8_t> bytes;
    for (const json& v : *list.value) {
      KES_CHECK_OR_RETURN(v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>()),
                          list.Where() + ": expected positive numbers, found " + v.dump());
      const float f = static_cast<float>(v.get<double>());
      const uint8_t* p = reinterpret_cast<const uint8_t*>(&f);
      bytes.insert(bytes.end(), p, p + 4);
    }
    out->AddOwnedTensor(std::string("rope_factors_") + kind + ".weight", {rope_dims / 2},
                        gguf::GgmlType::F32, std::move(bytes));
  }
  return OkStatus();
}

// An embedding model's sentence-transformers Pooling module as _try_set_pooling_type reads it
// (Qwen3-Embedding: last token): <arch>.pooling_type 1 mean, 2 CLS, 3 last, in that order of the
// pooling_mode_* flags, else its pooling_mode string.
Status AddPoolingType(const std::string& folder, const std::string& arch, gguf::Builder* out) {
  if (!PathExists(folder + "/modules.json")) return OkStatus();
  json modules_storage;
  KES_RETURN_IF_ERROR(
      safetensors::ReadJson(folder + "/modules.json", json::value_t::array, &modules_storage));
  std::string path;
  bool found = false;
  for (const json& module : modules_storage) {
    const std::string type =
        module.is_object() && module.contains("type") && module["type"].is_string()
            ? module["type"].get<std::string>()
            : "";
    if (type.size() >= 7 && type.compare(type.size() - 7, 7, "Pooling") == 0) {
      KES_CHECK_OR_RETURN(module.contains("path") && module["path"].is_string(),
                          folder + "/modules.json: the Pooling module has no path");
      path = module["path"].get<std::string>();
      KES_CHECK_OR_RETURN(safetensors::CheckShardName(path).empty(),
                          folder + "/modules.json: the Pooling module's path '" + path +
                              "' is not a folder name inside the checkpoint");
      found = true;
      break;
    }
  }
  if (!found) return OkStatus();
  json storage;
  JsonNode pooling;
  KES_RETURN_IF_ERROR(hf::OpenJsonObject(folder + "/" + path + "/config.json", &storage, &pooling));
  const auto flag = [&](const char* key) { return FieldIsTrue(pooling, key); };
  uint32_t type = 0;
  const JsonNode mode = pooling.Child("pooling_mode");
  if (flag("pooling_mode_mean_tokens")) {
    type = 1;
  } else if (flag("pooling_mode_cls_token")) {
    type = 2;
  } else if (flag("pooling_mode_lasttoken")) {
    type = 3;
  } else if (mode.present() && mode.value->is_string()) {
    const std::string m = mode.value->get<std::string>();
    type = m == "mean" ? 1 : m == "cls" ? 2 : m == "lasttoken" ? 3 : 0;
  }
  KES_CHECK_OR_RETURN(type != 0, pooling.Where() +
                                     ": expected mean, CLS or last-token pooling (what a "
                                     "decoder embedding model takes)");
  out->SetUint32(arch + ".pooling_type", type);
  return OkStatus();
}

// The GGUF name of a checkpoint tensor (without its "model." prefix), or "" when a decoder of
// this kind has no such tensor. Gemma's post_attention_layernorm follows attention, its
// pre_feedforward_layernorm is the FFN's input norm.
std::string GgufTensorName(const std::string& hf, const std::string& arch) {
  static const std::pair<const char*, const char*> kTop[] = {
      {"embed_tokens.weight", "token_embd.weight"},
      {"norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      // Phi-3's fused [q; k; v] and [gate; up] matrices, kept fused as llama.cpp keeps them.
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},
  };
  for (const auto& [from, to] : kTop) {
    if (hf == from) return to;
  }
  if (hf.compare(0, 7, "layers.") != 0) return "";
  const size_t dot = hf.find('.', 7);
  if (dot == std::string::npos || dot == 7) return "";
  const std::string layer = hf.substr(7, dot - 7);
  if (layer.find_first_not_of("0123456789") != std::string::npos) return "";
  const std::string rest = hf.substr(dot + 1);
  static const std::pair<const char*, const char*> kGemmaLayer[] = {
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  if (IsGemma(arch)) {
    for (const auto& [from, to] : kGemmaLayer) {
      if (rest == from) return "blk." + layer + "." + to;
    }
  }
  for (const auto& [from, to] : kLayer) {
    if (rest == from) return "blk." + layer + "." + to;
  }
  return "";
}

// Rows of a [heads * head_dim, ...] tensor in the order llama.cpp's LlamaModel.permute leaves
// them: within each head, row i * 2 + j takes row j * head_dim / 2 + i, so that rotating
// adjacent pairs equals Hugging Face's rotate_half on the original rows.
std::vector<uint8_t> PermuteRows(const uint8_t* data, uint64_t rows, uint64_t row_bytes,
                                 uint32_t heads) {
  std::vector<uint8_t> out(rows * row_bytes);
  const uint64_t per_head = rows / heads, half = per_head / 2;
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t i = 0; i < half; ++i) {
      for (uint64_t j = 0; j < 2; ++j) {
        std::memcpy(out.data() + (h * per_head + i * 2 + j) * row_bytes,
                    data + (h * per_head + j * half + i) * row_bytes, row_bytes);
      }
    }
  }
  return out;
}

Status AddTensors(const safetensors::Checkpoint& ckpt, const std::string& folder,
                  const DecoderShape& s, gguf::Builder* out) {
  const auto starts = [](const std::string& name, const char* prefix) {
    return name.compare(0, std::strlen(prefix), prefix) == 0;
  };
  for (const auto& [name, tensor] : ckpt.tensors()) {
    // A multimodal Gemma 3 keeps its decoder under language_model.; the rest is the vision
    // tower, which llama.cpp converts to a separate file.
    if (starts(name, "vision_tower.") || starts(name, "multi_modal_projector.")) continue;
    std::string bare = starts(name, "language_model.") ? name.substr(15) : name;
    if (starts(bare, "model.")) bare = bare.substr(6);
    if (bare.size() > 21 && bare.compare(bare.size() - 21, 21, "rotary_emb.inv_freq") == 0) {
      continue;  // a buffer older checkpoints saved; RoPE comes from the hyper-parameters
    }
    // Gemma's head is the embedding table; llama.cpp skips a stored copy.
    if (IsGemma(s.arch) && bare == "lm_head.weight") continue;
    const std::string gguf_name = GgufTensorName(bare, s.arch);
    KES_CHECK_OR_RETURN(!gguf_name.empty(), folder + ": tensor '" + name + "' is not one a " +
                                                s.arch +
                                                " decoder has (expected model.* "
                                                "embeddings, norms, attention and MLP weights)");
    const safetensors::TensorInfo& info = *tensor.info;
    const std::vector<uint64_t>& shape = info.shape;
    KES_CHECK_OR_RETURN(shape.size() == 1 || shape.size() == 2,
                        "'" + tensor.file->path() + "': tensor '" + name +
                            "': expected a vector or a matrix, found shape " + ShapeString(shape));
    const bool is_q = gguf_name.find(".attn_q.") != std::string::npos;
    const bool is_k = gguf_name.find(".attn_k.") != std::string::npos;
    const uint32_t permute_heads = s.permute_qk && is_q   ? s.heads
                                   : s.permute_qk && is_k ? s.kv_heads
                                                          : 0;
    if (permute_heads != 0) {
      KES_CHECK_OR_RETURN(shape[0] == uint64_t{permute_heads} * s.head_dim,
                          "'" + tensor.file->path() + "': tensor '" + name + "': expected " +
                              Num(uint64_t{permute_heads} * s.head_dim) +
                              " rows (heads x head_dim from config.json), found shape " +
                              ShapeString(shape));
    }
    if (shape.size() == 1) {  // norms and biases: F32, as llama.cpp's converter stores them
      std::vector<float> values;
      KES_RETURN_IF_ERROR(ckpt.ReadF32(name, &values));
      // Gemma's RMSNorm multiplies by 1 + weight; the GGUF stores the sum.
      const bool gemma_norm = IsGemma(s.arch) && bare.size() >= 11 &&
                              bare.compare(bare.size() - 11, 11, "norm.weight") == 0;
      if (gemma_norm) {
        for (float& v : values) v += 1.0f;
      }
      std::vector<uint8_t> bytes(values.size() * 4);
      std::memcpy(bytes.data(), values.data(), bytes.size());
      if (permute_heads != 0) bytes = PermuteRows(bytes.data(), shape[0], 4, permute_heads);
      out->AddOwnedTensor(gguf_name, {shape[0]}, gguf::GgmlType::F32, std::move(bytes));
      continue;
    }
    gguf::GgmlType type;
    switch (info.dtype) {
      case safetensors::DType::F32: type = gguf::GgmlType::F32; break;
      case safetensors::DType::F16: type = gguf::GgmlType::F16; break;
      case safetensors::DType::BF16: type = gguf::GgmlType::BF16; break;
      default:
        return Status::Error("'" + tensor.file->path() + "': tensor '" + name + "' is " +
                             safetensors::DTypeName(info.dtype) +
                             ": expected F32, F16 or BF16 weights");
    }
    uint64_t rows = shape[0], n_bytes = info.end - info.begin;
    if (s.arch == "gemma3" && gguf_name == "token_embd.weight" && rows > s.vocab) {
      // Gemma3Model drops the embedding rows past the vocabulary (out-of-vocabulary ones).
      n_bytes = n_bytes / rows * s.vocab;
      rows = s.vocab;
    }
    const std::vector<uint64_t> ne = {shape[1], rows};
    if (permute_heads != 0) {
      out->AddOwnedTensor(gguf_name, ne, type,
                          PermuteRows(info.data, shape[0], n_bytes / shape[0], permute_heads));
    } else {
      out->AddTensor(gguf_name, ne, type, info.data, n_bytes);  // the first `rows` rows
    }
  }
  return OkStatus();
}

std::string FolderName(std::string folder) {
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  return folder.substr(folder.find_last_of('/') + 1);
}

}  // namespace

bool IsHfDecoderFolder(const std::string& folder) {
  json config;
  if (!safetensors::ReadJson(folder + "/config.json", json::value_t::object, &config).ok()) {
    return false;
  }
  const auto it = config.find("model_type");
  return it != config.end() && it->is_string() && !GgufArchitecture(it->get<std::string>()).empty();
}

Status BuildHfDecoderGguf(const std::string& folder, std::vector<uint8_t>* out) {
  out->clear();
  return WriteHfDecoderGguf(folder, [&](const uint8_t* data, size_t n) {
    out->insert(out->end(), data, data + n);
    return OkStatus();
  });
}

Status WriteHfDecoderGguf(const std::string& folder, const gguf::Builder::Sink& sink) {
  json storage;
  JsonNode config;
  const std::string config_path = folder + "/config.json";
  KES_RETURN_IF_ERROR(hf::OpenJsonObject(config_path, &storage, &config));
  NormalizeConfig(&storage);
  std::string model_type;
  KES_RETURN_IF_ERROR(hf::GetString(config.Child("model_type"), &model_type));
  DecoderShape s;
  s.arch = GgufArchitecture(model_type);
  KES_CHECK_OR_RETURN(!s.arch.empty(), config.Child("model_type").Where() +
                                           ": expected a decoder (llama, mistral, qwen2, qwen3 "
                                           "or smollm3), found \"" +
                                           model_type + "\"");
  s.permute_qk = s.arch == "llama" || s.arch == "smollm3";
  KES_RETURN_IF_ERROR(ReadShape(config, &s));
  if (s.arch == "smollm3") KES_RETURN_IF_ERROR(CheckNoRopeLayers(config, s.layers));
  uint32_t context = 0;
  KES_RETURN_IF_ERROR(Dimension(config.Child("max_position_embeddings"), 1u << 24, &context));
  double eps = 0, theta = 10000;
  KES_RETURN_IF_ERROR(PositiveNumber(config.Child("rms_norm_eps"), &eps));
  JsonNode theta_node = config.Child("rope_theta");
  const JsonNode rope_parameters = config.Child("rope_parameters");
  if (theta_node.is_null())
    theta_node = rope_parameters.Child("full_attention").Child("rope_theta");
  if (theta_node.is_null()) theta_node = rope_parameters.Child("rope_theta");
  if (!theta_node.is_null()) KES_RETURN_IF_ERROR(PositiveNumber(theta_node, &theta));

  gguf::Builder b;
  b.SetString("general.architecture", s.arch);
  b.SetString("general.name", FolderName(folder));
  AddHyperParameters(s, context, eps, theta, !config.Child("head_dim").is_null(), &b);
  if (s.arch == "phi3") {
    KES_RETURN_IF_ERROR(AddPhi3Parameters(config, s, context, &b));
  } else {
    KES_RETURN_IF_ERROR(AddRopeScaling(config, s, theta, &b));
  }
  if (IsGemma(s.arch)) KES_RETURN_IF_ERROR(AddGemmaParameters(config, s, &b));
  if (s.arch == "llama" || s.arch == "qwen2" || s.arch == "qwen3") {
    KES_RETURN_IF_ERROR(AddPoolingType(folder, s.arch, &b));
  }
  // As llama.cpp's converter: a SentencePiece model when the folder has one (Gemma, Llama 2,
  // Mistral 7B), else tokenizer.json's byte-level BPE.
  if (PathExists(folder + "/tokenizer.model")) {
    json tc_storage;
    JsonNode tokenizer_config;
    if (PathExists(folder + "/tokenizer_config.json")) {
      KES_RETURN_IF_ERROR(
          hf::OpenJsonObject(folder + "/tokenizer_config.json", &tc_storage, &tokenizer_config));
    }
    KES_RETURN_IF_ERROR(AddHfSentencePieceTokenizer(
        folder, s.vocab, config_path,
        s.arch == "phi3" ? SentencePieceAddedTokens::kPhi3 : SentencePieceAddedTokens::kGeneric,
        &b));
    // Gemma's converters turn the space prefix off; LlamaModel takes tokenizer_config.json's
    // add_prefix_space; the others leave the GGUF default (on).
    const JsonNode tc_prefix = tokenizer_config.Child("add_prefix_space");
    if (IsGemma(s.arch)) {
      b.SetBool("tokenizer.ggml.add_space_prefix", false);
    } else if (s.arch == "llama" && tc_prefix.present() && tc_prefix.value->is_boolean()) {
      b.SetBool("tokenizer.ggml.add_space_prefix", tc_prefix.value->get<bool>());
    }
  } else {
    KES_RETURN_IF_ERROR(AddHfBpeTokenizer(folder, s.vocab, config_path, &b));
  }
  std::unique_ptr<safetensors::Checkpoint> ckpt;
  KES_RETURN_IF_ERROR(safetensors::Checkpoint::Open(folder, &ckpt));
  KES_RETURN_IF_ERROR(AddTensors(*ckpt, folder, s, &b));
  return b.Write(sink);  // while the checkpoint, which the tensors point into, is mapped
}

}  // namespace kestrel
