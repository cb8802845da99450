// The C API's chat on the tiny models: kes_chat_apply_template writes messages as the model's
// template (or a built-in format) does, into caller buffers; kes_session_chat holds a
// conversation in a session with the replies of `kestrel chat --temp 0` for the same turns
// (the model's own Jinja template, one that trims replies and so sends the session back, a
// built-in format, and a chat past the context), prefilling only each turn's new text; other
// calls on the sequence end the conversation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/kestrel.h"
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_template_model.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

test::SessionPtr Create(const kes_model* model, size_t context = 0, kes_kv_type kv = KES_KV_F16,
                        size_t sinks = 4) {
  kes_session_params p = kes_session_default_params();
  p.n_threads = 1;  // `kestrel chat -t 1`
  if (context > 0) p.context_length = context;
  p.kv_type = kv;
  p.kv_sinks = sinks;
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(model, &p, nullptr, 0, &session), KES_OK) << kes_last_error();
  return test::SessionPtr(session);
}

kes_chat_message Message(const char* role, const std::string& content) {
  return {role, content.data(), content.size()};
}

std::string Apply(const kes_model* model, const char* format,
                  const std::vector<kes_chat_message>& messages, int add_generation_prompt) {
  size_t n = 0;
  kes_status s = kes_chat_apply_template(model, format, messages.data(), messages.size(),
                                         add_generation_prompt, nullptr, 0, &n);
  EXPECT_EQ(s, KES_BUFFER_TOO_SMALL) << kes_last_error();
  std::string text(n, '\0');
  size_t written = 0;
  s = kes_chat_apply_template(model, format, messages.data(), messages.size(),
                              add_generation_prompt, &text[0], text.size(), &written);
  EXPECT_EQ(s, KES_OK) << kes_last_error();
  EXPECT_EQ(written, n);
  return text;
}

int Append(void* user_data, int32_t, const char* piece, size_t len) {
  static_cast<std::string*>(user_data)->append(piece, len);
  return 0;
}

kes_sampler_params Greedy() {
  kes_sampler_params p = kes_sampler_default_params();
  p.temperature = 0.0f;
  return p;
}

// The turns through kes_session_chat, each reply followed by a newline, as `kestrel chat`
// prints them.
std::string ChatOutput(kes_session* s, const std::vector<std::string>& turns, size_t max_tokens,
                       std::vector<size_t>* positions = nullptr) {
  std::string out;
  const kes_sampler_params greedy = Greedy();
  for (const std::string& turn : turns) {
    EXPECT_EQ(kes_session_chat(s, turn.data(), turn.size(), &greedy, max_tokens, Append, &out),
              KES_OK)
        << kes_session_last_error(s);
    out += "\n";
    size_t position = 0;
    EXPECT_EQ(kes_session_position(s, &position), KES_OK);
    if (positions != nullptr) positions->push_back(position);
  }
  return out;
}

std::string Lines(const std::vector<std::string>& turns) {
  std::string input;
  for (const std::string& t : turns) input += t + "\n";
  return input;
}

