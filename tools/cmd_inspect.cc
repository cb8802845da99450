// kestrel inspect MODEL.kes: what the model is and what it will cost, before anything runs.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/targets.h"
#include "runtime/format.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/plan_check.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kInspectUsage[] =
    "usage: kestrel inspect MODEL.kes [--ctx N] [--kv-type T] [--verify]\n"
    "  -c, --ctx N     context length for the KV-cache and attention figures (default 4096)\n"
    "  --kv-type T     KV cache type for the memory figures: f32, f16 or int8 (default f16)\n"
    "  --verify        only check the weights: read them all and compare their checksum with\n"
    "                  the one kestrel-convert recorded; prints OK, or an error and exits 1\n";

// --verify: the weights against the recorded checksum (a flipped byte loads and runs, wrongly).
int VerifyCommand(const std::string& model_path) {
  std::unique_ptr<Model> model;
  ModelOpenOptions options;  // not from the environment: the check below says more
  Status s = Model::Open(model_path, options, &model);
  if (s.ok()) s = model->VerifyWeights().WithContext(model_path);
  if (!s.ok()) return Fail(s.message());
  std::printf("%s: weights checksum OK (XXH3 0x%016llx over %llu bytes)\n", model_path.c_str(),
              static_cast<unsigned long long>(*model->meta().weights_xxh3()),
              static_cast<unsigned long long>(model->weights_bytes()));
  return 0;
}

// Attention FLOPs for one token at position n: 4 * keys seen * (n_heads * head_dim) per layer
// (q.k and the weighted sum of v); sliding-window layers see at most the window.
uint64_t AttentionFlopsPerToken(const Model& model, uint64_t n) {
  const fb::HyperParams& hp = model.hparams();
  uint64_t flops = 0;
  for (const fb::KvLayer* layer : *model.meta().kv()->layers()) {
    const uint64_t keys = layer->window() ? std::min<uint64_t>(n, layer->window()) : n;
    flops += 4 * keys * uint64_t{hp.n_heads()} * layer->head_dim();
  }
  return flops;
}

// Tensors grouped by dtype with their bytes and bits per weight, then the parameter count.
void PrintTensorsByDtype(const Model& model) {
  std::printf("\ntensors by dtype:\n");
  struct DTypeTotals {
    uint64_t tensors = 0, bytes = 0, elements = 0;
  };
  std::map<std::string, DTypeTotals> by_dtype;
  for (const fb::Tensor* t : *model.meta().tensors()) {
    DTypeTotals& entry = by_dtype[DTypeName(t->dtype())];
    uint64_t elements = 1;
    for (uint64_t d : *t->shape()) elements *= d;
    entry.tensors += 1;
    entry.bytes += t->size();
    entry.elements += elements;
  }
  for (const auto& [name, entry] : by_dtype) {
    std::printf("  %-10s %4llu tensors, %s, %.4g bits per weight\n", name.c_str(),
                static_cast<unsigned long long>(entry.tensors), FormatBytes(entry.bytes).c_str(),
                8.0 * static_cast<double>(entry.bytes) / static_cast<double>(entry.elements));
  }
  std::printf("parameters:     %llu (%.1f M)\n",
              static_cast<unsigned long long>(model.parameter_count()),
              model.parameter_count() / 1e6);
}

const char* PoolName(fb::PoolMode mode) {
  switch (mode) {
    case fb::PoolMode::Cls: return "first token ([CLS])";
    case fb::PoolMode::Max: return "max over tokens";
    case fb::PoolMode::Last: return "last token";
    default: return "mean over tokens";
  }
}

