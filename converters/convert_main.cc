// kestrel-convert: GGUF file or Hugging Face checkpoint folder -> .kes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "converters/arch/arch.h"
#include "converters/ct2/ct2_file.h"
#include "converters/ct2/whisper_convert.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/hf/hf_import.h"
#include "converters/weight_recipe.h"
#include "runtime/model.h"
#include "runtime/mapped_file.h"
#include "runtime/output_file.h"
#include "tools/progress.h"
#include "tools/version.h"

namespace {

// The help text's option descriptions start at this column and end by kHelpWidth.
constexpr size_t kHelpIndent = 27;
constexpr size_t kHelpWidth = 91;

// `text` broken at spaces into lines indented to kHelpIndent.
std::string HelpLines(const std::string& text) {
  std::istringstream words(text);
  std::string lines, line, word;
  while (words >> word) {
    if (!line.empty() && kHelpIndent + line.size() + 1 + word.size() > kHelpWidth) {
      lines += std::string(kHelpIndent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return line.empty() ? lines : lines + std::string(kHelpIndent, ' ') + line + "\n";
}

const char kUsageHead[] =
    "usage: kestrel-convert INPUT OUTPUT.kes [options]\n"
    "INPUT is a GGUF file (decoders: Gemma 3, Llama, Qwen2) or a Hugging Face checkpoint folder\n"
    "(config.json, model.safetensors, tokenizer files; encoders: BERT, with the\n"
    "sentence-transformers pooling and normalization when the folder has them).\n"
    "  --weights keep|f32|f16|bf16|q8|q4|q4_k_m|q4_k|q5_k|q6_k\n";

const char kUsageTail[] =
    "                           Hugging Face checkpoints: f32, f16, bf16, q8 or q4; keep (the\n"
    "                           default) stores the checkpoint's own F32/F16/BF16\n"
    "  --prefill-tokens N       tokens per prefill step (default 512)\n"
    "  --score-tokens N         tokens per step of the all-logits 'score' plan (default 8)\n"
    "  --version                print the version, commit, .kes format and SIMD targets\n"
    "encoders:\n"
    "  --max-seq-length N       longest text in tokens, longer ones are truncated (default:\n"
    "                           sentence_bert_config.json's, else max_position_embeddings)\n"
    "  --max-batch N            texts per encode step (default 32)\n"
    "  --step-tokens N          tokens per encode step, the arena's size: at least one text of\n"
    "                           the longest length, at most --max-batch of them (default 512)\n"
    "  --calibration FILE|none  q8 and q4: the texts (one per line) on which the f32 model's\n"
    "                           matmul inputs are measured to smooth their outlier channels\n"
    "                           (SmoothQuant; default: the converter's own 58 texts); none: no\n"
    "                           smoothing\n";

// The GGUF types --weights keep keeps are the dtype table's (runtime/dtype_table.h).
std::string Usage() {
  return kUsageHead +
         HelpLines("dtype of matmul and embedding weights. keep (the default for a quantized "
                   "file; f32 otherwise): each tensor keeps its GGUF type (" +
                   kestrel::gguf::GgmlTypeList(false) +
                   "), values unchanged. q8 and q4 are ggml's Q8_0 and Q4_0 (8.5 and 4.5 bits "
                   "per weight). q4_k_m: llama.cpp's Q4_K_M mix, each tensor in the type "
                   "llama-quantize gives it (Q4_K, Q6_K, and Q5_0/Q8_0 for rows not a multiple "
                   "of 256). q4_k, q5_k, q6_k: every weight in that K-quant (4.5, 5.5, 6.56 bits "
                   "per weight), or, for rows not a multiple of 256, in llama.cpp's fallback "
                   "Q5_0, Q5_1 or Q8_0. Quantized with ggml's reference quantizers, bit for bit; "
                   "a tensor already of the chosen type is moved losslessly.") +
         kUsageTail;
}

const char kWeightChoices[] = "keep, f32, f16, bf16, q8, q4, q4_k_m, q4_k, q5_k or q6_k";

// The "converting tensor N/M" line on a terminal, erased before anything else is printed.
std::unique_ptr<kestrel::Progress> progress;

int Fail(const std::string& message) {
  progress.reset();
  std::fprintf(stderr, "kestrel-convert: error: %s\n", message.c_str());
  return 1;
}

bool ParseCount(const char* text, uint32_t max, uint32_t* out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > max) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// A file of a Hugging Face checkpoint given instead of its folder (model.safetensors, say) fails
// as a GGUF file; the message then says what to give instead.
std::string CheckpointFolderHint(const std::string& input) {
  const size_t slash = input.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : input.substr(0, slash);
  if (!kestrel::IsDirectory(input) && kestrel::PathExists(folder + "/config.json")) {
    return " (a Hugging Face checkpoint is converted from its folder: give '" + folder + "')";
  }
  return std::string();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kestrel;
  // An input file truncated under us: a one-line error instead of a silent death by SIGBUS.
  InstallMappedFileFaultHandler("kestrel-convert");
  std::string input, output;
  ConvertOptions options;
  bool weights_given = false;
  bool recipe_given = false;
  WeightRecipe recipe = WeightRecipe::kQ4_K_M;
  HfEncoderOptions encoder;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "-h" || arg == "--help") {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("%s\n", VersionText("kestrel-convert").c_str());
      const Status closed = CloseStdout();
      return closed.ok() ? 0 : Fail(closed.message());
    } else if (arg == "--weights") {
      if (!has_value) return Fail(std::string("--weights needs a value (") + kWeightChoices + ")");
      const std::string v = argv[++i];
      weights_given = true;
      recipe_given = false;
      if (v == "keep") options.keep_types = true;
      else if (v == "f32") options.weight_dtype = fb::DType::F32;
      else if (v == "f16") options.weight_dtype = fb::DType::F16;
      else if (v == "bf16") options.weight_dtype = fb::DType::BF16;
      else if (v == "q8") options.weight_dtype = fb::DType::Q8_0;
      else if (v == "q4") options.weight_dtype = fb::DType::Q4_0;
      else if (v == "q4_k_m") recipe_given = true, recipe = WeightRecipe::kQ4_K_M;
      else if (v == "q4_k") recipe_given = true, recipe = WeightRecipe::kQ4_K;
      else if (v == "q5_k") recipe_given = true, recipe = WeightRecipe::kQ5_K;
      else if (v == "q6_k") recipe_given = true, recipe = WeightRecipe::kQ6_K;
      else return Fail(std::string("--weights: expected ") + kWeightChoices + ", found '" + v + "'");
    } else if (arg == "--prefill-tokens" || arg == "--score-tokens") {
      uint32_t* target = arg == "--prefill-tokens" ? &options.prefill_tokens : &options.score_tokens;
      if (!has_value) return Fail(arg + " needs a value (a whole number from 1 to 4096)");
      if (!ParseCount(argv[++i], 4096, target)) {
        return Fail(arg + ": expected a whole number from 1 to 4096, found '" + argv[i] + "'");
      }
    } else if (arg == "--max-seq-length" || arg == "--max-batch" || arg == "--step-tokens") {
      uint32_t* target = arg == "--max-batch"     ? &encoder.max_batch
                         : arg == "--step-tokens" ? &encoder.step_tokens
                                                  : &encoder.max_seq_length;
      if (!has_value) return Fail(arg + " needs a value (a whole number from 1 to 65536)");
      if (!ParseCount(argv[++i], 65536, target)) {
        return Fail(arg + ": expected a whole number from 1 to 65536, found '" + argv[i] + "'");
      }
    } else if (arg == "--calibration") {
      if (!has_value) return Fail("--calibration needs a value (a file of texts, or none)");
      encoder.calibration = argv[++i];
      if (encoder.calibration.empty()) {
        return Fail("--calibration: expected a file of texts or none, found ''");
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return Fail("unknown option '" + arg + "'\n" + Usage());
    } else if (input.empty()) {
      input = arg;
    } else if (output.empty()) {
      output = arg;
    } else {
      return Fail("unexpected argument '" + arg + "'\n" + Usage());
    }
  }
  if (input.empty() || output.empty()) return Fail("need INPUT and OUTPUT\n" + Usage());
  // Before any work: an output that would replace the input, or that cannot be written, is
  // refused now rather than after the conversion. The temporary exists from here on (removed on
  // every failure and on SIGINT/SIGTERM) and becomes OUTPUT only once verified.
  Status checked = CheckNotInput(output, input, "input");
  if (!checked.ok()) return Fail(checked.message());
  std::unique_ptr<AtomicOutput> out;
  checked = AtomicOutput::Create(output, &out);
  if (!checked.ok()) return Fail(checked.message());

  const auto start = std::chrono::steady_clock::now();
  KesModel model;
  // Total unknown (0) until a GGUF file says how many tensors it has.
  progress = std::make_unique<Progress>("converting tensor", 0);
  model.on_tensor_added = [](size_t tensors) {
    if (progress) progress->Update(tensors);
  };
  std::string arch;
  Status s;
  if (IsDirectory(input)) {
    if (!weights_given) options.keep_types = true;
    if (recipe_given) {
      return Fail("--weights q4_k_m, q4_k, q5_k and q6_k are for GGUF input; for a Hugging Face "
                  "checkpoint or a CTranslate2 folder use keep, f32, f16, bf16, q8 or q4");
    }
  }
  if (IsDirectory(input) && PathExists(input + "/model.bin") &&
      !PathExists(input + "/model.safetensors")) {
    // A CTranslate2 folder: faster-whisper's Whisper models.
    std::unique_ptr<ct2::File> file;
    s = ct2::File::Open(input + "/model.bin", &file);
    if (!s.ok()) return Fail(s.message());
    s = ct2::ConvertWhisper(input, *file, options, &model);
    if (!s.ok()) return Fail(input + ": " + s.message());
    arch = model.meta.architecture;
  } else if (IsDirectory(input)) {
    s = ConvertHfCheckpoint(input, options, encoder, &model);
    if (!s.ok()) return Fail(input + ": " + s.message());
    arch = model.meta.architecture;
  } else {
    std::unique_ptr<gguf::File> file;
    s = gguf::File::Open(input, &file);
    if (!s.ok()) return Fail(s.message() + CheckpointFolderHint(input));
    progress = std::make_unique<Progress>("converting tensor", file->tensors().size());
    if (!weights_given) options.keep_types = HasQuantizedTensors(*file);
    if (recipe_given) {
      s = ChooseWeightTypes(*file, recipe, &options.tensor_types);
      if (!s.ok()) return Fail(input + ": " + s.message());
    }
    s = file->GetString("general.architecture", &arch);
    if (!s.ok()) return Fail(input + ": " + s.message());
    const ArchitectureConverter convert = FindArchitecture(arch);
    if (!convert) {
      return Fail(input + ": unsupported architecture '" + arch + "' (supported: " +
                  SupportedArchitectures() + ")");
    }
    s = convert(*file, options, &model);
    if (!s.ok()) return Fail(input + ": " + s.message());
  }
  progress.reset();
  s = PlanArena(&model.meta);
  if (!s.ok()) return Fail(input + ": " + s.message());
  std::string source = input;
  while (source.size() > 1 && source.back() == '/') source.pop_back();
  model.meta.source = source.substr(source.find_last_of('/') + 1);
  s = WriteKes(&model, out.get());
  if (!s.ok()) return Fail(s.message());

  // What we wrote must pass the runtime's own checks before it replaces anything.
  std::unique_ptr<Model> check;
  s = Model::Open(out->temp_path(), &check);
  if (!s.ok()) return Fail("internal error: the written file fails verification: " + s.message());
  s = out->Commit();
  if (!s.ok()) return Fail(s.message());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s, %zu tensors, %.1f M parameters, %.1f MiB weights, %.2f MiB arena "
              "activations (%.1f s)\n",
              output.c_str(), arch.c_str(), model.meta.tensors.size(),
              check->parameter_count() / 1e6, check->weights_bytes() / 1048576.0,
              check->meta().activation_bytes() / 1048576.0, seconds);
  s = CloseStdout();
  return s.ok() ? 0 : Fail(s.message());
}