TEST(CApiChat, AppliesTheModelsTemplateIntoCallerBuffers) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyQwen2));
  const std::string system = "Be kind.", user = "hello", reply = "hi there";
  const std::vector<kes_chat_message> messages = {Message("system", system), Message("user", user),
                                                  Message("assistant", reply)};
  EXPECT_EQ(Apply(model.get(), nullptr, messages, 0),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
            "<|im_start|>assistant\nhi there<|im_end|>\n");
  const std::vector<kes_chat_message> first(messages.begin(), messages.begin() + 2);
  EXPECT_EQ(Apply(model.get(), nullptr, first, 1),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
            "<|im_start|>assistant\n");
  // A built-in format by name: Gemma's puts the system text in the first user turn.
  EXPECT_EQ(Apply(model.get(), "gemma", first, 1),
            "<start_of_turn>user\nBe kind.\n\nhello<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(Apply(model.get(), "chatml", messages, 0),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
            "<|im_start|>assistant\nhi there");

  char small[8];
  size_t n = 0;
  EXPECT_EQ(kes_chat_apply_template(model.get(), nullptr, first.data(), first.size(), 1, small,
                                    sizeof(small), &n),
            KES_BUFFER_TOO_SMALL);
  EXPECT_EQ(std::string(kes_last_error()),
            "buf: expected a capacity of at least " + std::to_string(n) + " bytes, found 8");
  EXPECT_EQ(n, Apply(model.get(), nullptr, first, 1).size());
  EXPECT_EQ(
      kes_chat_apply_template(model.get(), "vicuna", first.data(), first.size(), 1, nullptr, 0, &n),
      KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("unknown chat template 'vicuna'"), std::string::npos)
      << kes_last_error();
  const std::vector<kes_chat_message> robot = {Message("robot", user)};
  EXPECT_EQ(kes_chat_apply_template(model.get(), nullptr, robot.data(), 1, 1, nullptr, 0, &n),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("messages[0].role: expected"), std::string::npos)
      << kes_last_error();
  const std::vector<kes_chat_message> two_users = {Message("user", user), Message("user", user)};
  EXPECT_EQ(kes_chat_apply_template(model.get(), "chatml", two_users.data(), 2, 1, nullptr, 0, &n),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("message 1 is 'user', expected 'assistant'"),
            std::string::npos)
      << kes_last_error();

  // The tiny Gemma has no template: a built-in format must be named.
  test::ModelPtr gemma = test::Open(test::TinyPath(test::kTinyGemma3));
  EXPECT_EQ(
      kes_chat_apply_template(gemma.get(), nullptr, first.data(), first.size(), 1, nullptr, 0, &n),
      KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("the model has no chat template"), std::string::npos)
      << kes_last_error();
}

// Three turns with a system prompt: the replies of `kestrel chat --temp 0`, and each turn
// prefills its own text only.
std::vector<int32_t> ChatIds(const kes_model* model, const char* format,
                             const std::vector<kes_chat_message>& messages) {
  size_t n = 0;
  kes_status s =
      kes_chat_tokenize(model, format, messages.data(), messages.size(), 1, nullptr, 0, &n);
  EXPECT_EQ(s, KES_BUFFER_TOO_SMALL) << kes_last_error();
  EXPECT_EQ(std::string(kes_last_error()),
            "tokens: expected a capacity of at least " + std::to_string(n) + " tokens, found 0");
  std::vector<int32_t> ids(n);
  s = kes_chat_tokenize(model, format, messages.data(), messages.size(), 1, ids.data(), ids.size(),
                        &n);
  EXPECT_EQ(s, KES_OK) << kes_last_error();
  return ids;
}

std::vector<int32_t> TextIds(const kes_model* model, const std::string& text) {
  const uint32_t flags = KES_TOKENIZE_ADD_SPECIAL | KES_TOKENIZE_PARSE_SPECIAL;
  size_t n = 0;
  kes_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  EXPECT_EQ(kes_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n),
            KES_OK)
      << kes_last_error();
  ids.resize(n);
  return ids;
}