// Encoders: no KV cache, no logits; a step is a batch of texts and the output one vector each.
int InspectEncoder(const std::string& model_path, const Model& model) {
  const fb::Model& meta = model.meta();
  const fb::HyperParams& hp = model.hparams();
  const fb::Plan& plan = *model.FindPlan("encode");
  const MemoryPlan memory = PlanEncoderMemory(model);
  std::printf("model:          %s\n", model_path.c_str());
  std::printf("architecture:   %s encoder (%s), from %s\n", meta.architecture()->c_str(),
              meta.name() ? meta.name()->c_str() : "unnamed",
              meta.source() ? meta.source()->c_str() : "unknown");
  // A decoder run as an embedding model (Qwen3-Embedding) keeps its causal attention.
  bool causal = false;
  for (const fb::Op* op : *plan.ops()) {
    if (op->params_type() == fb::OpParams::SequenceAttention) {
      causal = op->params_as_SequenceAttention()->causal();
    }
  }
  std::printf("layers:         %u (%s attention)\n", hp.n_layers(),
              causal ? "causal" : "bidirectional");
  std::printf("d_model:        %u, ffn %u, heads %u x %u\n", hp.d_model(), hp.ffn_dim(),
              hp.n_heads(), hp.head_dim());
  std::printf(
      "vocab:          %u, longest text %u tokens (longer ones are truncated), norm eps "
      "%g\n",
      hp.vocab_size(), hp.context_length(), hp.norm_eps());
  for (const fb::Op* op : *plan.ops()) {
    if (op->params_type() != fb::OpParams::Pool) continue;
    const fb::Pool& pool = *op->params_as_Pool();
    const fb::Buffer& out = *plan.buffers()->Get(op->outputs()->Get(0));
    if (FindPlanIo(plan, fb::IoRole::Scores) >= 0) {
      // A cross-encoder pools its classification head's per-token scores.
      std::printf(
          "output:         %llu score%s per (query, document) pair: a reranker "
          "(classification head, dense + tanh + linear, on the first token)\n",
          static_cast<unsigned long long>(out.row_elems()), out.row_elems() == 1 ? "" : "s");
    } else {
      std::printf("output:         one %llu-float embedding per text: %s%s\n",
                  static_cast<unsigned long long>(out.row_elems()), PoolName(pool.mode()),
                  pool.normalize() ? ", L2-normalized" : "");
    }
    std::printf("step:           up to %llu texts and %u tokens\n",
                static_cast<unsigned long long>(out.fixed_rows()), plan.max_tokens());
  }
  // q8/q4 weights: the matmuls' inputs are quantized, and smoothed where the converter
  // calibrated them (a factor on the QuantizeRows op).
  size_t quantized = 0, smoothed = 0;
  for (const fb::Op* op : *plan.ops()) {
    if (op->params_type() != fb::OpParams::QuantizeRows) continue;
    ++quantized;
    if (op->weights() != nullptr && op->weights()->size() > 0) ++smoothed;
  }
  if (quantized > 0) {
    std::printf(
        "matmul inputs:  int8 per 32 values at %zu inputs, %zu of them smoothed "
        "(SmoothQuant factors from the converter's calibration)\n",
        quantized, smoothed);
  }
  PrintTensorsByDtype(model);
  std::printf("\nmemory:\n");
  std::printf("  weights:      %s (mapped from the file)\n",
              FormatBytes(model.weights_bytes()).c_str());
  std::printf("  activations:  %s (the whole arena: no KV cache, no sampler)\n",
              FormatBytes(memory.arena_bytes).c_str());
  std::printf("  total:        %s (weights + arena)\n",
              FormatBytes(model.weights_bytes() + memory.arena_bytes).c_str());
  const uint64_t matmul = MatMulFlopsPerToken(model);
  const uint64_t n = hp.context_length();
  const uint64_t attention = 4 * n * uint64_t{hp.n_heads()} * hp.head_dim() * hp.n_layers();
  std::printf("\nFLOPs per token:\n");
  std::printf("  matmul:       %.3f GFLOP (2 per weight)\n", matmul / 1e9);
  std::printf("  attention:    %.3f GFLOP in a text of %llu tokens\n", attention / 1e9,
              static_cast<unsigned long long>(n));
  std::printf("\nSIMD target:    %s (supported: %s)\n", ops::ChosenTargetName().c_str(),
              ops::SupportedTargetNames().c_str());
  return 0;
}

