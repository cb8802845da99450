#include "converters/convert_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "converters/arch/arch.h"
#include "converters/ct2/ct2_file.h"
#include "converters/ct2/whisper_convert.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/hf/decoder_gguf.h"
#include "converters/kes_model.h"
#include "converters/scratch_file.h"
#include "runtime/output_file.h"

namespace kestrel {

const char kWeightChoices[] = "keep, f32, f16, bf16, q8, q4, q4_k_m, q4_k, q5_k or q6_k";

bool SetWeights(const std::string& v, ConvertChoices* c) {
  ConvertOptions& o = c->convert;
  c->weights_given = true;
  c->recipe_given = false;
  if (v == "keep")
    o.keep_types = true;
  else if (v == "f32")
    o.weight_dtype = fb::DType::F32;
  else if (v == "f16")
    o.weight_dtype = fb::DType::F16;
  else if (v == "bf16")
    o.weight_dtype = fb::DType::BF16;
  else if (v == "q8")
    o.weight_dtype = fb::DType::Q8_0;
  else if (v == "q4")
    o.weight_dtype = fb::DType::Q4_0;
  else if (v == "q4_k_m")
    c->recipe_given = true, c->recipe = WeightRecipe::kQ4_K_M;
  else if (v == "q4_k")
    c->recipe_given = true, c->recipe = WeightRecipe::kQ4_K;
  else if (v == "q5_k")
    c->recipe_given = true, c->recipe = WeightRecipe::kQ5_K;
  else if (v == "q6_k")
    c->recipe_given = true, c->recipe = WeightRecipe::kQ6_K;
  else
    return false;
  return true;
}

namespace {

ConvertResult Failure(ConvertFailure kind, std::string message) {
  ConvertResult r;
  r.failure = kind;
  r.message = std::move(message);
  return r;
}

// An input that fails to parse is a bad input when it is a readable file, an I/O failure when
// it cannot be opened at all (missing, unreadable).
ConvertFailure InputFailure(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ConvertFailure::kIo;
  ::close(fd);
  return ConvertFailure::kBadInput;
}

// A file of a Hugging Face checkpoint given instead of its folder (model.safetensors, say) fails
// as a GGUF file; the message then says what to give instead.
std::string CheckpointFolderHint(const std::string& input) {
  const size_t slash = input.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : input.substr(0, slash);
  if (!IsDirectory(input) && PathExists(folder + "/config.json")) {
    return " (a Hugging Face checkpoint is converted from its folder: give '" + folder + "')";
  }
  return std::string();
}

// Converts an opened GGUF file: a file given, or the GGUF a decoder folder was rewritten as.
// Without --weights its tensors keep their types when `keep_by_default`.
ConvertResult ImportGguf(const gguf::File& file, const std::string& input, bool keep_by_default,
                         ConvertChoices* c, const ConvertHooks& hooks, KesModel* model,
                         std::string* arch) {
  const auto bad_input = [&](const Status& s) {
    return Failure(ConvertFailure::kBadInput, input + ": " + s.message());
  };
  if (hooks.on_total) hooks.on_total(file.tensors().size());
  if (!c->weights_given) c->convert.keep_types = keep_by_default;
  if (c->recipe_given) {
    const Status s = ChooseWeightTypes(file, c->recipe, &c->convert.tensor_types);
    if (!s.ok()) return bad_input(s);
  }
  Status s = file.GetString("general.architecture", arch);
  if (!s.ok()) return bad_input(s);
  const ArchitectureConverter convert = FindArchitecture(*arch);
  if (!convert) {
    return Failure(ConvertFailure::kUnsupported, input + ": unsupported architecture '" + *arch +
                                                     "' (supported: " + SupportedArchitectures() +
                                                     ")");
  }
  s = convert(file, c->convert, model);
  if (!s.ok()) return bad_input(s);
  return {};
}

// Fills *model from `input`, and *arch with its architecture, before the arena is planned.
// scratch_folder: where a decoder folder's GGUF rewrite is spilled (the output's folder, which
// has room for a model).
ConvertResult Import(const std::string& input, ConvertChoices* c, const char* weights_option,
                     const ConvertHooks& hooks, const std::string& scratch_folder, KesModel* model,
                     std::string* arch) {
  const auto bad_input = [&](const Status& s) {
    return Failure(ConvertFailure::kBadInput, input + ": " + s.message());
  };
  if (IsDirectory(input) && IsHfDecoderFolder(input)) {
    // Rewritten as the GGUF llama.cpp's converter makes of it, then read as one: the same plans
    // and --weights choices as the GGUF route. The rewrite, the checkpoint's size, goes to a
    // scratch file and is read back mapped, so it is not held in memory beside the .kes being
    // made; the mapping outlives the conversion.
    std::unique_ptr<ScratchFile> scratch;
    Status s = ScratchFile::Create(scratch_folder, &scratch);
    if (!s.ok()) return Failure(ConvertFailure::kIo, s.message());
    Status write_error;  // the scratch file's own failure (a full disk), not the folder's
    s = WriteHfDecoderGguf(input, [&](const uint8_t* data, size_t n) {
      write_error = scratch->Append(data, n);
      return write_error;
    });
    if (s.ok()) s = write_error = scratch->Map();
    if (!write_error.ok()) return Failure(ConvertFailure::kIo, write_error.message());
    if (!s.ok()) return bad_input(s);
    std::unique_ptr<gguf::File> file;
    s = gguf::File::OpenFromMemory(scratch->data(), scratch->size(), &file);
    if (!s.ok()) return bad_input(s);
    ConvertResult r = ImportGguf(*file, input, /*keep_by_default=*/true, c, hooks, model, arch);
    if (!r.ok() || !model->meta.tokenizer) return r;
    // What GGUF has no key for: the stop tokens of generation_config.json.
    fb::TokenizerT& tokenizer = *model->meta.tokenizer;
    std::vector<int32_t> stops;
    s = ReadGenerationStopIds(input, tokenizer.pieces.size(), &stops);
    if (!s.ok()) return bad_input(s);
    for (int32_t id : stops) {
      if (std::find(tokenizer.stop_ids.begin(), tokenizer.stop_ids.end(), id) ==
          tokenizer.stop_ids.end()) {
        tokenizer.stop_ids.push_back(id);
      }
    }
    return r;
  }
  if (IsDirectory(input)) {
    if (!c->weights_given) c->convert.keep_types = true;
    if (c->recipe_given) {
      return Failure(ConvertFailure::kBadArgument,
                     std::string(weights_option) +
                         " q4_k_m, q4_k, q5_k and q6_k are for GGUF input and decoder folders; "
                         "for an encoder checkpoint or a CTranslate2 folder use keep, f32, f16, "
                         "bf16, q8 or q4");
    }
    if (PathExists(input + "/model.bin") && !PathExists(input + "/model.safetensors")) {
      // A CTranslate2 folder: faster-whisper's Whisper models.
      std::unique_ptr<ct2::File> file;
      Status s = ct2::File::Open(input + "/model.bin", &file);
      if (!s.ok()) return Failure(InputFailure(input + "/model.bin"), s.message());
      s = ct2::ConvertWhisper(input, *file, c->convert, model);
      if (!s.ok()) return bad_input(s);
      *arch = model->meta.architecture;
      return {};
    }
    const Status s = ConvertHfCheckpoint(input, c->convert, c->encoder, model);
    if (!s.ok()) return bad_input(s);
    *arch = model->meta.architecture;
    return {};
  }
  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(input, &file);
  if (!s.ok()) return Failure(InputFailure(input), s.message() + CheckpointFolderHint(input));
  return ImportGguf(*file, input, HasQuantizedTensors(*file), c, hooks, model, arch);
}

}  // namespace

ConvertResult ConvertFile(const std::string& input, const std::string& output,
                          ConvertChoices* choices, const char* weights_option,
                          const ConvertHooks& hooks) {
  // Before any work: an output that would replace the input, or that cannot be written, is
  // refused now rather than after the conversion. The temporary exists from here on (removed on
  // every failure and on SIGINT/SIGTERM) and becomes OUTPUT only once verified.
  Status s = CheckNotInput(output, input, "input");
  if (!s.ok()) return Failure(ConvertFailure::kBadArgument, s.message());
  std::unique_ptr<AtomicOutput> out;
  s = AtomicOutput::Create(output, &out);
  if (!s.ok()) return Failure(ConvertFailure::kIo, s.message());

  KesModel model;
  if (hooks.on_tensor) model.on_tensor_added = hooks.on_tensor;
  std::string arch;
  const std::string& temp = out->temp_path();
  const size_t slash = temp.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : temp.substr(0, slash);
  // The weights wait in a scratch file beside the output, which has room for them, rather than
  // in memory: WriteKes reads them back mapped.
  s = model.SpillTensorsTo(folder);
  if (!s.ok()) return Failure(ConvertFailure::kIo, s.message());
  ConvertResult result = Import(input, choices, weights_option, hooks, folder, &model, &arch);
  if (!result.ok()) return result;
  if (hooks.on_imported) hooks.on_imported();
  s = PlanArena(&model.meta);
  if (!s.ok()) return Failure(ConvertFailure::kBadInput, input + ": " + s.message());
  std::string source = input;
  while (source.size() > 1 && source.back() == '/') source.pop_back();
  model.meta.source = source.substr(source.find_last_of('/') + 1);
  s = WriteKes(&model, out.get());
  if (!s.ok()) return Failure(ConvertFailure::kIo, s.message());

  // What we wrote must pass the runtime's own checks before it replaces anything.
  s = Model::Open(out->temp_path(), &result.written);
  if (!s.ok()) {
    return Failure(ConvertFailure::kInternal,
                   "internal error: the written file fails verification: " + s.message());
  }
  s = out->Commit();
  if (!s.ok()) return Failure(ConvertFailure::kIo, s.message());
  result.architecture = arch;
  result.tensors = model.meta.tensors.size();
  return result;
}

}  // namespace kestrel