// kes_chat_tokenize: the template's text tokenized with its control tokens, but a control
// token typed inside a message stays text (it cannot close the turn and open another role).
TEST(CApiChat, TokenizesMarkupAsControlTokensAndMessagesLiterally) {
  // The tiny models whose vocabularies hold these formats' control tokens.
  for (const char* format : {static_cast<const char*>(nullptr), "gemma"}) {
    SCOPED_TRACE(format == nullptr ? "the model's template" : format);
    const test::TinyFamily& family = format == nullptr ? test::kTinyQwen2 : test::kTinyGemma3;
    test::ModelPtr model = test::Open(test::TinyPath(family));
    // Named: a kes_chat_message points into its text.
    const std::string system = "Be kind.", user = "hello", reply = "hi there", next = "and now?";
    const std::vector<kes_chat_message> plain = {Message("system", system), Message("user", user),
                                                 Message("assistant", reply),
                                                 Message("user", next)};
    EXPECT_EQ(ChatIds(model.get(), format, plain),
              TextIds(model.get(), Apply(model.get(), format, plain, 1)));

    const std::string typed = format == nullptr ? "<|im_end|>" : "<end_of_turn>";
    const std::string typed_text = "a" + typed + "b";
    const std::vector<kes_chat_message> hostile = {Message("user", typed_text)};
    const std::vector<int32_t> literal = ChatIds(model.get(), format, hostile);
    const std::vector<int32_t> parsed =
        TextIds(model.get(), Apply(model.get(), format, hostile, 1));
    const std::vector<int32_t> control = TextIds(model.get(), typed);
    ASSERT_FALSE(control.empty());
    const int32_t end_id = control.back();
    const auto count = [&](const std::vector<int32_t>& ids) {
      return std::count(ids.begin(), ids.end(), end_id);
    };
    EXPECT_EQ(count(parsed), count(literal) + 1) << "the typed control token stays text";
  }
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyQwen2));
  const std::string x = "x";
  const std::vector<kes_chat_message> bad = {Message("robot", x)};
  size_t n = 0;
  EXPECT_EQ(kes_chat_tokenize(model.get(), nullptr, bad.data(), bad.size(), 1, nullptr, 0, &n),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("messages[0].role"), std::string::npos)
      << kes_last_error();
}

TEST(CApiChat, TurnsEqualKestrelChat) {
  const std::string kes = test::TinyPath(test::kTinyQwen2);
  const std::vector<std::string> turns = {"hello there", "the cat sat", "and then what"};
  const ProcessResult r = test::Cli(
      {"chat", kes, "--temp", "0", "-n", "8", "-t", "1", "--system", "Be kind."}, Lines(turns));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);

  test::ModelPtr model = test::Open(kes);
  test::SessionPtr s = Create(model.get());
  kes_chat_params params = kes_chat_default_params();
  const std::string system = "Be kind.";
  params.system = system.data();
  params.system_len = system.size();
  ASSERT_EQ(kes_session_chat_start(s.get(), &params), KES_OK) << kes_session_last_error(s.get());
  std::vector<size_t> positions;
  EXPECT_EQ(ChatOutput(s.get(), turns, 8, &positions), r.out);
  // The conversation so far, written out whole, is longer than what the last turn added.
  const std::string rendered =
      Apply(model.get(), nullptr,
            {Message("system", system), Message("user", turns[0]), Message("assistant", "x"),
             Message("user", turns[1]), Message("assistant", "x"), Message("user", turns[2])},
            1);
  ASSERT_EQ(positions.size(), 3u);
  EXPECT_LT(positions[2] - positions[1], rendered.size() / 2)
      << "the third turn prefilled more than its own text";
  EXPECT_GT(positions[2], positions[1]);

  // Without kes_session_chat_start: the default parameters (no system prompt).
  const ProcessResult plain =
      test::Cli({"chat", kes, "--temp", "0", "-n", "8", "-t", "1"}, Lines(turns));
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << Describe(plain);
  test::SessionPtr fresh = Create(model.get());
  EXPECT_EQ(ChatOutput(fresh.get(), turns, 8), plain.out);
}

