// The argument loop every command runs: help, its own flags, then the model path.
#include <cstdio>

#include "tools/cli.h"

namespace kestrel::cli {

std::optional<int> ReadCommandFlags(const std::vector<std::string>& args,
                                    const std::string& command, const char* usage,
                                    const FlagHandler& handle, std::string* model_path,
                                    const char* no_model) {
  FlagReader flags(args);
  while (!flags.Done()) {
    const std::string arg = flags.Next();
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    Status s;
    if (!handle(flags, arg, &s)) s = flags.Positional(arg, command, usage, model_path);
    if (!s.ok()) return Fail(s.message());
  }
  if (model_path->empty()) return Fail(std::string(no_model) + "\n" + usage);
  return std::nullopt;
}

}  // namespace kestrel::cli
