// kestrel tokenize MODEL.kes (-p TEXT | -f FILE): the token ids of a text, like llama-tokenize.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tools/cli.h"
#include "tools/printable.h"

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

}  // namespace

int TokenizeCommand(const std::vector<std::string>& args) {
  std::string model_path, text, file;
  bool have_text = false, ids_only = false, add_special = true, parse_special = true;
  const auto flag = [&](FlagReader& flags, const std::string& arg, Status* s) {
    if (arg == "-p" || arg == "--prompt") {
      *s = flags.Value(arg, &text);
      have_text = true;
    } else if (arg == "-f" || arg == "--file") {
      *s = flags.Value(arg, &file);
    } else if (arg == "--ids") {
      ids_only = true;
    } else if (arg == "--no-bos") {
      add_special = false;
    } else if (arg == "--no-parse-special") {
      parse_special = false;
    } else {
      return false;
    }
    return true;
  };
  if (std::optional<int> exit_code =
          ReadCommandFlags(args, "tokenize", kTokenizeUsage, flag, &model_path)) {
    return *exit_code;
  }
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