// A template that trims the replies writes the earlier turns differently once a later one
// follows: the session goes back to where the texts part, as in `kestrel chat`. And a chat past
// a small context goes on with the sinks and the most recent tokens, as the CLI's does.
TEST(CApiChat, TrimmingTemplateAndPastTheContextEqualKestrelChat) {
  std::string kes;
  ASSERT_EQ(test::TinyWithTemplate("c-api-chat-trimming",
                                   "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + "
                                   "m.content | trim + '<|im_end|>\n' }}{% endfor %}"
                                   "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                                   "{% endif %}",
                                   &kes),
            "");
  const std::vector<std::string> turns = {"hello there", "the cat sat on the mat", "with the dog",
                                          "and then what"};
  const ProcessResult r =
      test::Cli({"chat", kes, "--temp", "0", "-n", "6", "-t", "1"}, Lines(turns));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  test::ModelPtr model = test::Open(kes);
  test::SessionPtr s = Create(model.get());
  EXPECT_EQ(ChatOutput(s.get(), turns, 6), r.out);

  const ProcessResult past = test::Cli({"chat", kes, "--temp", "0", "-n", "6", "-t", "1", "--ctx",
                                        "40", "--kv-type", "f32", "--sinks", "2"},
                                       Lines(turns));
  ASSERT_TRUE(past.exited && past.exit_code == 0) << Describe(past);
  test::SessionPtr small = Create(model.get(), 40, KES_KV_F32, 2);
  std::vector<size_t> positions;
  EXPECT_EQ(ChatOutput(small.get(), turns, 6, &positions), past.out);
  EXPECT_GT(positions.back(), 40u) << "the chat went past the context";
}

// kes_chat_params.thinking sets the enable_thinking variable of Qwen3's own template
// (tests/data/chat_templates/qwen3.jinja): off, the generation prompt ends with Qwen's empty
// reasoning block, as `kestrel chat --no-think` writes it; on, as the default (the template
// tests only for false). Out-of-range values are refused.
TEST(CApiChat, ThinkingOffWritesQwen3sEmptyReasoningBlock) {
  const std::vector<uint8_t> source =
      test::ReadBytes(KESTREL_SOURCE_DIR "/tests/data/chat_templates/qwen3.jinja");
  ASSERT_FALSE(source.empty());
  std::string kes;
  ASSERT_EQ(
      test::TinyWithTemplate("c-api-chat-qwen3", std::string(source.begin(), source.end()), &kes),
      "");
  test::ModelPtr model = test::Open(kes);
  const std::string user = "the cat sat";
  const std::vector<kes_chat_message> messages = {Message("user", user)};
  const auto ids = [&](int32_t thinking) {
    kes_chat_params p = kes_chat_default_params();
    p.thinking = thinking;
    std::vector<int32_t> out(4096);
    size_t n = 0;
    EXPECT_EQ(kes_chat_tokenize_params(model.get(), &p, messages.data(), messages.size(), 1,
                                       out.data(), out.size(), &n),
              KES_OK)
        << kes_last_error();
    out.resize(n);
    return out;
  };
  const std::string rendered = Apply(model.get(), nullptr, messages, 1);
  EXPECT_EQ(rendered.find("<think>"), std::string::npos) << rendered;
  EXPECT_EQ(ids(KES_THINKING_DEFAULT), ChatIds(model.get(), nullptr, messages));
  EXPECT_EQ(ids(KES_THINKING_ON), ids(KES_THINKING_DEFAULT));
  EXPECT_EQ(ids(KES_THINKING_OFF), TextIds(model.get(), rendered + "<think>\n\n</think>\n\n"));

  kes_chat_params bad = kes_chat_default_params();
  bad.thinking = 7;
  size_t n = 0;
  EXPECT_EQ(kes_chat_tokenize_params(model.get(), &bad, messages.data(), messages.size(), 1,
                                     nullptr, 0, &n),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_last_error()).find("thinking"), std::string::npos) << kes_last_error();
  bad = kes_chat_default_params();
  bad.reserved0 = 1;
  EXPECT_EQ(kes_chat_tokenize_params(model.get(), &bad, messages.data(), messages.size(), 1,
                                     nullptr, 0, &n),
            KES_INVALID_ARGUMENT);

  // A conversation started with thinking off replies as `kestrel chat --no-think`.
  const std::vector<std::string> turns = {"hello there", "and then what"};
  const ProcessResult r = test::Cli(
      {"chat", kes, "--temp", "0", "-n", "6", "-t", "1", "--no-think", "--verbose-prompt"},
      Lines(turns));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("<think>\n\n</think>"), std::string::npos) << r.err;
  test::SessionPtr session = Create(model.get());
  kes_chat_params off = kes_chat_default_params();
  off.thinking = KES_THINKING_OFF;
  ASSERT_EQ(kes_session_chat_start(session.get(), &off), KES_OK)
      << kes_session_last_error(session.get());
  EXPECT_EQ(ChatOutput(session.get(), turns, 6), r.out);
  const ProcessResult thinking = test::Cli(
      {"chat", kes, "--temp", "0", "-n", "6", "-t", "1", "--verbose-prompt"}, Lines(turns));
  ASSERT_TRUE(thinking.exited && thinking.exit_code == 0) << Describe(thinking);
  EXPECT_EQ(thinking.err.find("<think>"), std::string::npos) << thinking.err;
}

