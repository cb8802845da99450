// Fuzz target: the .kes loader. Any bytes are opened as a model from memory (preamble,
// FlatBuffer verifier, tensors, tokenizer, KV layout, every plan's ops); an accepted model is run
// (fuzz_support.h): a short generation, or embeddings for an encoder.
// Seeds: tiny models of each architecture and weight type (fuzz/corpus/kes_loader, made by
// fuzz/make_seeds.sh).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuzz/fuzz_support.h"
#include "runtime/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const fuzz::AlignedCopy file(data, size);
  std::unique_ptr<Model> model;
  if (!Model::FromMemory(file.data(), file.size(), &model).ok()) return 0;
  fuzz::RunModel(*model, size > 0 ? data[size - 1] : 0);
  return 0;
}
