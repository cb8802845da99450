// kestrel tokenize MODEL.kes (-p TEXT | -f FILE): the token ids of a text, like llama-tokenize.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kTokenizeUsage[] =
    "usage: kestrel tokenize MODEL.kes (-p TEXT | -f FILE) [options]\n"
    "  -p, --prompt TEXT   the text\n"
    "  -f, --file FILE     read the text from FILE (all of it, newlines included); '-' reads\n"
    "                      standard input\n"
    "  --ids               print only the ids, as [1, 2, 3]\n"
    "  --no-bos            do not add BOS (EOS) even when the model adds them\n"
    "  --no-parse-special  treat control-token strings (<|im_start|>, ...) as plain text\n"
    "Default output: one line per token, 'id -> 'piece''.\n";

// The piece as printed: its text, with bytes that would break the line escaped.
std::string Printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int TokenizeCommand(const std::vector<std::string>& args) {
  std::string model_path, text, file;
  bool have_text = false, ids_only = false, add_special = true, parse_special = true;
  FlagReader flags(args);
  while (!flags.Done()) {
    const std::string arg = flags.Next();
    Status s;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kTokenizeUsage, stdout);
      return 0;
    } else if (arg == "-p" || arg == "--prompt") {
      s = flags.Value(arg, &text);
      have_text = true;
    } else if (arg == "-f" || arg == "--file") {
      s = flags.Value(arg, &file);
    } else if (arg == "--ids") {
      ids_only = true;
    } else if (arg == "--no-bos") {
      add_special = false;
    } else if (arg == "--no-parse-special") {
      parse_special = false;
    } else {
      s = flags.Positional(arg, "tokenize", kTokenizeUsage, &model_path);
    }
    if (!s.ok()) return Fail(s.message());
  }
  if (model_path.empty()) return Fail(std::string("no model given\n") + kTokenizeUsage);
  if (have_text == !file.empty()) {
    return Fail(std::string("give the text with exactly one of -p and -f\n") + kTokenizeUsage);
  }
  std::unique_ptr<Model> model;
  Status s = Model::Open(model_path, &model);
  if (s.ok() && !file.empty()) s = ReadInputText("-f", file, &text);
  if (!s.ok()) return Fail(s.message());
  std::vector<int32_t> ids;
  const Tokenizer& tokenizer = model->tokenizer();
  s = tokenizer.Encode(text, add_special, parse_special, &ids);
  if (!s.ok()) return Fail(s.message());
  if (ids_only) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
    std::printf("%s]\n", line.c_str());
    return 0;
  }
  for (int32_t id : ids) {
    // Control tokens print nothing when detokenized; show what they are.
    const bool control = tokenizer.Type(id) == TokenType::kControl;
    const std::string_view shown = control ? tokenizer.Piece(id) : tokenizer.TokenText(id);
    std::printf("%6d -> '%s'\n", id, Printable(shown).c_str());
  }
  return 0;
}

}  // namespace kestrel::cli
