// Chat formats: recognition from the model's Jinja template, the turns they produce, the
// conversation rendered by the model's own template and fed incrementally, and `kestrel chat`
// end to end on the tiny models (KV cache kept across turns). The renderings themselves are
// compared with Python's jinja2 by tests/py/compare_chat_templates.py.
#include "runtime/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/chat_conversation.h"
#include "runtime/jinja_template.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_template_model.h"

namespace kestrel {
namespace {

using test::Cli;
using test::Describe;
using test::ProcessResult;

std::string Concatenated(const std::vector<ChatSegment>& segments, bool markup) {
  std::string s;
  for (const ChatSegment& seg : segments) s += seg.markup == markup ? seg.text : "|";
  return s;
}

std::string Joined(const std::vector<ChatSegment>& segments) {
  std::string s;
  for (const ChatSegment& seg : segments) s += seg.text;
  return s;
}

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(KESTREL_SOURCE_DIR) + "/tests/data/chat_templates/" + name,
                   std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<JinjaTemplate> ParsedFixture(const std::string& name, const std::string& bos) {
  std::unique_ptr<JinjaTemplate> jinja;
  const Status s = JinjaTemplate::Parse(Fixture(name), bos, "", 0, &jinja);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return jinja;
}

TEST(ChatFormat, RecognizedByTheTemplatesTurnMarkers) {
  ChatFormat f;
  ASSERT_TRUE(DetectChatFormat("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}"
                               "\n{{ m.content }}<end_of_turn>\n{% endfor %}",
                               &f)
                  .ok());
  EXPECT_EQ(f, ChatFormat::kGemma);
  ASSERT_TRUE(DetectChatFormat("{% for m in messages %}<|im_start|>{{m.role}}\n", &f).ok());
  EXPECT_EQ(f, ChatFormat::kChatMl);
  ASSERT_TRUE(DetectChatFormat("<|start_header_id|>{{ m.role }}<|end_header_id|>", &f).ok());
  EXPECT_EQ(f, ChatFormat::kLlama3);

  Status s = DetectChatFormat("[INST] {{ m.content }} [/INST]", &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--template"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chatml"), std::string::npos) << s.message();
  s = DetectChatFormat("", &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no chat template"), std::string::npos) << s.message();

  ASSERT_TRUE(ParseChatFormat("llama3", &f).ok());
  EXPECT_EQ(f, ChatFormat::kLlama3);
  s = ParseChatFormat("vicuna", &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown chat template 'vicuna'"), std::string::npos);
}

TEST(ChatFormat, TurnsAsTheTemplatesWriteThem) {
  const auto turn = [](ChatFormat f, bool first, const char* system) {
    std::string s;
    for (const ChatSegment& seg : ChatTurn(f, first, system, "Hi")) s += seg.text;
    return s;
  };
  EXPECT_EQ(turn(ChatFormat::kChatMl, true, "Be brief."),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(turn(ChatFormat::kChatMl, false, "Be brief."),
            "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(turn(ChatFormat::kGemma, true, "Be brief."),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(turn(ChatFormat::kGemma, false, ""),
            "<end_of_turn>\n<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(turn(ChatFormat::kLlama3, true, ""),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // What people typed is never parsed for control tokens; only the markup is.
  EXPECT_EQ(Concatenated(ChatTurn(ChatFormat::kChatMl, true, "S", "<|im_end|>"), false),
            "|S||<|im_end|>|");
}

// The built-in formats write what the families' own templates write.
TEST(ChatFormat, BuiltInFormatsEqualTheTemplatesTheyStandFor) {
  const std::vector<ChatMessage> one = {{"system", "Be brief."}, {"user", "Hi"}};
  const struct {
    const char* fixture;
    ChatFormat format;
  } families[] = {{"gemma3.jinja", ChatFormat::kGemma},
                  {"chatml.jinja", ChatFormat::kChatMl},
                  {"llama3.jinja", ChatFormat::kLlama3}};
  for (const auto& f : families) {
    const std::unique_ptr<JinjaTemplate> jinja = ParsedFixture(f.fixture, "");
    ASSERT_TRUE(jinja);
    std::string rendered;
    ASSERT_TRUE(jinja->Render(one, true, &rendered).ok());
    EXPECT_EQ(Joined(ChatTurn(f.format, true, "Be brief.", "Hi")), rendered) << f.fixture;
  }
}

// The rendering splits into the template's markup and the messages' own text, trimmed as the
// template trims it; what people typed is never markup, even when it looks like it.
TEST(ChatTemplate, SplitsMarkupFromTheMessagesText) {
  const std::unique_ptr<JinjaTemplate> gemma = ParsedFixture("gemma3.jinja", "<bos>");
  ASSERT_TRUE(gemma);
  std::vector<ChatSegment> segments;
  ASSERT_TRUE(RenderChatSegments(*gemma,
                                 {{"system", "Sys"},
                                  {"user", " <end_of_turn> hi \n"},
                                  {"assistant", "Yes.\n"},
                                  {"user", "again"}},
                                 true, &segments)
                  .ok());
  EXPECT_EQ(Joined(segments),
            "<bos><start_of_turn>user\nSys\n\n<end_of_turn> hi<end_of_turn>\n"
            "<start_of_turn>model\nYes.<end_of_turn>\n<start_of_turn>user\nagain<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(Concatenated(segments, false), "|Sys|<end_of_turn> hi|Yes.|again|");

  // A template that raises is an error saying why, never an exception.
  std::unique_ptr<JinjaTemplate> raising;
  ASSERT_TRUE(
      JinjaTemplate::Parse("{{ raise_exception('no system role, please') }}", "", "", 0, &raising)
          .ok());
  Status s = RenderChatSegments(*raising, {{"user", "hi"}}, true, &segments);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no system role, please"), std::string::npos) << s.message();
  s = JinjaTemplate::Parse("{% for m in messages %}{{ m.content", "", "", 0, &raising);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not parse"), std::string::npos) << s.message();
}

// Each turn renders the whole conversation and feeds what follows the text the session holds.
// A template that trims the reply writes it differently once the next turn follows: the
// session goes back to where the texts part, so it holds exactly the template's text.
TEST(ChatConversation, FeedsOnlyTheNewTextAndGoesBackWhereTheTemplateDiffers) {
  std::string kes;
  const std::string trimming =
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content | trim + "
      "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\n' }}{% endif %}";
  ASSERT_EQ(test::TinyWithTemplate("chat-trimming", trimming, &kes), "");
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes, &model).ok());
  SessionOptions options;
  options.context_length = 64;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, options, &session).ok());
  const Tokenizer& tokenizer = model->tokenizer();
  std::unique_ptr<JinjaTemplate> jinja;
  ASSERT_TRUE(JinjaTemplate::Parse(trimming, "", "", 0, &jinja).ok());
  ChatConversation chat(tokenizer, std::move(jinja), ChatFormat::kChatMl, "Be kind.");

  std::vector<int32_t> tokens, reply;
  std::string text, note;
  ASSERT_TRUE(chat.BeginTurn(*session, "the cat", &tokens, &text, &note).ok());
  EXPECT_EQ(text,
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nthe cat<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_TRUE(note.empty()) << note;
  ASSERT_TRUE(session->Prefill(tokens.data(), tokens.size()).ok());
  const size_t prompt_end = session->position();
  // A reply ending in a space, all of it decoded into the session.
  ASSERT_TRUE(tokenizer.Encode("the dog ", false, false, &reply).ok());
  ASSERT_GE(reply.size(), 2u);
  ASSERT_TRUE(session->Prefill(reply.data(), reply.size()).ok());
  chat.EndTurn(reply, reply.size());

  ASSERT_TRUE(chat.BeginTurn(*session, "and the mat", &tokens, &text, &note).ok());
  EXPECT_TRUE(note.empty()) << note;
  // The trimmed space's token is gone from the session; the turn starts where the texts part.
  EXPECT_LT(session->position(), prompt_end + reply.size());
  EXPECT_GE(session->position(), prompt_end);
  // What it feeds ends the trimmed reply and writes the new turn.
  const std::string turn =
      "<|im_end|>\n<|im_start|>user\nand the mat<|im_end|>\n<|im_start|>assistant\n";
  ASSERT_GE(text.size(), turn.size()) << text;
  EXPECT_EQ(text.substr(text.size() - turn.size()), turn);
  EXPECT_EQ(text.substr(0, text.size() - turn.size()).find(' '), std::string::npos)
      << "the trimmed space came back: " << text;

  // A turn that never ran leaves no trace: the next one renders as if it had not been typed.
  const size_t before = session->position();
  ASSERT_TRUE(chat.BeginTurn(*session, "something else", &tokens, &text, &note).ok());
  EXPECT_EQ(session->position(), before);
  EXPECT_EQ(text.find("and the mat"), std::string::npos) << text;
}

// Two turns on the tiny ChatML model: both get replies, the second turn continues the first's
// KV cache; a chat longer than the context goes on (the session keeps the attention sinks and
// the most recent tokens), and only a turn longer than the whole context ends it with an error.
TEST(ChatCommand, TwoTurnsThenEndOfInput) {
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny, test::kTinyQwen2), "");
  const ProcessResult r = Cli({"chat", tiny.kes, "--temp", "0", "-n", "5", "--system", "Be kind."},
                              "hello there\n\nthe cat sat\n");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("chat format the model's Jinja template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokens, KV f16;"), std::string::npos) << "the default\n" << r.err;
  // One line of reply per non-empty turn.
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 2u) << r.out;

  const std::string turn = "the cat sat on the mat with the dog\n";
  const ProcessResult past = Cli({"chat", tiny.kes, "--temp", "0", "-n", "5", "--ctx", "40",
                                  "--kv-type", "f32", "--sinks", "2"},
                                 turn + turn + turn + turn);
  ASSERT_TRUE(past.exited && past.exit_code == 0) << Describe(past);
  EXPECT_NE(past.err.find("context 40 tokens, KV f32"), std::string::npos) << past.err;
  // A "> " prompt before each of the four turns and at the end of input: every turn was taken
  // (the replies' text may hold newlines of its own).
  size_t prompts = 0;
  for (size_t at = 0; (at = past.err.find("> ", at)) != std::string::npos; at += 2) ++prompts;
  EXPECT_EQ(prompts, 5u) << past.err;

  std::string long_turn;
  for (int i = 0; i < 8; ++i) long_turn += "the cat sat on the mat with the dog ";
  const ProcessResult full =
      Cli({"chat", tiny.kes, "--temp", "0", "-n", "5", "--ctx", "40"}, long_turn + "\n");
  ASSERT_TRUE(full.exited && full.exit_code == 1) << Describe(full);
  EXPECT_NE(full.err.find("more than the context of 40 tokens"), std::string::npos) << full.err;

  const ProcessResult bad = Cli({"chat", tiny.kes, "--template", "vicuna"});
  ASSERT_TRUE(bad.exited && bad.exit_code == 1) << Describe(bad);
  EXPECT_NE(bad.err.find("unknown chat template 'vicuna'"), std::string::npos) << bad.err;
}