// Speech encoders (Whisper): one step is one 30-second window of log-mel frames.
int InspectAudioEncoder(const std::string& model_path, const Model& model) {
  const fb::Model& meta = model.meta();
  const fb::HyperParams& hp = model.hparams();
  const fb::Plan& plan = *model.FindPlan("encode_audio");
  const MemoryPlan memory = PlanEncoderMemory(model);
  const uint64_t positions = plan.max_tokens();
  std::printf("model:          %s\n", model_path.c_str());
  std::printf("architecture:   %s %s (%s), from %s\n", meta.architecture()->c_str(),
              model.has_decoder() ? "speech model" : "audio encoder",
              meta.name() ? meta.name()->c_str() : "unnamed",
              meta.source() ? meta.source()->c_str() : "unknown");
  std::printf("encoder layers: %u (bidirectional attention)\n", hp.n_layers());
  if (model.has_decoder()) {
    size_t self_layers = 0;
    for (const fb::KvLayer* layer : *meta.kv()->layers()) self_layers += layer->cross_length() == 0;
    std::printf(
        "decoder:        %zu layers (causal self-attention, cross-attention over the "
        "encoder's positions), %u text positions\n",
        self_layers, hp.context_length());
  } else {
    std::printf("decoder:        none converted (the encoder alone)\n");
  }
  std::printf("d_model:        %u, ffn %u, heads %u x %u, norm eps %g\n", hp.d_model(),
              hp.ffn_dim(), hp.n_heads(), hp.head_dim(), hp.norm_eps());
  std::printf("window:         %llu encoder positions (two log-mel frames each); vocab %u\n",
              static_cast<unsigned long long>(positions), hp.vocab_size());
  PrintTensorsByDtype(model);
  std::printf("\nmemory:\n");
  std::printf("  weights:      %s (mapped from the file)\n",
              FormatBytes(model.weights_bytes()).c_str());
  std::printf("  activations:  %s (the whole arena)\n", FormatBytes(memory.arena_bytes).c_str());
  const double matmul = static_cast<double>(MatMulFlopsPerToken(model)) * positions;
  const double attention =
      4.0 * positions * positions * hp.n_heads() * hp.head_dim() * hp.n_layers();
  std::printf("\nFLOPs per window: %.2f GFLOP matmul, %.2f GFLOP attention\n", matmul / 1e9,
              attention / 1e9);
  std::printf("\nSIMD target:    %s (supported: %s)\n", ops::ChosenTargetName().c_str(),
              ops::SupportedTargetNames().c_str());
  return 0;
}

// The KV-cache line: its bytes and type; for the smaller types (the default f16 among them), a
// line comparing them to f32's, the size a user of an older Kestrel or of --kv-type f32 knows.
void PrintKvCache(const MemoryPlan& memory, const MemoryPlan& memory_f32) {
  const ops::KvType type = memory.kv_options.type;
  std::printf("  KV cache:     %s (%s)\n", FormatBytes(memory.kv_bytes).c_str(),
              ops::KvTypeName(type));
  if (type != ops::KvType::kF32 && memory_f32.kv_bytes > 0) {
    std::printf("                %.1f%% of f32's %s\n",
                100.0 * memory.kv_bytes / memory_f32.kv_bytes,
                FormatBytes(memory_f32.kv_bytes).c_str());
  }
}

}  // namespace

