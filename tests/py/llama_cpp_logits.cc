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
//
//   llama_cpp_logits --tokenize MODEL.gguf CASES.bin OUT.txt
//
// Token ids only, the model loaded vocab_only (tests/py/record_tokenizer_hostile_fixture.py
// --tool): CASES.bin holds records "<parse_special 0|1> <n_bytes>\n" + text + "\n"; OUT.txt gets
// one line of space-separated ids per case, no BOS/EOS added.
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

// The --tokenize mode: each case's ids, one line each.
int Tokenize(const char* model_path, const char* cases_path, const char* out_path) {
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(model_path, mp);
  if (model == nullptr) return std::fprintf(stderr, "cannot load %s\n", model_path), 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream in(cases_path, std::ios::binary);
  std::ofstream out(out_path);
  int special;
  size_t n;
  while (in >> special >> n) {
    in.get();
    std::string text(n, '\0');
    in.read(text.data(), static_cast<std::streamsize>(n));
    in.get();
    std::vector<llama_token> ids(n + 16);
    const int count = llama_tokenize(vocab, text.data(), static_cast<int32_t>(n), ids.data(),
                                     static_cast<int32_t>(ids.size()), false, special != 0);
    if (count < 0) return std::fprintf(stderr, "llama_tokenize failed (%d)\n", count), 1;
    for (int i = 0; i < count; ++i) out << (i ? " " : "") << ids[i];
    out << "\n";
  }
  llama_model_free(model);
  return out.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool tokenize = argc == 5 && std::string(argv[1]) == "--tokenize";
  if (argc != 4 && !tokenize) {
    std::fprintf(stderr,
                 "usage: %s MODEL.gguf TEXT_FILE OUT.bin\n"
                 "       %s --tokenize MODEL.gguf CASES.bin OUT.txt\n",
                 argv[0], argv[0]);
    return 2;
  }
  llama_log_set(Quiet, nullptr);
  llama_backend_init();
  if (tokenize) return Tokenize(argv[2], argv[3], argv[4]);
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
