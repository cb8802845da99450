// A model's own Jinja chat template (GGUF tokenizer.chat_template), rendered as llama.cpp's
// --jinja renders it: by minja (vendor/minja: google/minja, the engine llama.cpp vendors), in
// Hugging Face's environment (trim_blocks, lstrip_blocks) with its variables: messages (role,
// content), add_generation_prompt, bos_token, eos_token, raise_exception and strftime_now. The
// messages go in as given, so the text is Python jinja2's (tests/py/compare_chat_templates.py).
// minja throws; jinja_template.cc alone includes it and turns every exception into a Status.
// What minja cannot survive, a template can still do: endless recursion and integer division by
// zero crash the process (llama.cpp alike); a template is trusted as far as its model is.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kestrel {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class JinjaTemplate {
 public:
  // Parses `source`. bos_token and eos_token are the strings the template's variables hold (the
  // pieces of the model's BOS and EOS tokens). strftime_now formats `now` (local time), fixed
  // here so that a conversation renders its earlier turns the same way on every turn.
  static Status Parse(const std::string& source, const std::string& bos_token,
                      const std::string& eos_token, std::time_t now,
                      std::unique_ptr<JinjaTemplate>* out);
  ~JinjaTemplate();
  JinjaTemplate(const JinjaTemplate&) = delete;
  JinjaTemplate& operator=(const JinjaTemplate&) = delete;

  // The template's text for `messages`; with add_generation_prompt it ends with the assistant's
  // turn opened. A template that raises (raise_exception) or fails gives an error saying why.
  Status Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                std::string* out) const;

  // The enable_thinking variable that Qwen3's and SmolLM3's templates read, for every later
  // Render: undefined unless set (each template's own default, thinking on in both); false is
  // what Qwen documents for a reply without a reasoning block (Qwen3 writes an empty
  // <think></think>, SmolLM3 asks for /no_think). Templates that do not read it ignore it.
  void SetEnableThinking(std::optional<bool> enable_thinking);

 private:
  struct Impl;
  explicit JinjaTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kestrel