int InspectCommand(const std::vector<std::string>& args) {
  std::string model_path;
  size_t ctx = 4096;
  KvOptions kv;
  bool verify = false;
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-c" || arg == "--ctx") {
      *s = flags.Int(arg, 1, 1 << 24, &ctx);
    } else if (arg == "--kv-type") {
      *s = flags.KvType(arg, &kv.type);
    } else if (arg == "--verify") {
      verify = true;
    } else {
      return false;
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "inspect", kInspectUsage, flag, &model_path)) {
    return *exit_code;
  }
  if (verify) return VerifyCommand(model_path);
  std::unique_ptr<Model> model;
  Status s = Model::Open(model_path, &model);
  if (!s.ok()) return Fail(s.message());
  if (model->is_encoder()) return InspectEncoder(model_path, *model);
  if (model->has_audio_encoder()) return InspectAudioEncoder(model_path, *model);
  const fb::Model& meta = model->meta();
  const fb::HyperParams& hp = model->hparams();
  ctx = std::min<size_t>(ctx, hp.context_length());
  MemoryPlan memory, memory_f32;
  s = PlanMemory(*model, ctx, &memory, kv);
  KvOptions kv_f32 = kv;
  kv_f32.type = ops::KvType::kF32;
  if (s.ok()) s = PlanMemory(*model, ctx, &memory_f32, kv_f32);
  if (!s.ok()) return Fail(s.message());

  size_t sliding = 0;
  for (const fb::KvLayer* layer : *meta.kv()->layers()) sliding += layer->window() != 0;
  std::printf("model:          %s\n", model_path.c_str());
  std::printf("architecture:   %s (%s), from %s\n", meta.architecture()->c_str(),
              meta.name() ? meta.name()->c_str() : "unnamed",
              meta.source() ? meta.source()->c_str() : "unknown");
  if (sliding > 0) {
    std::printf("layers:         %u (%zu sliding-window of %u tokens, %zu global)\n", hp.n_layers(),
                sliding, hp.sliding_window(), hp.n_layers() - sliding);
  } else {
    std::printf("layers:         %u (all global attention)\n", hp.n_layers());
  }
  std::printf("d_model:        %u, ffn %u, heads %u (kv %u) x %u\n", hp.d_model(), hp.ffn_dim(),
              hp.n_heads(), hp.n_kv_heads(), hp.head_dim());
  std::printf("vocab:          %u, trained context %u, norm eps %g\n", hp.vocab_size(),
              hp.context_length(), hp.norm_eps());
  if (hp.rope_theta_local() > 0) {
    std::printf("rope theta:     %g global, %g local\n", hp.rope_theta(), hp.rope_theta_local());
  } else {
    std::printf("rope theta:     %g\n", hp.rope_theta());
  }
  std::printf("plans:         ");
  for (const fb::Plan* plan : *meta.plans()) {
    std::printf(" %s (%u ops, up to %u tokens)", plan->name()->c_str(), plan->ops()->size(),
                plan->max_tokens());
  }
  std::printf("\n");
  PrintTensorsByDtype(*model);

  std::printf("\nmemory at context %zu:\n", ctx);
  std::printf("  weights:      %s (mapped from the file)\n",
              FormatBytes(model->weights_bytes()).c_str());
  std::printf("  activations:  %s\n", FormatBytes(memory.activation_bytes).c_str());
  PrintKvCache(memory, memory_f32);
  std::printf("  attention:    %s (decode partitions split across threads)\n",
              FormatBytes(memory.op_scratch_bytes).c_str());
  std::printf("  sampler:      %s\n", FormatBytes(memory.sampler_bytes).c_str());
  std::printf("  arena total:  %s\n", FormatBytes(memory.arena_bytes).c_str());
  std::printf("  total:        %s (weights + arena)\n",
              FormatBytes(model->weights_bytes() + memory.arena_bytes).c_str());

  const uint64_t matmul = MatMulFlopsPerToken(*model);
  const uint64_t attention = AttentionFlopsPerToken(*model, ctx);
  std::printf("\nFLOPs per token:\n");
  std::printf("  matmul:       %.3f GFLOP (2 per weight)\n", matmul / 1e9);
  std::printf("  attention:    %.3f GFLOP at position %zu\n", attention / 1e9, ctx);
  std::printf("  total:        %.3f GFLOP\n", (matmul + attention) / 1e9);
  std::printf("\nSIMD target:    %s (supported: %s)\n", ops::ChosenTargetName().c_str(),
              ops::SupportedTargetNames().c_str());
  return 0;
}

}  // namespace kestrel::cli
