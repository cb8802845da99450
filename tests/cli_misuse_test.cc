// Ordinary mistakes with the `kestrel` commands (issue 35, points 7 to 9): too many --threads,
// a chat turn longer than the context, CRLF input, --ctx out of range, prompts from files and
// standard input, a prompt that cannot run, the wrong kind of model for a command. Each gets one
// clear line and the right exit code, and nothing is lost or done silently.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cpu_count.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Cli;
using test::Describe;
using test::ProcessResult;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(part, at)) != std::string::npos; at += part.size()) ++n;
  return n;
}

bool Succeeded(const ProcessResult& r) { return r.exited && r.exit_code == 0; }
bool Failed(const ProcessResult& r) { return r.exited && r.exit_code == 1; }

void Write(const std::string& path, const std::string& text) {
  ASSERT_TRUE(test::WriteBytes(path, reinterpret_cast<const uint8_t*>(text.data()), text.size()))
      << path;
}

class CliMisuse : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { error_ = test::MakeTinyModel(&tiny_, test::kTinyQwen2); }
  void SetUp() override { ASSERT_EQ(error_, ""); }
  static const std::string& kes() { return tiny_.kes; }

  static test::TinyModel tiny_;
  static std::string error_;
};
test::TinyModel CliMisuse::tiny_;
std::string CliMisuse::error_;

// The default is one thread per physical core; more than the CPUs warns once and still runs.
TEST_F(CliMisuse, ThreadsDefaultToPhysicalCoresAndTooManyWarn) {
  const ProcessResult plain = Cli({"run", kes(), "-p", "the cat", "-n", "2", "--temp", "0"});
  ASSERT_TRUE(Succeeded(plain)) << Describe(plain);
  EXPECT_TRUE(Contains(plain.err, "threads: " + std::to_string(PhysicalCores()) + ","))
      << plain.err;
  EXPECT_FALSE(Contains(plain.err, "warning")) << plain.err;

  const size_t cpus = AvailableCpus();
  const std::string many = std::to_string(cpus + 1);
  const std::string warning = "kestrel: warning: --threads " + many + " is more than the " +
                              std::to_string(cpus) + " CPUs available";
  const ProcessResult run = Cli({"run", kes(), "-p", "the cat", "-n", "2", "-t", many});
  ASSERT_TRUE(Succeeded(run)) << Describe(run);
  EXPECT_EQ(Count(run.err, warning), 1u) << run.err;
  EXPECT_TRUE(Contains(run.err, "threads: " + many + ",")) << run.err;
  const ProcessResult bench =
      Cli({"bench", kes(), "-p", "8", "-n", "4", "-r", "1", "-t", "1," + many});
  ASSERT_TRUE(Succeeded(bench)) << Describe(bench);
  EXPECT_EQ(Count(bench.err, warning), 1u) << bench.err;
  const ProcessResult chat = Cli({"chat", kes(), "--threads", many}, "");
  ASSERT_TRUE(Succeeded(chat)) << Describe(chat);
  EXPECT_EQ(Count(chat.err, warning), 1u) << chat.err;
}

// A turn longer than the whole context is reported and skipped; the turns after it get their
// replies, and the exit code says that one was skipped.
TEST_F(CliMisuse, ChatSkipsATurnLongerThanTheContextAndGoesOn) {
  std::string long_turn;
  for (int i = 0; i < 8; ++i) long_turn += "the cat sat on the mat with the dog ";
  const ProcessResult r = Cli({"chat", kes(), "--temp", "0", "-n", "3", "--ctx", "40"},
                              "hello there\n" + long_turn + "\nthe cat sat\n");
  EXPECT_TRUE(Failed(r)) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "kestrel: error: this turn is ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "more than the context of 40 tokens (--ctx); the turn was skipped"))
      << r.err;
  // Every turn was read ("> " before each and at the end), and the two that fit got a reply
  // each: one line per reply on stdout.
  EXPECT_EQ(Count(r.err, "> "), 4u) << r.err;
  EXPECT_EQ(Count(r.out, "\n"), 2u) << r.out;
}

// Windows line ends: the '\r' is not part of what the user typed.
TEST_F(CliMisuse, ChatStripsCarriageReturns) {
  const std::vector<std::string> args = {"chat", kes(), "--temp", "0", "-n", "6"};
  const ProcessResult lf = Cli(args, "the cat sat\nhello\n");
  const ProcessResult crlf = Cli(args, "the cat sat\r\nhello\r\n");
  ASSERT_TRUE(Succeeded(lf)) << Describe(lf);
  ASSERT_TRUE(Succeeded(crlf)) << Describe(crlf);
  EXPECT_EQ(crlf.out, lf.out);
}

