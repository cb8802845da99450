#include "runtime/chat_template.h"

namespace kestrel {
namespace {

struct FormatInfo {
  ChatFormat format;
  const char* name;
  const char* marker;  // appears in the family's Jinja template
};

constexpr FormatInfo kFormats[] = {
    {ChatFormat::kGemma, "gemma", "<start_of_turn>"},
    {ChatFormat::kChatMl, "chatml", "<|im_start|>"},
    {ChatFormat::kLlama3, "llama3", "<|start_header_id|>"},
};

}  // namespace

Status DetectChatFormat(std::string_view jinja, ChatFormat* out) {
  KES_CHECK_OR_RETURN(!jinja.empty(), std::string("the model has no chat template; choose one "
                                                  "with --template (") +
                                          ChatFormatNames() + ")");
  for (const FormatInfo& f : kFormats) {
    if (jinja.find(f.marker) != std::string_view::npos) {
      *out = f.format;
      return OkStatus();
    }
  }
  return Status::Error(std::string("the model's chat template uses none of the turn markers "
                                   "Kestrel knows; choose a format with --template (") +
                       ChatFormatNames() + ")");
}

Status ParseChatFormat(std::string_view name, ChatFormat* out) {
  for (const FormatInfo& f : kFormats) {
    if (name == f.name) {
      *out = f.format;
      return OkStatus();
    }
  }
  return Status::Error("unknown chat template '" + std::string(name) + "' (expected one of " +
                       ChatFormatNames() + ")");
}

const char* ChatFormatName(ChatFormat format) {
  for (const FormatInfo& f : kFormats) {
    if (f.format == format) return f.name;
  }
  return "unknown";
}

const char* ChatFormatNames() { return "gemma, chatml, llama3"; }

std::vector<ChatSegment> ChatTurn(ChatFormat format, bool first, std::string_view system,
                                  std::string_view user) {
  std::vector<ChatSegment> out;
  const auto markup = [&](std::string_view text) {
    if (!text.empty()) out.push_back({std::string(text), true});
  };
  const auto words = [&](std::string_view text) {
    if (!text.empty()) out.push_back({std::string(text), false});
  };
  const bool with_system = first && !system.empty();
  // ChatML and Llama 3 mark every message alike: a header naming its role (open, role, close),
  // the text, and an end tag; only their tags differ.
  const auto role_tagged = [&](std::string_view open, std::string_view close,
                               std::string_view end) {
    const auto header = [&](std::string_view role) {
      return std::string(open).append(role).append(close);
    };
    markup(first ? "" : end);
    if (with_system) {
      markup(header("system"));
      words(system);
      markup(end);
    }
    markup(header("user"));
    words(user);
    markup(std::string(end) + header("assistant"));
  };
  switch (format) {
    case ChatFormat::kGemma:
      markup(first ? "<start_of_turn>user\n" : "<end_of_turn>\n<start_of_turn>user\n");
      if (with_system) {
        words(system);
        words("\n\n");
      }
      words(user);
      markup("<end_of_turn>\n<start_of_turn>model\n");
      break;
    case ChatFormat::kChatMl: role_tagged("<|im_start|>", "\n", "<|im_end|>\n"); break;
    case ChatFormat::kLlama3:
      role_tagged("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>");
      break;
  }
  return out;
}

}  // namespace kestrel
