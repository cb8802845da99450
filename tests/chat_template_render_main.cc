// chat_template_render < CASES.json: renders chat templates the way `kestrel chat` does
// (JinjaTemplate, then RenderChatSegments' split into markup and the messages' text), for
// tests/py/compare_chat_templates.py, which compares the output with Python's jinja2.
// CASES: {"cases": [{"template", "bos_token", "eos_token", "now", "messages": [{"role",
// "content"}], "add_generation_prompt", optional "enable_thinking"}]}. Output, one per case:
// {"text", "segments": [[markup, text], ...]} or {"error"}.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/chat_conversation.h"
#include "runtime/jinja_template.h"

namespace kestrel {
namespace {

nlohmann::json RenderCase(const nlohmann::json& c) {
  std::unique_ptr<JinjaTemplate> jinja;
  Status s = JinjaTemplate::Parse(
      c.at("template").get<std::string>(), c.at("bos_token").get<std::string>(),
      c.at("eos_token").get<std::string>(), c.at("now").get<std::time_t>(), &jinja);
  if (!s.ok()) return {{"error", s.message()}};
  if (c.contains("enable_thinking")) jinja->SetEnableThinking(c.at("enable_thinking").get<bool>());
  std::vector<ChatMessage> messages;
  for (const nlohmann::json& m : c.at("messages")) {
    messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  }
  const bool add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  std::string text;
  s = jinja->Render(messages, add_generation_prompt, &text);
  if (!s.ok()) return {{"error", s.message()}};
  std::vector<ChatSegment> segments;
  s = RenderChatSegments(*jinja, messages, add_generation_prompt, &segments);
  if (!s.ok()) return {{"error", s.message()}};
  nlohmann::json out = {{"text", text}, {"segments", nlohmann::json::array()}};
  for (const ChatSegment& seg : segments) out["segments"].push_back({seg.markup, seg.text});
  return out;
}

int Run() {
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  try {
    const nlohmann::json cases = nlohmann::json::parse(input).at("cases");
    nlohmann::json results = nlohmann::json::array();
    for (const nlohmann::json& c : cases) results.push_back(RenderCase(c));
    std::cout << results.dump() << "\n";
    return std::cout.flush() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat_template_render: bad input: %s\n", e.what());
    return 1;
  }
}

}  // namespace
}  // namespace kestrel

int main() { return kestrel::Run(); }
