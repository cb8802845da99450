// llama.cpp's logits for every position of a text: the oracle tests/py/record_llama_cpp_logits.py
// compiles (against build/llama.cpp from scripts/build-llama-cpp.sh) and runs by hand, since CI
// cannot build llama.cpp. Not part of the CMake build.
//
//   llama_cpp_logits MODEL.gguf TEXT_FILE OUT.bin
//
// The text is tokenized by llama.cpp (no BOS/EOS added, special tokens parsed), decoded in one
// batch on the CPU with an f32 KV cache and no flash attention, logits kept for every token.
// OUT.bin: uint32 n_tokens, uint32 n_vocab, int32 tokens[n_tokens], float logits[n_tokens][n_vocab]
// (little-endian, as the host writes them).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llama.h"

namespace {

void Quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf TEXT_FILE OUT.bin\n", argv[0]);
    return 2;
  }
  llama_log_set(Quiet, nullptr);
  llama_backend_init();
  std::ifstream in(argv[2], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return std::fprintf(stderr, "cannot load %s\n", argv[1]), 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);

  std::vector<llama_token> tokens(text.size() + 16);
  const int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()),
                                   tokens.data(), static_cast<int32_t>(tokens.size()), false, true);
  if (n <= 0) return std::fprintf(stderr, "tokenize failed (%d)\n", n), 1;
  tokens.resize(n);

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n) + 64;
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n);
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return std::fprintf(stderr, "cannot create a context\n"), 1;

  llama_batch batch = llama_batch_init(n, 0, 1);
  batch.n_tokens = n;
  for (int32_t i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  if (llama_decode(ctx, batch) != 0) return std::fprintf(stderr, "llama_decode failed\n"), 1;

  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return std::fprintf(stderr, "cannot write %s\n", argv[3]), 1;
  const uint32_t header[2] = {static_cast<uint32_t>(n), static_cast<uint32_t>(n_vocab)};
  std::fwrite(header, sizeof(header), 1, out);
  std::fwrite(tokens.data(), sizeof(llama_token), tokens.size(), out);
  for (int32_t i = 0; i < n; ++i) {
    std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), static_cast<size_t>(n_vocab), out);
  }
  const bool ok = std::fclose(out) == 0;
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return ok ? 0 : 1;
}
