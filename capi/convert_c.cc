// The C API's conversion: kes_convert, kestrel-convert's work as a call. The steps and their
// messages follow converters/convert_main.cc so that the two write the same bytes and refuse
// the same inputs with the same words; what the program prints (a progress line, the summary)
// becomes a callback here, and the codes say which kind of failure each step's is.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "capi/c_call.h"
#include "converters/arch/arch.h"
#include "converters/ct2/ct2_file.h"
#include "converters/ct2/whisper_convert.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/hf/hf_import.h"
#include "converters/kes_model.h"
#include "converters/weight_recipe.h"
#include "kestrel/kestrel.h"
#include "runtime/model.h"
#include "runtime/output_file.h"

using kestrel::capi::CallStatus;
using kestrel::capi::Error;
using kestrel::capi::NullArgument;
using kestrel::capi::Ok;

static_assert(offsetof(kes_convert_params, progress_user_data) + sizeof(void*) ==
                  sizeof(kes_convert_params),
              "kes_convert_params must not end in padding");

namespace {

const char kWeightChoices[] = "keep, f32, f16, bf16, q8, q4, q4_k_m, q4_k, q5_k or q6_k";

// The options kestrel-convert's flags set, read from the C parameters.
struct Options {
  kestrel::ConvertOptions convert;
  kestrel::HfEncoderOptions encoder;
  bool weights_given = false;
  bool recipe_given = false;
  kestrel::WeightRecipe recipe = kestrel::WeightRecipe::kQ4_K_M;
};

CallStatus ParseWeights(const std::string& v, Options* o) {
  using kestrel::WeightRecipe;
  namespace fb = kestrel::fb;
  o->weights_given = true;
  if (v == "keep") o->convert.keep_types = true;
  else if (v == "f32") o->convert.weight_dtype = fb::DType::F32;
  else if (v == "f16") o->convert.weight_dtype = fb::DType::F16;
  else if (v == "bf16") o->convert.weight_dtype = fb::DType::BF16;
  else if (v == "q8") o->convert.weight_dtype = fb::DType::Q8_0;
  else if (v == "q4") o->convert.weight_dtype = fb::DType::Q4_0;
  else if (v == "q4_k_m") o->recipe_given = true, o->recipe = WeightRecipe::kQ4_K_M;
  else if (v == "q4_k") o->recipe_given = true, o->recipe = WeightRecipe::kQ4_K;
  else if (v == "q5_k") o->recipe_given = true, o->recipe = WeightRecipe::kQ5_K;
  else if (v == "q6_k") o->recipe_given = true, o->recipe = WeightRecipe::kQ6_K;
  else {
    return Error(KES_INVALID_ARGUMENT, std::string("kes_convert_params.weights: expected ") +
                                           kWeightChoices + ", found '" + v + "'");
  }
  return Ok();
}

CallStatus CheckCount(const char* name, uint32_t value, uint32_t min, uint32_t max) {
  if (value >= min && value <= max) return Ok();
  return Error(KES_INVALID_ARGUMENT, std::string("kes_convert_params.") + name + ": expected " +
                                         std::to_string(min) + " to " + std::to_string(max) +
                                         ", found " + std::to_string(value));
}

// *read gets the caller's struct with defaults for the fields its struct_size leaves out.
CallStatus ReadOptions(const kes_convert_params* in, Options* o, kes_convert_params* read) {
  kes_convert_params& p = *read;
  KES_C_RETURN_IF_ERROR(kestrel::capi::ReadParams(in, kes_convert_default_params(),
                                                  "kes_convert_params", &p));
  if (p.reserved0 != 0) return Error(KES_INVALID_ARGUMENT, "kes_convert_params.reserved0 != 0");
  if (p.weights != nullptr) KES_C_RETURN_IF_ERROR(ParseWeights(p.weights, o));
  KES_C_RETURN_IF_ERROR(CheckCount("prefill_tokens", p.prefill_tokens, 1, 4096));
  KES_C_RETURN_IF_ERROR(CheckCount("score_tokens", p.score_tokens, 1, 4096));
  KES_C_RETURN_IF_ERROR(CheckCount("max_seq_length", p.max_seq_length, 0, 65536));
  KES_C_RETURN_IF_ERROR(CheckCount("max_batch", p.max_batch, 1, 65536));
  KES_C_RETURN_IF_ERROR(CheckCount("step_tokens", p.step_tokens, 1, 65536));
  if (p.calibration != nullptr) {
    if (*p.calibration == '\0') {
      return Error(KES_INVALID_ARGUMENT, "kes_convert_params.calibration: expected a file of "
                                         "texts or none, found ''");
    }
    o->encoder.calibration = p.calibration;
  }
  o->convert.prefill_tokens = p.prefill_tokens;
  o->convert.score_tokens = p.score_tokens;
  o->encoder.max_seq_length = p.max_seq_length;
  o->encoder.max_batch = p.max_batch;
  o->encoder.step_tokens = p.step_tokens;
  return Ok();
}

// An input that fails to parse is KES_BAD_MODEL when it is a readable file, KES_IO_ERROR when
// it cannot be opened at all (missing, unreadable): the converter's Status has no code.
kes_status InputFailure(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return KES_IO_ERROR;
  ::close(fd);
  return KES_BAD_MODEL;
}

// See convert_main.cc: a checkpoint's file given instead of its folder.
std::string CheckpointFolderHint(const std::string& input) {
  const size_t slash = input.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : input.substr(0, slash);
  if (!kestrel::IsDirectory(input) && kestrel::PathExists(folder + "/config.json")) {
    return " (a Hugging Face checkpoint is converted from its folder: give '" + folder + "')";
  }
  return std::string();
}

// Fills *model from `input` as kestrel-convert does, before the arena is planned.
CallStatus Import(const std::string& input, Options* o, kestrel::KesModel* model,
                  const std::function<void(size_t)>& set_total) {
  using namespace kestrel;
  const bool folder = IsDirectory(input);
  if (folder) {
    if (!o->weights_given) o->convert.keep_types = true;
    if (o->recipe_given) {
      return Error(KES_INVALID_ARGUMENT,
                   "weights q4_k_m, q4_k, q5_k and q6_k are for GGUF input; for a Hugging Face "
                   "checkpoint or a CTranslate2 folder use keep, f32, f16, bf16, q8 or q4");
    }
  }
  if (folder && PathExists(input + "/model.bin") && !PathExists(input + "/model.safetensors")) {
    std::unique_ptr<ct2::File> file;
    Status s = ct2::File::Open(input + "/model.bin", &file);
    if (!s.ok()) return Error(InputFailure(input + "/model.bin"), s.message());
    s = ct2::ConvertWhisper(input, *file, o->convert, model);
    if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
    return Ok();
  }
  if (folder) {
    const Status s = ConvertHfCheckpoint(input, o->convert, o->encoder, model);
    if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
    return Ok();
  }
  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(input, &file);
  if (!s.ok()) return Error(InputFailure(input), s.message() + CheckpointFolderHint(input));
  set_total(file->tensors().size());
  if (!o->weights_given) o->convert.keep_types = HasQuantizedTensors(*file);
  if (o->recipe_given) {
    s = ChooseWeightTypes(*file, o->recipe, &o->convert.tensor_types);
    if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
  }
  std::string arch;
  s = file->GetString("general.architecture", &arch);
  if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
  const ArchitectureConverter convert = FindArchitecture(arch);
  if (!convert) {
    return Error(KES_UNSUPPORTED, input + ": unsupported architecture '" + arch +
                                      "' (supported: " + SupportedArchitectures() + ")");
  }
  s = convert(*file, o->convert, model);
  if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
  return Ok();
}

CallStatus Convert(const std::string& input, const std::string& output,
                   const kes_convert_params* params) {
  using namespace kestrel;
  Options options;
  kes_convert_params p;
  KES_C_RETURN_IF_ERROR(ReadOptions(params, &options, &p));
  const kes_convert_progress progress = p.progress;
  void* user_data = p.progress_user_data;

  // Before any work, as kestrel-convert: an output that would replace the input, or that cannot
  // be written, is refused now; the temporary is removed on every failure (its destructor).
  Status s = CheckNotInput(output, input, "input");
  if (!s.ok()) return Error(KES_INVALID_ARGUMENT, s.message());
  std::unique_ptr<AtomicOutput> out;
  s = AtomicOutput::Create(output, &out);
  if (!s.ok()) return Error(KES_IO_ERROR, s.message());

  KesModel model;
  size_t total = 0;
  if (progress != nullptr) {
    model.on_tensor_added = [&](size_t done) { progress(user_data, done, total); };
  }
  KES_C_RETURN_IF_ERROR(Import(input, &options, &model, [&](size_t n) { total = n; }));
  s = PlanArena(&model.meta);
  if (!s.ok()) return Error(KES_BAD_MODEL, input + ": " + s.message());
  std::string source = input;
  while (source.size() > 1 && source.back() == '/') source.pop_back();
  model.meta.source = source.substr(source.find_last_of('/') + 1);
  s = WriteKes(&model, out.get());
  if (!s.ok()) return Error(KES_IO_ERROR, s.message());

  std::unique_ptr<Model> check;
  s = Model::Open(out->temp_path(), &check);
  if (!s.ok()) {
    return Error(KES_INTERNAL,
                 "internal error: the written file fails verification: " + s.message());
  }
  s = out->Commit();
  if (!s.ok()) return Error(KES_IO_ERROR, s.message());
  return Ok();
}

}  // namespace

extern "C" {

kes_convert_params kes_convert_default_params(void) {
  kes_convert_params p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  // As ConvertOptions and HfEncoderOptions default them.
  const kestrel::ConvertOptions convert;
  const kestrel::HfEncoderOptions encoder;
  p.prefill_tokens = convert.prefill_tokens;
  p.score_tokens = convert.score_tokens;
  p.max_seq_length = encoder.max_seq_length;
  p.max_batch = encoder.max_batch;
  p.step_tokens = encoder.step_tokens;
  return p;
}

kes_status kes_convert(const char* src, const char* dst, const kes_convert_params* params) {
  return kestrel::capi::Guard(nullptr, nullptr, [&]() -> CallStatus {
    if (src == nullptr) return NullArgument("src");
    if (dst == nullptr) return NullArgument("dst");
    if (*src == '\0' || *dst == '\0') {
      return Error(KES_INVALID_ARGUMENT, "src and dst: expected paths, found an empty string");
    }
    return Convert(src, dst, params);
  });
}

}  // extern "C"