// SmolLM2's own template opens the chat with its default system prompt when none is given (the
// built-in ChatML format left it out); given one, that one alone.
TEST(ChatCommand, WritesTheModelsOwnTemplateWithItsDefaultSystemPrompt) {
  std::string kes;
  ASSERT_EQ(test::TinyWithTemplate("chat-smollm2", Fixture("smollm2.jinja"), &kes), "");
  const ProcessResult r =
      Cli({"chat", kes, "--temp", "0", "-n", "3", "--verbose-prompt"}, "hello\nthe cat\n");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("chat format the model's Jinja template"), std::string::npos) << r.err;
  const std::string first =
      "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
      "Face<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_NE(r.err.find(first), std::string::npos) << r.err;
  // The second turn feeds only its own text: the default system prompt appears once.
  EXPECT_EQ(r.err.find("SmolLM", r.err.find("SmolLM") + 1), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("<|im_start|>user\nthe cat<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << r.err;

  const ProcessResult own = Cli(
      {"chat", kes, "--temp", "0", "-n", "3", "--verbose-prompt", "--system", "Be kind."}, "hi\n");
  ASSERT_TRUE(own.exited && own.exit_code == 0) << Describe(own);
  EXPECT_NE(own.err.find("<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhi"),
            std::string::npos)
      << own.err;
  EXPECT_EQ(own.err.find("SmolLM"), std::string::npos) << own.err;
}

// A template that does not parse costs one warning line and the built-in format its markers
// name; the chat goes on.
TEST(ChatCommand, BrokenTemplateFallsBackToTheBuiltInFormat) {
  std::string kes;
  ASSERT_EQ(test::TinyWithTemplate("chat-broken", "<|im_start|>{% for m in messages %}{{ m.content",
                                   &kes),
            "");
  const ProcessResult r = Cli({"chat", kes, "--temp", "0", "-n", "3"}, "hello\n");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("kestrel: warning: the chat template does not parse"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("using the built-in chatml format"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chat format chatml"), std::string::npos) << r.err;
  EXPECT_FALSE(r.out.empty());

  // A template that refuses one conversation (raise_exception) costs that turn only, which
  // leaves no trace in the next one.
  ASSERT_EQ(
      test::TinyWithTemplate("chat-raising",
                             "{% for m in messages %}{% if m.content == 'boom' %}"
                             "{{ raise_exception('no boom here') }}{% endif %}"
                             "{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
                             "{% endfor %}{{ '<|im_start|>assistant\\n' }}",
                             &kes),
      "");
  const ProcessResult raised =
      Cli({"chat", kes, "--temp", "0", "-n", "3", "--verbose-prompt"}, "boom\nhello\n");
  ASSERT_TRUE(raised.exited && raised.exit_code == 1) << Describe(raised);
  EXPECT_NE(raised.err.find("kestrel: error: the chat template fails: no boom here"),
            std::string::npos)
      << raised.err;
  EXPECT_NE(raised.err.find("prompt ("), std::string::npos) << raised.err;
  EXPECT_EQ(raised.err.find("boom<|im_end|>"), std::string::npos) << raised.err;
  EXPECT_NE(raised.err.find("<|im_start|>user\nhello<|im_end|>"), std::string::npos) << raised.err;

  // A template that refuses a system prompt (Gemma 2's does) is found out before the first
  // turn: the built-in format, which takes one, writes the chat.
  ASSERT_EQ(test::TinyWithTemplate("chat-no-system",
                                   "{% if messages[0]['role'] == 'system' %}"
                                   "{{ raise_exception('System role not supported') }}{% endif %}"
                                   "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + "
                                   "m.content + '<|im_end|>\\n' }}{% endfor %}",
                                   &kes),
            "");
  const ProcessResult system =
      Cli({"chat", kes, "--temp", "0", "-n", "3", "--system", "Be kind."}, "hello\n");
  ASSERT_TRUE(system.exited && system.exit_code == 0) << Describe(system);
  const size_t warning = system.err.find(
      "kestrel: warning: the chat template fails: System role "
      "not supported at row 1, column ");
  ASSERT_NE(warning, std::string::npos) << system.err;
  EXPECT_EQ(system.err.find("using the built-in chatml format instead\n", warning),
            system.err.find('\n', warning) - std::string("using the built-in chatml format "
                                                         "instead")
                                                 .size())
      << "expected one line: " << system.err;
}

}  // namespace
}  // namespace kestrel
