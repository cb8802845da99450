// Built-in chat formats of the instruction-tuned families Kestrel runs: each a few fixed strings,
// written here once. `kestrel chat` renders the model's own Jinja template (jinja_template.h);
// these write the chat when the model has none (--template names one) or its template fails,
// recognized then from the template's turn markers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kestrel {

enum class ChatFormat {
  kGemma,   // <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
  kChatMl,  // <|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n (SmolLM2, Qwen2)
  kLlama3,  // <|start_header_id|>user<|end_header_id|>\n\n...<|eot_id|>
};

// The format whose markers the Jinja template contains; an error naming the choices when none.
Status DetectChatFormat(std::string_view jinja_template, ChatFormat* out);
// By name: "gemma", "chatml", "llama3" (for --template); an error naming the choices otherwise.
Status ParseChatFormat(std::string_view name, ChatFormat* out);
const char* ChatFormatName(ChatFormat format);
// "gemma, chatml, llama3", for messages.
const char* ChatFormatNames();

// A piece of a chat turn: the format's markup (control tokens written out: encode with
// parse_special) or what a person wrote (encode without it, so typed "<|im_end|>" stays text).
struct ChatSegment {
  std::string text;
  bool markup;
};

// One conversation step. first: the conversation's first turn, which carries the system prompt
// (Gemma has no system role: as its template does, the system text opens the first user
// message). The segments end with the assistant's turn opened, ready for generation; a later
// turn starts by closing the previous assistant turn (generation stops before the end-of-turn
// token is decoded).
std::vector<ChatSegment> ChatTurn(ChatFormat format, bool first, std::string_view system,
                                  std::string_view user);

}  // namespace kestrel
