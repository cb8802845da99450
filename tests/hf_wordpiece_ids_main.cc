// hf_wordpiece_ids FOLDER CASES [--add-special]: the ids Kestrel gives each text of CASES (one
// JSON string per line, so texts may hold newlines) with the tokenizer of the Hugging Face
// folder FOLDER, one line of space-separated ids per text. The tokenizer goes the way a model's
// does: ReadHfTokenizer (the converter), packed into a FlatBuffer, verified, then InitTokenizer
// (what Model::Open runs). Special tokens in the text are always split out, as in Hugging Face.
// tests/py/compare_wordpiece_tokenizers.py compares the output with `tokenizers`.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "converters/hf_tokenizer.h"
#include "converters/safetensors/json_reader.h"
#include "converters/tokenizer_table.h"

namespace kestrel {
namespace {

Status LoadTokenizer(const std::string& folder, Tokenizer* out) {
  fb::TokenizerT table;
  KES_RETURN_IF_ERROR(ReadHfTokenizer(folder, &table));
  return TokenizerFromTable(table, out);
}

int Run(const std::string& folder, const std::string& cases_path, bool add_special) {
  Tokenizer tokenizer;
  Status s = LoadTokenizer(folder, &tokenizer);
  if (!s.ok()) {
    std::fprintf(stderr, "hf_wordpiece_ids: %s\n", s.message().c_str());
    return 1;
  }
  std::ifstream cases(cases_path, std::ios::binary);
  if (!cases) {
    std::fprintf(stderr, "hf_wordpiece_ids: cannot open '%s'\n", cases_path.c_str());
    return 1;
  }
  size_t line_number = 0;
  std::vector<int32_t> ids;
  for (std::string line; std::getline(cases, line);) {
    ++line_number;
    nlohmann::json text;
    s = safetensors::ParseJson(line, cases_path + " line " + std::to_string(line_number), &text);
    if (s.ok() && !text.is_string())
      s = Status::Error("line " + std::to_string(line_number) + ": expected a JSON string");
    if (s.ok()) s = tokenizer.Encode(text.get<std::string>(), add_special, true, &ids);
    if (!s.ok()) {
      std::fprintf(stderr, "hf_wordpiece_ids: %s\n", s.message().c_str());
      return 1;
    }
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace kestrel

int main(int argc, char** argv) {
  const bool add_special = argc == 4 && std::strcmp(argv[3], "--add-special") == 0;
  if (argc != 3 && !add_special) {
    std::fprintf(stderr, "usage: hf_wordpiece_ids FOLDER CASES [--add-special]\n");
    return 2;
  }
  return kestrel::Run(argv[1], argv[2], add_special);
}
