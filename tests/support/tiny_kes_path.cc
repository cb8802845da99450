#include "tests/support/tiny_kes_path.h"

#include "tests/support/test_support.h"

namespace kestrel::test {

std::string TinyGemma3KesPath(std::string* error) {
  TinyModel tiny;
  *error = MakeTinyModel(&tiny);
  return error->empty() ? tiny.kes : "";
}

}  // namespace kestrel::test
