// A conversation with an instruction-tuned model, and how much of it a Session already holds.
// Each turn the whole conversation is written out again, by the model's own Jinja template
// (JinjaTemplate) or, for a model without one, by a built-in format (ChatTurn), and only the
// text after what the session holds is prefilled: llama.cpp's chat does the same. Templates
// that write earlier turns differently once a later one follows (Gemma's and Llama 3's trim a
// reply's surrounding whitespace) send the session back to where the two texts part
// (Session::Rewind), so the model sees exactly what the template writes.
//
// What people wrote, the system prompt and the model's replies are encoded without parsing
// control tokens, only the template's markup with them: a typed "<|im_end|>" stays text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat_template.h"
#include "runtime/jinja_template.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/tokenizer.h"

namespace kestrel {

// `messages` written out by `jinja`, split into markup and the messages' own text. The split
// is found by rendering once more with a marker in place of each message's text; when the
// template changes the text beyond trimming it (or the two renderings disagree otherwise), the
// whole rendering is one markup segment, encoded as llama.cpp encodes it.
Status RenderChatSegments(const JinjaTemplate& jinja, const std::vector<ChatMessage>& messages,
                          bool add_generation_prompt, std::vector<ChatSegment>* out);

// The ids of `segments`' text from byte `from` on, appended to *tokens (and that text to
// *text): markup with control tokens parsed, the rest literally; no BOS.
Status EncodeChatSegments(const Tokenizer& tokenizer, const std::vector<ChatSegment>& segments,
                          size_t from, std::vector<int32_t>* tokens, std::string* text);

class ChatConversation {
 public:
  // jinja: the model's template, or null to write the turns in the built-in `format`. The
  // tokenizer must outlive the conversation.
  ChatConversation(const Tokenizer& tokenizer, std::unique_ptr<JinjaTemplate> jinja,
                   ChatFormat format, std::string system);

  // The conversation with `user` added, ending with the assistant's turn opened.
  Status Render(std::string_view user, std::vector<ChatSegment>* out) const;

  // Starts the turn `user`: brings `session` back, when needed, to where its text and the new
  // rendering part, and gives the ids to prefill next (Generate's prompt) and their text.
  // *note gets a line for the user when the session cannot go back (it is past its context):
  // the new text then follows what the session holds, as in llama.cpp. Until EndTurn the turn
  // is not part of the conversation: a turn that is never generated leaves no trace.
  Status BeginTurn(Session& session, std::string_view user, std::vector<int32_t>* tokens,
                   std::string* text, std::string* note);
  // Ends the turn BeginTurn started: `reply` holds the tokens Generate gave its sink, of which
  // the first `n_in_session` were decoded into the session (Generate's decode_steps).
  void EndTurn(const std::vector<int32_t>& reply, size_t n_in_session);

 private:
  // A point where the session's position and the text it holds are both known.
  struct Checkpoint {
    size_t position;
    size_t offset;  // in held_
  };
  std::vector<ChatMessage> Messages(std::string_view user) const;
  Status Encode(const std::vector<ChatSegment>& segments, size_t from, std::vector<int32_t>* tokens,
                std::string* text) const;

  const Tokenizer& tokenizer_;
  std::unique_ptr<JinjaTemplate> jinja_;
  ChatFormat format_;
  std::string system_;
  std::vector<std::string> users_, replies_;
  std::string held_;                     // the text the session holds (as far as it is known)
  std::vector<Checkpoint> checkpoints_;  // increasing; empty once the session is past exactness
  // The turn BeginTurn started: its user text, the text and number of the ids it gave, and the
  // session's position before them.
  std::string pending_user_, pending_text_;
  size_t pending_tokens_ = 0, pending_position_ = 0;
};

}  // namespace kestrel
