// hf_tokenizer_ids FOLDER CASES [--add-special]: the ids Kestrel gives each text of CASES (one
// JSON string per line, so texts may hold newlines, or {"hex": "..."} for bytes that are not
// UTF-8) with the tokenizer of the Hugging Face folder FOLDER (WordPiece or Unigram), one line
// of space-separated ids per text. The tokenizer goes the way a model's
// does: ReadHfTokenizer (the converter), packed into a FlatBuffer, verified, then InitTokenizer
// (what Model::Open runs). Special tokens in the text are always split out, as in Hugging Face.
// tests/py/compare_wordpiece_tokenizers.py and compare_unigram_tokenizers.py compare the output
// with `tokenizers` (and SentencePiece).
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

// A case line's text: a JSON string, or {"hex": "<even number of hex digits>"}.
Status CaseText(const std::string& line, const std::string& where, std::string* out) {
  nlohmann::json value;
  KES_RETURN_IF_ERROR(safetensors::ParseJson(line, where, &value));
  if (value.is_string()) {
    *out = value.get<std::string>();
    return OkStatus();
  }
  const bool hex = value.is_object() && value.contains("hex") && value["hex"].is_string();
  const std::string digits = hex ? value["hex"].get<std::string>() : std::string();
  KES_CHECK_OR_RETURN(hex && digits.size() % 2 == 0 &&
                          digits.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos,
                      where + ": expected a JSON string or {\"hex\": \"...\"}");
  out->clear();
  for (size_t i = 0; i < digits.size(); i += 2) {
    *out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  }
  return OkStatus();
}

Status LoadTokenizer(const std::string& folder, Tokenizer* out) {
  fb::TokenizerT table;
  KES_RETURN_IF_ERROR(ReadHfTokenizer(folder, &table));
  return TokenizerFromTable(table, out);
}

int Run(const std::string& folder, const std::string& cases_path, bool add_special) {
  Tokenizer tokenizer;
  Status s = LoadTokenizer(folder, &tokenizer);
  if (!s.ok()) {
    std::fprintf(stderr, "hf_tokenizer_ids: %s\n", s.message().c_str());
    return 1;
  }
  std::ifstream cases(cases_path, std::ios::binary);
  if (!cases) {
    std::fprintf(stderr, "hf_tokenizer_ids: cannot open '%s'\n", cases_path.c_str());
    return 1;
  }
  size_t line_number = 0;
  std::vector<int32_t> ids;
  for (std::string line; std::getline(cases, line);) {
    ++line_number;
    std::string text;
    s = CaseText(line, cases_path + " line " + std::to_string(line_number), &text);
    if (s.ok()) s = tokenizer.Encode(text, add_special, true, &ids);
    if (!s.ok()) {
      std::fprintf(stderr, "hf_tokenizer_ids: %s\n", s.message().c_str());
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
    std::fprintf(stderr, "usage: hf_tokenizer_ids FOLDER CASES [--add-special]\n");
    return 2;
  }
  return kestrel::Run(argv[1], argv[2], add_special);
}