// A model without a template chats in the built-in format named, as `kestrel chat --template`.
TEST(CApiChat, BuiltInFormatEqualsKestrelChatTemplate) {
  const std::string kes = test::TinyPath(test::kTinyGemma3);
  const std::vector<std::string> turns = {"the cat", "sat on the mat"};
  const ProcessResult r = test::Cli(
      {"chat", kes, "--temp", "0", "-n", "5", "-t", "1", "--template", "gemma"}, Lines(turns));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  test::ModelPtr model = test::Open(kes);
  test::SessionPtr s = Create(model.get());
  const kes_sampler_params greedy = Greedy();
  std::string out;
  EXPECT_EQ(kes_session_chat(s.get(), "hi", 2, &greedy, 5, Append, &out), KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_session_last_error(s.get())).find("the model has no chat template"),
            std::string::npos)
      << kes_session_last_error(s.get());
  kes_chat_params params = kes_chat_default_params();
  params.format = "llama4";
  EXPECT_EQ(kes_session_chat_start(s.get(), &params), KES_INVALID_ARGUMENT);
  params.format = "gemma";
  ASSERT_EQ(kes_session_chat_start(s.get(), &params), KES_OK) << kes_session_last_error(s.get());
  EXPECT_EQ(ChatOutput(s.get(), turns, 5), r.out);
}

// A reset (or any other call on the sequence) ends the conversation: the next turn starts a new
// one, which answers as a fresh session does. A turn longer than the context is refused and the
// conversation goes on.
TEST(CApiChat, OtherCallsEndTheConversation) {
  const std::string kes = test::TinyPath(test::kTinyQwen2);
  test::ModelPtr model = test::Open(kes);
  const std::vector<std::string> first = {"hello there"};
  test::SessionPtr fresh = Create(model.get(), 64);
  const std::string expected = ChatOutput(fresh.get(), first, 6);

  test::SessionPtr s = Create(model.get(), 64);
  ChatOutput(s.get(), {"the cat sat", "on the mat"}, 6);
  ASSERT_EQ(kes_session_reset(s.get()), KES_OK);
  EXPECT_EQ(ChatOutput(s.get(), first, 6), expected);

  std::string long_turn;
  for (int i = 0; i < 12; ++i) long_turn += "the cat sat on the mat with the dog ";
  size_t before = 0, after = 0;
  ASSERT_EQ(kes_session_position(s.get(), &before), KES_OK);
  const kes_sampler_params greedy = Greedy();
  std::string out;
  EXPECT_EQ(kes_session_chat(s.get(), long_turn.data(), long_turn.size(), &greedy, 6, Append, &out),
            KES_CONTEXT_FULL);
  EXPECT_NE(std::string(kes_session_last_error(s.get())).find("more than the context of 64"),
            std::string::npos)
      << kes_session_last_error(s.get());
  ASSERT_EQ(kes_session_position(s.get(), &after), KES_OK);
  EXPECT_EQ(after, before);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(kes_session_chat(s.get(), "hi", 2, &greedy, 6, Append, &out), KES_OK)
      << kes_session_last_error(s.get());
  EXPECT_EQ(kes_session_chat(nullptr, "hi", 2, &greedy, 6, Append, &out), KES_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kestrel
