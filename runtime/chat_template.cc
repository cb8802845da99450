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
    case ChatFormat::kChatMl:
      markup(first ? "" : "<|im_end|>\n");
      if (with_system) {
        markup("<|im_start|>system\n");
        words(system);
        markup("<|im_end|>\n");
      }
      markup("<|im_start|>user\n");
      words(user);
      markup("<|im_end|>\n<|im_start|>assistant\n");
      break;
    case ChatFormat::kLlama3:
      markup(first ? "" : "<|eot_id|>");
      if (with_system) {
        markup("<|start_header_id|>system<|end_header_id|>\n\n");
        words(system);
        markup("<|eot_id|>");
      }
      markup("<|start_header_id|>user<|end_header_id|>\n\n");
      words(user);
      markup("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
  }
  return out;
}

}  // namespace kestrel
