#include "runtime/chat_conversation.h"

#include <algorithm>
#include <utility>

namespace kestrel {
namespace {

// Stands for message i's text in the marked rendering: private-use code points around the
// index, which no template trims or writes and no one types.
const char kMarkOpen[] = "\xEE\x80\x80";   // U+E000
const char kMarkClose[] = "\xEE\x80\x81";  // U+E001
constexpr size_t kMarkLen = 3;

std::string Mark(size_t i) { return kMarkOpen + std::to_string(i) + kMarkClose; }

// s without the leading and (with both) trailing characters of `chars`, as minja's trim,
// strip(chars) and lstrip(chars) give it.
std::string_view Strip(std::string_view s, const char* chars, bool both = true) {
  const size_t first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return std::string_view();
  return both ? s.substr(first, s.find_last_not_of(chars) - first + 1) : s.substr(first);
}

// The marked rendering as literal text and message slots (index >= 0; -1 for literal text).
struct Piece {
  std::string_view text;
  long message = -1;
};

bool ParseMarked(std::string_view marked, size_t n_messages, std::vector<Piece>* out) {
  size_t at = 0;
  while (true) {
    const size_t open = marked.find(kMarkOpen, at);
    out->push_back({marked.substr(at, open == std::string_view::npos ? open : open - at)});
    if (open == std::string_view::npos) return true;
    const size_t close = marked.find(kMarkClose, open + kMarkLen);
    if (close == std::string_view::npos) return false;
    const std::string digits(marked.substr(open + kMarkLen, close - open - kMarkLen));
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    const long index = std::stol(digits);
    if (static_cast<size_t>(index) >= n_messages) return false;
    out->push_back({std::string_view(), index});
    at = close + kMarkLen;
  }
}

// Matches the real rendering against the marked one: each literal exactly, each slot as the
// message's text or its trimmed text. False when they do not line up.
bool SplitRendering(std::string_view real, const std::vector<Piece>& pieces,
                    const std::vector<ChatMessage>& messages, std::vector<ChatSegment>* out) {
  size_t pos = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (p.message < 0) {
      if (real.compare(pos, p.text.size(), p.text) != 0) return false;
      if (!p.text.empty()) out->push_back({std::string(p.text), true});
      pos += p.text.size();
      continue;
    }
    const std::string_view content = messages[p.message].content;
    const std::string_view next = i + 1 < pieces.size() && pieces[i + 1].message < 0
                                      ? pieces[i + 1].text
                                      : std::string_view();
    bool found = false;
    // As written, trimmed (Gemma's), or with its newlines stripped on the left or on both
    // sides (SmolLM3's and Qwen3's replies: content.lstrip('\n'), .strip('\n')).
    for (std::string_view candidate :
         {content, Strip(content, " \t\n\r"), Strip(content, "\n"), Strip(content, "\n", false)}) {
      if (real.compare(pos, candidate.size(), candidate) != 0) continue;
      if (real.compare(pos + candidate.size(), next.size(), next) != 0) continue;
      if (!candidate.empty()) out->push_back({std::string(candidate), false});
      pos += candidate.size();
      found = true;
      break;
    }
    if (!found) return false;
  }
  return pos == real.size();
}

}  // namespace

Status RenderChatSegments(const JinjaTemplate& jinja, const std::vector<ChatMessage>& messages,
                          bool add_generation_prompt, std::vector<ChatSegment>* out) {
  out->clear();
  std::string real, marked;
  KES_RETURN_IF_ERROR(jinja.Render(messages, add_generation_prompt, &real));
  std::vector<ChatMessage> stand_ins = messages;
  // An empty text stays empty: templates test it ("if message['content']").
  for (size_t i = 0; i < stand_ins.size(); ++i) {
    if (!stand_ins[i].content.empty()) stand_ins[i].content = Mark(i);
  }
  std::vector<Piece> pieces;
  if (jinja.Render(stand_ins, add_generation_prompt, &marked).ok() &&
      ParseMarked(marked, messages.size(), &pieces) &&
      SplitRendering(real, pieces, messages, out)) {
    return OkStatus();
  }
  out->assign(1, {std::move(real), true});
  return OkStatus();
}

ChatConversation::ChatConversation(const Tokenizer& tokenizer, std::unique_ptr<JinjaTemplate> jinja,
                                   ChatFormat format, std::string system)
    : tokenizer_(tokenizer),
      jinja_(std::move(jinja)),
      format_(format),
      system_(std::move(system)),
      checkpoints_{{0, 0}} {}

