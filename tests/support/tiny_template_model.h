// The tiny Qwen2 model with a chat template of the test's in place of its own, for the tests of
// `kestrel chat` (tests/chat_test.cc) and of the C API's chat (tests/c_api_chat_test.cc).
#pragma once

#include <string>

#include "tests/support/test_support.h"

namespace kestrel::test {

// The tiny Qwen2 model (ChatML control tokens) with `chat_template` in place of its own, as
// scratch/<name>.kes in *kes; "" or what failed.
inline std::string TinyWithTemplate(const std::string& name, const std::string& chat_template,
                                    std::string* kes) {
  TinyModel tiny;
  std::string error = MakeTinyModel(&tiny, kTinyQwen2);
  if (!error.empty()) return error;
  std::string quoted = "'";
  for (char c : chat_template) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const std::string gguf = ScratchPath(name + ".gguf");
  *kes = ScratchPath(name + ".kes");
  error = RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                         "/tests/py/edit_gguf.py " + tiny.gguf + " " + gguf +
                         " --set tokenizer.chat_template=str:" + quoted);
  if (!error.empty()) return error;
  const ProcessResult r = Convert({gguf, *kes, "--weights", "f32"});
  return r.exited && r.exit_code == 0 ? "" : Describe(r);
}

}  // namespace kestrel::test
