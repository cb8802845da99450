// llama.cpp's own logits for a tiny random model, recorded by hand with
// tests/py/record_llama_cpp_logits.py (CI cannot build llama.cpp), and the comparison the
// architecture tests (tests/convert_<arch>_test.cc) make against them: mean and largest
// KL(llama.cpp || Kestrel) and the positions whose top token differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::test {

// The fixture's layout: see tests/py/record_llama_cpp_logits.py.
struct LlamaCppLogits {
  std::string make_args, text, provenance;
  uint64_t gguf_hash = 0;  // Fnv1a64 of the GGUF the logits were recorded from
  uint32_t text_tokens = 0, n_tokens = 0, vocab = 0;
  std::vector<int32_t> tokens, top;
  std::vector<double> logits;  // [n_tokens][vocab]
};

// "" or what is wrong with the file.
std::string ReadLlamaCppLogits(const std::string& path, LlamaCppLogits* f);

uint64_t Fnv1a64(const std::vector<uint8_t>& bytes);

// Reads the fixture at path and writes the tiny model it was recorded from to gguf with
// tests/py/<maker> and the fixture's arguments: "" or what went wrong.
std::string ReadLlamaCppLogitsAndModel(const std::string& path, const std::string& maker,
                                       const std::string& gguf, LlamaCppLogits* f);

struct LogitAgreement {
  double kl_mean = 0, kl_max = 0, logit_diff_max = 0;
  int top_differ = 0;
  std::string first_differences;  // "position P: top T, llama.cpp's L" for the first few
};

// Over positions [first, end) of ours ([>= end][vocab]); end <= the fixture's positions.
LogitAgreement CompareWithLlamaCpp(const LlamaCppLogits& f, const std::vector<float>& ours,
                                   uint32_t first, uint32_t end);

}  // namespace kestrel::test
