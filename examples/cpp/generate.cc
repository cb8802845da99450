// generate MODEL.kes PROMPT [N]: greedy generation through Kestrel's C++ API (kestrel.hpp, the
// header-only classes over the C API), printed as it comes: the same output as examples/c and
// `kestrel run MODEL -p PROMPT -n N --temp 0 -t 1`. scripts/test-install.sh builds it against an
// installed Kestrel and checks that.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kestrel/kestrel.hpp"

namespace {

int Fail(const char* what, const kestrel::Status& status) {
  std::fprintf(stderr, "generate: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: generate MODEL.kes PROMPT [N]\n");
    return 2;
  }
  const std::string prompt = argv[2];
  const size_t max_tokens = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 32;

  auto model = kestrel::Model::Open(argv[1]);
  if (!model.ok()) return Fail("open", model.status());
  auto tokens = model->Tokenize(prompt);
  if (!tokens.ok()) return Fail("tokenize", tokens.status());

  kestrel::SessionParams params = kestrel::DefaultSessionParams();
  params.n_threads = 1;
  auto session = kestrel::Session::Create(*model, &params);
  if (!session.ok()) return Fail("session", session.status());

  std::fwrite(prompt.data(), 1, prompt.size(), stdout);  // as `kestrel run` echoes its prompt
  const kestrel::Status status = session->Generate(
      *tokens, kestrel::GreedySampler(), max_tokens, [](int32_t, std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      });
  std::fputc('\n', stdout);
  if (!status.ok()) return Fail("generate", status);
  return 0;
}
