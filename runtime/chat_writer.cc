#include "runtime/chat_writer.h"

#include <ctime>
#include <utility>

namespace kestrel {
namespace {

// The built-in format's segments: ChatTurn for each user message, each reply after its turn.
Status RenderBuiltIn(ChatFormat format, const std::vector<ChatMessage>& messages,
                     bool add_generation_prompt, std::vector<ChatSegment>* out) {
  out->clear();
  size_t i = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") system = messages[i++].content;
  const auto refuse = [&](size_t at, const char* expected) {
    return Status::Error(std::string("the built-in ") + ChatFormatName(format) +
                         " chat format: message " + std::to_string(at) + " is '" +
                         messages[at].role + "', expected " + expected);
  };
  KES_CHECK_OR_RETURN(i < messages.size(), std::string("the built-in ") + ChatFormatName(format) +
                                               " chat format needs a user message");
  bool first = true;
  while (i < messages.size()) {
    if (messages[i].role != "user") return refuse(i, "'user'");
    const bool last_user = i + 1 == messages.size();
    if (last_user && !add_generation_prompt) {
      return Status::Error(std::string("the built-in ") + ChatFormatName(format) +
                           " chat format ends a user message by opening the assistant's turn: "
                           "ask for the generation prompt");
    }
    for (ChatSegment& s : ChatTurn(format, first, system, messages[i].content)) {
      out->push_back(std::move(s));
    }
    first = false;
    ++i;
    if (i == messages.size()) break;
    if (messages[i].role != "assistant") return refuse(i, "'assistant'");
    out->push_back({messages[i].content, false});
    ++i;
    if (i == messages.size() && add_generation_prompt) {
      return refuse(i - 1, "a user message last, for the generation prompt");
    }
  }
  return OkStatus();
}

}  // namespace

std::string ChatWriter::Describe() const {
  return jinja ? std::string("the model's Jinja template") : std::string(ChatFormatName(format));
}

Status ChooseChatWriter(const Model& model, const std::string& format_name,
                        const std::string& system, ChatWriter* out) {
  *out = ChatWriter();
  const Tokenizer& tokenizer = model.tokenizer();
  const auto* stored = model.meta().tokenizer()->chat_template();
  const std::string source = stored ? stored->str() : std::string();
  if (!format_name.empty()) return ParseChatFormat(format_name, &out->format);
  if (source.empty()) return DetectChatFormat(source, &out->format);
  const auto piece = [&](int32_t id) { return std::string(tokenizer.Piece(id)); };
  Status s =
      JinjaTemplate::Parse(source, piece(tokenizer.config().bos_id),
                           piece(tokenizer.config().eos_id), std::time(nullptr), &out->jinja);
  // A trial turn: a template that refuses a system prompt (Gemma 2's) is found out here.
  std::vector<ChatMessage> trial = {{"user", "Hello"}};
  if (!system.empty()) trial.insert(trial.begin(), {"system", system});
  std::string rendered;
  if (s.ok()) s = out->jinja->Render(trial, true, &rendered);
  if (s.ok()) return OkStatus();
  out->jinja.reset();
  const Status detected = DetectChatFormat(source, &out->format);
  if (!detected.ok()) return Status::Error(s.message() + "; and " + detected.message());
  out->warning =
      s.message() + "; using the built-in " + ChatFormatName(out->format) + " format instead";
  return OkStatus();
}

void SetEnableThinking(ChatWriter* writer, std::optional<bool> enable_thinking) {
  if (writer->jinja) writer->jinja->SetEnableThinking(enable_thinking);
}

std::unique_ptr<ChatConversation> MakeChatConversation(const Model& model, ChatWriter writer,
                                                       std::string system) {
  return std::make_unique<ChatConversation>(model.tokenizer(), std::move(writer.jinja),
                                            writer.format, std::move(system));
}

Status RenderChat(const ChatWriter& writer, const std::vector<ChatMessage>& messages,
                  bool add_generation_prompt, std::string* out) {
  if (writer.jinja) return writer.jinja->Render(messages, add_generation_prompt, out);
  std::vector<ChatSegment> segments;
  KES_RETURN_IF_ERROR(RenderBuiltIn(writer.format, messages, add_generation_prompt, &segments));
  out->clear();
  for (const ChatSegment& s : segments) out->append(s.text);
  return OkStatus();
}

Status RenderChatSegments(const ChatWriter& writer, const std::vector<ChatMessage>& messages,
                          bool add_generation_prompt, std::vector<ChatSegment>* out) {
  if (writer.jinja) {
    return RenderChatSegments(*writer.jinja, messages, add_generation_prompt, out);
  }
  return RenderBuiltIn(writer.format, messages, add_generation_prompt, out);
}

Status EncodeChat(const Tokenizer& tokenizer, const std::vector<ChatSegment>& segments,
                  std::vector<int32_t>* tokens) {
  tokens->clear();
  std::string text;
  KES_RETURN_IF_ERROR(EncodeChatSegments(tokenizer, segments, 0, tokens, &text));
  const TokenizerConfig& config = tokenizer.config();
  if (config.add_bos && config.bos_id >= 0 &&
      (tokens->empty() || tokens->front() != config.bos_id)) {
    tokens->insert(tokens->begin(), config.bos_id);
  }
  return OkStatus();
}

}  // namespace kestrel
