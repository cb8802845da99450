// `kestrel serve` in a build without cpp-httplib (cross and static board builds): the rest of
// the program works; this command says why it does not.
#include "server/serve.h"

#include <cstdio>

namespace kestrel::cli {

int ServeCommand(const std::vector<std::string>&) {
  std::fputs(
      "kestrel: error: this kestrel was built without the server (cpp-httplib was not "
      "found when it was configured: install libcpp-httplib-dev and build again)\n",
      stderr);
  return 1;
}

}  // namespace kestrel::cli
