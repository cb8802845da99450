#include "converters/weight_recipe.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "converters/gguf/dequantize.h"

namespace kestrel {
namespace {

using gguf::GgmlType;

// llama.cpp's tensor_category, from the name alone.
enum class Category {
  kTokenEmbd,
  kAttnQ,
  kAttnV,
  kAttnK,
  kAttnQkv,
  kAttnOutput,
  kFfnUp,
  kFfnGate,
  kFfnDown,
  kOutput,
  kOther
};

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

Category CategoryOf(const std::string& name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::kTokenEmbd;
  }
  // attn_kv_b behaves as attn_v in every rule (category_is_attn_v), so it shares its category.
  if (Contains(name, "attn_qkv.weight")) return Category::kAttnQkv;
  if (Contains(name, "attn_kv_b.weight") || Contains(name, "attn_v.weight")) {
    return Category::kAttnV;
  }
  if (Contains(name, "attn_k.weight")) return Category::kAttnK;
  if (Contains(name, "attn_q.weight")) return Category::kAttnQ;
  if (Contains(name, "attn_output.weight")) return Category::kAttnOutput;
  if (Contains(name, "ffn_up")) return Category::kFfnUp;
  if (Contains(name, "ffn_gate")) return Category::kFfnGate;
  if (Contains(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// ggml_n_dims: dimensions up to the last one above 1.
size_t Dims(const gguf::TensorInfo& t) {
  size_t n = t.ne.size();
  while (n > 1 && t.ne[n - 1] == 1) --n;
  return n;
}

// tensor_allows_quantization, less the names of architectures Kestrel has no converter for
// (RWKV, Mamba, T5, vision and audio towers, GLM5): those tensors never reach this converter.
bool AllowsQuantization(const gguf::TensorInfo& t) {
  if (Dims(t) < 2) return false;
  const std::string& name = t.name;
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
  static const char* const kNever[] = {
      "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup",
      "laurel",       "per_layer_model_proj"};
  for (const char* part : kNever) {
    if (Contains(name, part)) return false;
  }
  return name != "position_embd.weight" && name != "token_types.weight";
}

// The layer of "blk.N.*", or -1: llama.cpp orders tensors by it, then by name.
int LayerOf(const std::string& name) {
  if (name.compare(0, 4, "blk.") != 0) return -1;
  size_t i = 4;
  int layer = 0;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    layer = layer * 10 + (name[i++] - '0');
    if (layer > 1000000) return -1;
  }
  return layer;
}

// tensor_type_fallback: the 32-value type a row length that is not a multiple of 256 gets.
GgmlType Fallback(GgmlType type, uint64_t row) {
  if (row % gguf::BlockElements(type) == 0) return type;
  switch (type) {
    case GgmlType::Q4_K: type = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: type = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: type = GgmlType::Q8_0; break;
    default: break;
  }
  return row % gguf::BlockElements(type) == 0 ? type : GgmlType::F16;
}

struct ModelFacts {
  int n_layers = 0;
  int n_attn_v = 0;     // attn_v-like tensors
  bool tied = true;     // no output.weight: token_embd is the LM head
  bool is_70b = false;  // llama.cpp's LLM_TYPE_70B, which bumps attn_v
};

Status ReadFacts(const gguf::File& file, ModelFacts* facts) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (CategoryOf(t.name) == Category::kAttnV) ++facts->n_attn_v;
    if (t.name == "output.weight") facts->tied = false;
  }
  std::string arch;
  KES_RETURN_IF_ERROR(file.GetString("general.architecture", &arch));
  int64_t layers = 0, heads = 0, kv_heads = 0;
  KES_RETURN_IF_ERROR(file.GetInt(arch + ".block_count", &layers));
  KES_CHECK_OR_RETURN(layers >= 1 && layers <= 100000,
                      arch + ".block_count: expected 1..100000, found " + std::to_string(layers));
  facts->n_layers = static_cast<int>(layers);
  if (file.Has(arch + ".attention.head_count")) {
    KES_RETURN_IF_ERROR(file.GetInt(arch + ".attention.head_count", &heads));
  }
  kv_heads = heads;
  if (file.Has(arch + ".attention.head_count_kv")) {
    KES_RETURN_IF_ERROR(file.GetInt(arch + ".attention.head_count_kv", &kv_heads));
  }
  // llama.cpp's model types that matter here: an 80-layer Llama with GQA, an 80-layer Qwen2.
  facts->is_70b = layers == 80 && ((arch == "llama" && heads != kv_heads) || arch == "qwen2");
  return OkStatus();
}

// llama_tensor_get_type_impl for LLAMA_FTYPE_MOSTLY_Q4_K_M. *i_attn_v and *i_ffn_down count the
// tensors of those categories seen so far, in llama.cpp's order.
GgmlType Q4_K_M_Type(const gguf::TensorInfo& t, Category category, const ModelFacts& facts,
                     int* i_attn_v, int* i_ffn_down) {
  switch (category) {
    case Category::kOutput:
      return t.ne[0] % gguf::BlockElements(GgmlType::Q4_K) != 0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
    case Category::kTokenEmbd:
      if (facts.tied) return Q4_K_M_Type(t, Category::kOutput, facts, i_attn_v, i_ffn_down);
      return GgmlType::Q4_K;
    case Category::kAttnV: {
      GgmlType type = UseMoreBits(*i_attn_v, facts.n_attn_v) ? GgmlType::Q6_K : GgmlType::Q4_K;
      if (facts.is_70b && type == GgmlType::Q4_K) type = GgmlType::Q5_K;
      ++*i_attn_v;
      return type;
    }
    case Category::kFfnDown: {
      const GgmlType type =
          UseMoreBits(*i_ffn_down, facts.n_layers) ? GgmlType::Q6_K : GgmlType::Q4_K;
      ++*i_ffn_down;
      return type;
    }
    case Category::kAttnQkv: return GgmlType::Q5_K;
    default: return GgmlType::Q4_K;
  }
}

GgmlType PureType(WeightRecipe recipe) {
  switch (recipe) {
    case WeightRecipe::kQ5_K: return GgmlType::Q5_K;
    case WeightRecipe::kQ6_K: return GgmlType::Q6_K;
    default: return GgmlType::Q4_K;
  }
}

}  // namespace

