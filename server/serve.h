// `kestrel serve`: the OpenAI-compatible HTTP server (docs/server.md).
#pragma once

#include <string>
#include <vector>

namespace kestrel::cli {

// Parses the flags and serves until SIGINT or SIGTERM; in a build without cpp-httplib it says so
// and fails.
int ServeCommand(const std::vector<std::string>& args);

}  // namespace kestrel::cli
