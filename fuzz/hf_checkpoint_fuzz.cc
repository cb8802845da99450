// Fuzz target: the Hugging Face checkpoint reader (safetensors, single or sharded, config and
// tokenizer JSON, vocab.txt, sentence-transformers module files, SentencePiece tokenizer.model)
// and the conversion from it: encoders directly, decoders through the GGUF they are rewritten as
// (converters/hf/decoder_gguf.h).
// A checkpoint is a folder, so the input is an archive of its files: records of
//   [u8 file][u32 little-endian size][size bytes]
// where `file` (mod the count) indexes kFiles below; a truncated record ends the archive. The
// files are written to a scratch folder, converted with weights as the last byte picks, and a
// conversion that succeeds must give a model the runtime accepts (fuzz::CheckConvertedModel).
// Seeds: tiny BERT, Whisper and decoder checkpoints (fuzz/corpus/hf_checkpoint, made by
// fuzz/make_seeds.py with fuzz/pack_checkpoint.py, which writes this format).
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "converters/arch/arch.h"
#include "converters/gguf/gguf_file.h"
#include "converters/hf/decoder_gguf.h"
#include "converters/hf/hf_import.h"
#include "fuzz/fuzz_support.h"

namespace {

constexpr const char* kFiles[] = {"config.json",
                                  "model.safetensors",
                                  "model.safetensors.index.json",
                                  "model-00001-of-00002.safetensors",
                                  "model-00002-of-00002.safetensors",
                                  "tokenizer.json",
                                  "vocab.txt",
                                  "tokenizer_config.json",
                                  "special_tokens_map.json",
                                  "modules.json",
                                  "sentence_bert_config.json",
                                  "1_Pooling/config.json",
                                  "2_Normalize/config.json",
                                  "tokenizer.model",
                                  "added_tokens.json",
                                  "chat_template.jinja"};
constexpr size_t kFileCount = sizeof(kFiles) / sizeof(kFiles[0]);

// One scratch folder per process, emptied before each input and removed at exit. Never
// destroyed: the exit handler that removes it runs after static destructors registered later.
const std::string& Folder() {
  static const std::string* folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* path =
        new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/kestrel-fuzz-hf-XXXXXX");
    if (!mkdtemp(path->data())) kestrel::fuzz::Die("cannot create a scratch folder");
    return path;
  }();
  static const bool cleanup_registered = [] {
    return std::atexit([] {
             for (const char* name : kFiles) std::remove((*folder + "/" + name).c_str());
             for (const char* dir : {"/1_Pooling", "/2_Normalize", ""})
               rmdir((*folder + dir).c_str());
           }) == 0;
  }();
  (void)cleanup_registered;
  return *folder;
}

bool WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = (size == 0 || std::fwrite(data, 1, size, f) == size);
  return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const std::string& folder = Folder();
  for (const char* name : kFiles) std::remove((folder + "/" + name).c_str());
  mkdir((folder + "/1_Pooling").c_str(), 0700);
  mkdir((folder + "/2_Normalize").c_str(), 0700);
  size_t pos = 0;
  while (size - pos >= 5) {
    const char* name = kFiles[data[pos] % kFileCount];
    uint32_t length;
    std::memcpy(&length, data + pos + 1, 4);
    pos += 5;
    if (length > size - pos) break;
    if (!WriteFile(folder + "/" + name, data + pos, length)) fuzz::Die("cannot write " + folder);
    pos += length;
  }

  const uint8_t choice = size > 0 ? data[size - 1] : 0;
  ConvertOptions options = fuzz::FloatWeightsChoice(choice);
  options.prefill_tokens = 16;
  options.max_batch = 2;
  KesModel model;
  if (IsHfDecoderFolder(folder)) {
    std::vector<uint8_t> bytes;
    if (!BuildHfDecoderGguf(folder, &bytes).ok()) return 0;
    std::unique_ptr<gguf::File> file;
    std::string arch;
    if (!gguf::File::OpenFromMemory(bytes.data(), bytes.size(), &file).ok() ||
        !file->GetString("general.architecture", &arch).ok()) {
      fuzz::Die("the GGUF a decoder folder was rewritten as does not open");
    }
    const ArchitectureConverter convert = FindArchitecture(arch);
    if (!convert) fuzz::Die("a decoder folder was rewritten as unknown architecture " + arch);
    if (!convert(*file, options, &model).ok()) return 0;
    fuzz::CheckConvertedModel(&model, choice / 5);
    return 0;
  }
  HfEncoderOptions encoder;
  if (!ConvertHfCheckpoint(folder, options, encoder, &model).ok()) return 0;
  fuzz::CheckConvertedModel(&model, choice / 5);
  return 0;
}
