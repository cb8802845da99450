// kestrel-convert: GGUF file or Hugging Face checkpoint folder -> .kes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "converters/convert_file.h"
#include "converters/gguf/gguf_file.h"
#include "runtime/mapped_file.h"
#include "runtime/output_file.h"
#include "tools/flags.h"
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
    "INPUT is one of:\n"
    "  a GGUF file of a decoder (gemma3, gemma2, llama, qwen2, qwen3, smollm3, phi3);\n"
    "  a Hugging Face decoder folder (model_type llama, mistral, qwen2, qwen3, smollm3,\n"
    "    gemma2, gemma3_text, gemma3 or phi3: config.json, safetensors, tokenizer.model or\n"
    "    tokenizer.json, tokenizer_config.json);\n"
    "  a Hugging Face BERT encoder folder (config.json, model.safetensors, tokenizer files,\n"
    "    with the sentence-transformers pooling and normalization when the folder has them);\n"
    "  a Whisper folder: CTranslate2 (model.bin, as faster-whisper runs it) or Hugging Face\n"
    "    (config.json, model.safetensors, tokenizer.json).\n"
    "  --weights keep|f32|f16|bf16|q8|q4|q4_k_m|q4_k|q5_k|q6_k\n";

const char kUsageTail[] =
    "                           encoder folders: f32, f16, bf16, q8 or q4; for every folder\n"
    "                           keep (the default) stores the checkpoint's own F32/F16/BF16\n"
    "  --prefill-tokens N       tokens per prefill step (default 512); a GGUF embedding\n"
    "                           model's longest text and encode step\n"
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
         HelpLines(
             "dtype of matmul and embedding weights. keep (the default for a quantized "
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

// The "converting tensor N/M" line on a terminal, erased before anything else is printed.
std::unique_ptr<kestrel::Progress> progress;

int Fail(const std::string& message) {
  progress.reset();
  std::fprintf(stderr, "kestrel-convert: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kestrel;
  // An input file truncated under us: a one-line error instead of a silent death by SIGBUS.
  InstallMappedFileFaultHandler("kestrel-convert");
  std::string input, output;
  ConvertChoices choices;
  ConvertOptions& options = choices.convert;
  HfEncoderOptions& encoder = choices.encoder;
  const std::vector<std::string> args(argv + 1, argv + argc);
  cli::FlagReader flags(args);
  while (!flags.Done()) {
    const std::string arg = flags.Next();
    Status parsed = OkStatus();
    if (arg == "-h" || arg == "--help") {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("%s\n", VersionText("kestrel-convert").c_str());
      const Status closed = CloseStdout();
      return closed.ok() ? 0 : Fail(closed.message());
    } else if (arg == "--weights") {
      std::string value;
      parsed = flags.Done()
                   ? Status::Error(std::string("--weights needs a value (") + kWeightChoices + ")")
                   : flags.Value(arg, &value);
      if (parsed.ok() && !SetWeights(value, &choices)) {
        parsed = Status::Error(std::string("--weights: expected ") + kWeightChoices + ", found '" +
                               value + "'");
      }
    } else if (arg == "--prefill-tokens") {
      parsed = flags.Int(arg, 1, 4096, &options.prefill_tokens);
    } else if (arg == "--score-tokens") {
      parsed = flags.Int(arg, 1, 4096, &options.score_tokens);
    } else if (arg == "--max-batch") {
      parsed = flags.Int(arg, 1, 65536, &options.max_batch);
    } else if (arg == "--max-seq-length") {
      parsed = flags.Int(arg, 1, 65536, &encoder.max_seq_length);
    } else if (arg == "--step-tokens") {
      parsed = flags.Int(arg, 1, 65536, &encoder.step_tokens);
    } else if (arg == "--calibration") {
      parsed = flags.Value(arg, &encoder.calibration);
      if (parsed.ok() && encoder.calibration.empty()) {
        parsed = Status::Error("--calibration: expected a file of texts or none, found ''");
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
    if (!parsed.ok()) return Fail(parsed.message());
  }
  if (input.empty() || output.empty()) return Fail("need INPUT and OUTPUT\n" + Usage());
  const auto start = std::chrono::steady_clock::now();
  ConvertHooks hooks;
  // Total unknown (0) until a GGUF file says how many tensors it has.
  progress = std::make_unique<Progress>("converting tensor", 0);
  hooks.on_total = [](size_t total) {
    progress = std::make_unique<Progress>("converting tensor", total);
  };
  hooks.on_tensor = [](size_t tensors, uint64_t bytes) {
    if (progress) progress->Update(tensors, bytes);
  };
  hooks.on_imported = [] { progress.reset(); };
  const ConvertResult done = ConvertFile(input, output, &choices, "--weights", hooks);
  if (!done.ok()) return Fail(done.message);
  const Model& check = *done.written;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "wrote %s: %s, %zu tensors, %.1f M parameters, %.1f MiB weights, %.2f MiB arena "
      "activations (%.1f s)\n",
      output.c_str(), done.architecture.c_str(), done.tensors, check.parameter_count() / 1e6,
      check.weights_bytes() / 1048576.0, check.meta().activation_bytes() / 1048576.0, seconds);
  const Status s = CloseStdout();
  return s.ok() ? 0 : Fail(s.message());
}