bool UseMoreBits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

Status ChooseWeightTypes(const gguf::File& file, WeightRecipe recipe,
                         std::map<std::string, GgmlType>* types) {
  ModelFacts facts;
  if (recipe == WeightRecipe::kQ4_K_M) KES_RETURN_IF_ERROR(ReadFacts(file, &facts));
  std::vector<const gguf::TensorInfo*> order;
  for (const gguf::TensorInfo& t : file.tensors()) order.push_back(&t);
  // llama_model_loader's weights_map order, which the attn_v and ffn_down counters follow.
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    const int la = LayerOf(a->name), lb = LayerOf(b->name);
    return la != lb ? la < lb : a->name < b->name;
  });
  int i_attn_v = 0, i_ffn_down = 0;
  for (const gguf::TensorInfo* t : order) {
    if (!AllowsQuantization(*t)) continue;
    const GgmlType wanted =
        recipe == WeightRecipe::kQ4_K_M
            ? Q4_K_M_Type(*t, CategoryOf(t->name), facts, &i_attn_v, &i_ffn_down)
            : PureType(recipe);
    const GgmlType type = Fallback(wanted, t->ne[0]);
    if (type == GgmlType::F16 && recipe != WeightRecipe::kQ4_K_M) {
      return Status::Error("tensor '" + t->name + "': rows of " + std::to_string(t->ne[0]) +
                           " elements fit neither " + gguf::GgmlTypeName(wanted) +
                           " (blocks of 256) nor its fallback (blocks of 32); convert with "
                           "--weights q4_k_m (which stores it as F16, as llama.cpp does), f16 "
                           "or f32");
    }
    (*types)[t->name] = type;
  }
  return OkStatus();
}

}  // namespace kestrel
