// Chat formats: recognition from the model's Jinja template, the turns they produce, and
// `kestrel chat` end to end on the tiny models (KV cache kept across turns).
#include "runtime/chat_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_support.h"

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

// Two turns on the tiny ChatML model: both get replies, the second turn continues the first's
// KV cache; a chat longer than the context goes on (the session keeps the attention sinks and
// the most recent tokens), and only a turn longer than the whole context ends it with an error.
TEST(ChatCommand, TwoTurnsThenEndOfInput) {
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny, test::kTinyQwen2), "");
  const ProcessResult r = Cli({"chat", tiny.kes, "--temp", "0", "-n", "5", "--system", "Be kind."},
                              "hello there\n\nthe cat sat\n");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("chat format chatml"), std::string::npos) << r.err;
  // One line of reply per non-empty turn.
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 2u) << r.out;

  const std::string turn = "the cat sat on the mat with the dog\n";
  const ProcessResult past = Cli({"chat", tiny.kes, "--temp", "0", "-n", "5", "--ctx", "40",
                                  "--kv-type", "f16", "--sinks", "2"},
                                 turn + turn + turn + turn);
  ASSERT_TRUE(past.exited && past.exit_code == 0) << Describe(past);
  EXPECT_NE(past.err.find("context 40 tokens, KV f16"), std::string::npos) << past.err;
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

}  // namespace
}  // namespace kestrel