std::vector<ChatMessage> ChatConversation::Messages(std::string_view user) const {
  std::vector<ChatMessage> messages;
  if (!system_.empty()) messages.push_back({"system", system_});
  for (size_t i = 0; i < users_.size(); ++i) {
    messages.push_back({"user", users_[i]});
    messages.push_back({"assistant", replies_[i]});
  }
  messages.push_back({"user", std::string(user)});
  return messages;
}

Status ChatConversation::Render(std::string_view user, std::vector<ChatSegment>* out) const {
  if (jinja_) return RenderChatSegments(*jinja_, Messages(user), true, out);
  // The built-in formats write a turn at a time; each later turn starts by closing the reply.
  out->clear();
  for (size_t i = 0; i <= users_.size(); ++i) {
    const bool last = i == users_.size();
    for (ChatSegment& s : ChatTurn(format_, i == 0, system_, last ? user : users_[i])) {
      out->push_back(std::move(s));
    }
    if (!last && !replies_[i].empty()) out->push_back({replies_[i], false});
  }
  return OkStatus();
}

Status ChatConversation::Encode(const std::vector<ChatSegment>& segments, size_t from,
                                std::vector<int32_t>* tokens, std::string* text) const {
  return EncodeChatSegments(tokenizer_, segments, from, tokens, text);
}

Status EncodeChatSegments(const Tokenizer& tokenizer, const std::vector<ChatSegment>& segments,
                          size_t from, std::vector<int32_t>* tokens, std::string* text) {
  std::vector<int32_t> ids;
  size_t offset = 0;
  for (const ChatSegment& segment : segments) {
    const size_t end = offset + segment.text.size();
    if (end > from) {
      const std::string_view part =
          std::string_view(segment.text).substr(from > offset ? from - offset : 0);
      KES_RETURN_IF_ERROR(tokenizer.Encode(part, /*add_special=*/false,
                                           /*parse_special=*/segment.markup, &ids));
      tokens->insert(tokens->end(), ids.begin(), ids.end());
      text->append(part);
    }
    offset = end;
  }
  return OkStatus();
}

Status ChatConversation::BeginTurn(Session& session, std::string_view user,
                                   std::vector<int32_t>* tokens, std::string* text,
                                   std::string* note) {
  tokens->clear();
  text->clear();
  note->clear();
  std::vector<ChatSegment> segments;
  KES_RETURN_IF_ERROR(Render(user, &segments));
  std::string rendered;
  for (const ChatSegment& s : segments) rendered += s.text;

  size_t from = held_.size();
  if (rendered.compare(0, held_.size(), held_) != 0) {
    // The template writes the earlier turns differently now: go back to the last point both
    // texts share, when the session still can.
    const size_t common = static_cast<size_t>(
        std::mismatch(held_.begin(), held_.end(), rendered.begin(), rendered.end()).first -
        held_.begin());
    bool back = false;
    while (!checkpoints_.empty() && checkpoints_.back().offset > common) checkpoints_.pop_back();
    if (!checkpoints_.empty() && session.Rewind(checkpoints_.back().position).ok()) {
      held_.resize(checkpoints_.back().offset);
      from = held_.size();
      back = true;
    }
    if (!back) {
      checkpoints_.clear();
      held_.resize(common);
      from = common;
      *note =
          "the chat template now writes the earlier turns differently from what the session "
          "holds, and the session is past its context and cannot go back: the new turn follows "
          "what it holds";
    }
  }
  KES_RETURN_IF_ERROR(Encode(segments, from, tokens, text));
  const TokenizerConfig& config = tokenizer_.config();
  if (session.position() == 0 && config.add_bos && config.bos_id >= 0 &&
      (tokens->empty() || tokens->front() != config.bos_id)) {
    tokens->insert(tokens->begin(), config.bos_id);
  }
  pending_user_ = std::string(user);
  pending_text_ = *text;
  pending_position_ = session.position();
  pending_tokens_ = tokens->size();
  return OkStatus();
}

void ChatConversation::EndTurn(const std::vector<int32_t>& reply, size_t n_in_session) {
  const bool exact = !checkpoints_.empty();
  size_t position = pending_position_ + pending_tokens_;
  held_ += pending_text_;
  if (exact) checkpoints_.push_back({position, held_.size()});
  std::string text;
  for (size_t i = 0; i < reply.size(); ++i) {
    const std::string_view piece = tokenizer_.TokenText(reply[i]);
    text.append(piece);
    if (i >= n_in_session) continue;
    held_.append(piece);
    if (exact) checkpoints_.push_back({++position, held_.size()});
  }
  users_.push_back(std::move(pending_user_));
  replies_.push_back(std::move(text));
}

}  // namespace kestrel