// --ctx above the model's context (256 tokens) is lowered to it with a warning, by every command
// that takes it; below what works it is an error naming --ctx.
TEST_F(CliMisuse, ContextAboveTheModelsWarnsEverywhereAndTooSmallNamesCtx) {
  const std::string warning =
      "kestrel: warning: --ctx 100000 is more than the model's context of 256 tokens; using 256";
  const ProcessResult run =
      Cli({"run", kes(), "-p", "the cat", "-n", "2", "--ctx", "100000", "--temp", "0"});
  ASSERT_TRUE(Succeeded(run)) << Describe(run);
  EXPECT_EQ(Count(run.err, warning), 1u) << run.err;
  EXPECT_TRUE(Contains(run.err, "context: 256,")) << run.err;
  const ProcessResult chat = Cli({"chat", kes(), "--ctx", "100000"}, "");
  ASSERT_TRUE(Succeeded(chat)) << Describe(chat);
  EXPECT_EQ(Count(chat.err, warning), 1u) << chat.err;

  std::string text;
  for (int i = 0; i < 60; ++i) text += "the cat sat on the mat with the dog. ";
  const std::string text_path = test::ScratchPath("misuse-ppl.txt");
  Write(text_path, text);
  const ProcessResult ppl =
      Cli({"perplexity", kes(), "-f", text_path, "--ctx", "100000", "--chunks", "1"});
  ASSERT_TRUE(Succeeded(ppl)) << Describe(ppl);
  EXPECT_EQ(Count(ppl.err, warning), 1u) << ppl.err;
  EXPECT_TRUE(Contains(ppl.out, "chunks of 256")) << ppl.out;
  std::remove(text_path.c_str());

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", kes(), "-p", "the cat", "--ctx", "1"},
        std::vector<std::string>{"chat", kes(), "--ctx", "2"}}) {
    const ProcessResult r = Cli(args);
    EXPECT_TRUE(Failed(r)) << args[0] << ": " << Describe(r);
    EXPECT_TRUE(r.err.rfind("kestrel: error: --ctx: expected at least 5 tokens (the 4 attention "
                            "sinks and more), found " +
                                args.back(),
                            0) == 0)
        << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// -f FILE and -f - give the prompt; one over 128 KiB (more than one argument may hold) is read
// whole, and a prompt that cannot run is refused before anything is printed.
TEST_F(CliMisuse, PromptsFromFilesAndStandardInput) {
  const std::vector<std::string> common = {"-n", "4", "--temp", "0"};
  std::vector<std::string> with_p = {"run", kes(), "-p", "the cat sat"};
  with_p.insert(with_p.end(), common.begin(), common.end());
  const ProcessResult p = Cli(with_p);
  ASSERT_TRUE(Succeeded(p)) << Describe(p);

  const std::string path = test::ScratchPath("misuse-prompt.txt");
  Write(path, "the cat sat");
  std::vector<std::string> with_f = {"run", kes(), "-f", path};
  with_f.insert(with_f.end(), common.begin(), common.end());
  const ProcessResult f = Cli(with_f);
  ASSERT_TRUE(Succeeded(f)) << Describe(f);
  EXPECT_EQ(f.out, p.out);
  std::vector<std::string> with_stdin = {"run", kes(), "-f", "-"};
  with_stdin.insert(with_stdin.end(), common.begin(), common.end());
  const ProcessResult in = Cli(with_stdin, "the cat sat");
  ASSERT_TRUE(Succeeded(in)) << Describe(in);
  EXPECT_EQ(in.out, p.out);

  const ProcessResult tokenize_p = Cli({"tokenize", kes(), "-p", "the cat sat", "--ids"});
  const ProcessResult tokenize_in = Cli({"tokenize", kes(), "-f", "-", "--ids"}, "the cat sat");
  ASSERT_TRUE(Succeeded(tokenize_in)) << Describe(tokenize_in);
  EXPECT_EQ(tokenize_in.out, tokenize_p.out);

  // 160 KiB: every token of it counted, and nothing echoed.
  std::string big;
  while (big.size() < 160 * 1024) big += "the cat sat on the mat. ";
  Write(path, big);
  const ProcessResult ids = Cli({"tokenize", kes(), "-f", path, "--ids", "--no-bos"});
  ASSERT_TRUE(Succeeded(ids)) << Describe(ids);
  const size_t n_tokens = Count(ids.out, ",") + 1;
  const ProcessResult too_long = Cli({"run", kes(), "-f", path});
  EXPECT_TRUE(Failed(too_long)) << Describe(too_long);
  EXPECT_TRUE(Contains(too_long.err, "the prompt is " + std::to_string(n_tokens) +
                                         " tokens, more than the context of"))
      << too_long.err;
  EXPECT_EQ(too_long.out, "");

  const ProcessResult both = Cli({"run", kes(), "-p", "a", "-f", path});
  EXPECT_TRUE(Failed(both) && Contains(both.err, "one of -p and -f")) << Describe(both);
  const ProcessResult missing = Cli({"run", kes(), "-f", path + ".missing"});
  EXPECT_TRUE(Failed(missing) && Contains(missing.err, "cannot open text file '" + path))
      << Describe(missing);
  std::remove(path.c_str());

  // --timings to a place that cannot be written fails before anything is generated.
  const ProcessResult timings =
      Cli({"run", kes(), "-p", "the cat", "--timings", test::ScratchPath("no-such-dir") + "/t"});
  EXPECT_TRUE(Failed(timings) && Contains(timings.err, "--timings")) << Describe(timings);
  EXPECT_EQ(timings.out, "");
}

// Each command given the wrong kind of model names the command to use.
TEST_F(CliMisuse, WrongKindOfModelNamesTheCommandToUse) {
  std::string bert;
  ASSERT_EQ(test::MakeTinyBert("tiny-bert", "", &bert), "");
  const std::string bert_kes = test::ScratchPath("misuse-bert.kes");
  const ProcessResult converted = test::Convert({bert, bert_kes, "--weights", "f32"});
  ASSERT_TRUE(Succeeded(converted)) << Describe(converted);
  const std::string whisper = test::ScratchPath("misuse-whisper");
  ASSERT_EQ(test::MakeTinyWhisper(whisper), "");
  const std::string whisper_kes = test::ScratchPath("misuse-whisper.kes");
  const ProcessResult converted_whisper = test::Convert({whisper, whisper_kes});
  ASSERT_TRUE(Succeeded(converted_whisper)) << Describe(converted_whisper);
  const std::string text_path = test::ScratchPath("misuse-text.txt");
  Write(text_path, "the cat sat on the mat\n");
  const std::string wav = test::ScratchPath("misuse.wav");

  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"run", bert_kes, "-p", "hi"}, bert_kes + " is an encoder model ("},
      {{"chat", bert_kes}, bert_kes + " is an encoder model ("},
      {{"perplexity", bert_kes, "-f", text_path}, bert_kes + " is an encoder model ("},
      {{"run", whisper_kes, "-p", "hi"}, whisper_kes + " is a speech model (whisper)"},
      {{"embed", kes(), "-p", "hi"}, kes() + " is a text generator (qwen2)"},
      {{"embed", whisper_kes, "-p", "hi"}, whisper_kes + " is a speech model (whisper)"},
      {{"transcribe", kes(), wav}, kes() + " is a text generator (qwen2)"},
      {{"transcribe", bert_kes, wav}, bert_kes + " is an encoder model ("},
  };
  for (const Case& c : cases) {
    const ProcessResult r = Cli(c.args);
    EXPECT_TRUE(Failed(r)) << c.args[0] << " " << c.args[1] << ": " << Describe(r);
    EXPECT_TRUE(Contains(r.err, "kestrel: error: " + c.expected)) << c.args[0] << ": " << r.err;
    const std::string use = c.expected.find("encoder") != std::string::npos  ? "'kestrel embed'"
                            : c.expected.find("speech") != std::string::npos ? "'kestrel transcribe"
                                                                             : "'kestrel run'";
    EXPECT_TRUE(Contains(r.err, use)) << c.args[0] << ": " << r.err;
    EXPECT_EQ(Count(r.err, "\n"), 1u) << c.args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
  // The embedding model reads its texts from standard input too.
  const ProcessResult embed = Cli({"embed", bert_kes, "-f", "-"}, "hello world\nthe cat\n");
  ASSERT_TRUE(Succeeded(embed)) << Describe(embed);
  EXPECT_EQ(Count(embed.out, "tokens:"), 2u) << embed.out;
  std::remove(text_path.c_str());
  std::remove(bert_kes.c_str());
  std::remove(whisper_kes.c_str());
}

}  // namespace
}  // namespace kestrel
