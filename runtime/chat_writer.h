// How a model's conversations are written, chosen once per chat the way `kestrel chat` chooses:
// the model's own Jinja template when it parses and renders a first turn, else the built-in
// format (runtime/chat_template.h) that its turn markers name, or the one asked for by name.
// The C API (kes_chat_apply_template, kes_session_chat) and the CLI share it, so that both
// write the same text.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/chat_conversation.h"
#include "runtime/chat_template.h"
#include "runtime/jinja_template.h"
#include "runtime/model.h"
#include "runtime/status.h"

namespace kestrel {

struct ChatWriter {
  std::unique_ptr<JinjaTemplate> jinja;  // null: the built-in `format`
  ChatFormat format = ChatFormat::kChatMl;
  // Why the model's template is not used although it has one ("" when it is, or when a format
  // was asked for by name): a line for the user.
  std::string warning;
  // "the model's Jinja template" or the built-in format's name.
  std::string Describe() const;
};

// format_name: "" for the model's template, else "gemma", "chatml" or "llama3". The trial turn
// carries `system` (when not empty), so that a template refusing a system prompt (Gemma 2's) is
// found out here rather than on the first turn.
Status ChooseChatWriter(const Model& model, const std::string& format_name,
                        const std::string& system, ChatWriter* out);

// Sets the enable_thinking variable of the writer's template (JinjaTemplate::SetEnableThinking:
// false asks Qwen3 and SmolLM3 for a reply without a reasoning block, as `kestrel chat
// --no-think` does); the built-in formats have no such block and are left as they are.
void SetEnableThinking(ChatWriter* writer, std::optional<bool> enable_thinking);

// A conversation written by `writer` (which it takes), for a Session of `model`.
std::unique_ptr<ChatConversation> MakeChatConversation(const Model& model, ChatWriter writer,
                                                       std::string system);

// `messages` as text. The built-in formats write a system message first, then alternate user
// and assistant messages starting with a user's, and end with either a user message followed by
// the opened assistant turn (add_generation_prompt) or an assistant message left open; other
// shapes are refused, saying which message does not fit.
Status RenderChat(const ChatWriter& writer, const std::vector<ChatMessage>& messages,
                  bool add_generation_prompt, std::string* out);

// The same, split into the template's markup and the messages' own text (ChatSegment).
Status RenderChatSegments(const ChatWriter& writer, const std::vector<ChatMessage>& messages,
                          bool add_generation_prompt, std::vector<ChatSegment>* out);

// The ids of a whole conversation's segments, as `kestrel chat` encodes one: the markup with
// control tokens parsed, the messages' text literally (a typed "<|im_end|>" stays text), and
// the BOS first where the vocabulary wants one and the template did not write it.
Status EncodeChat(const Tokenizer& tokenizer, const std::vector<ChatSegment>& segments,
                  std::vector<int32_t>* tokens);

}  // namespace kestrel
