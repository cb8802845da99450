// The command-line side of long generations on the tiny random-weight models (tests/support):
// `kestrel run --ignore-eos` keeps generating past end-of-generation tokens and past the context,
// `--kv-type`/`--sinks` reach the session (run, chat, bench), `kestrel bench --depth` measures at
// a depth with rows and JSON that say so, `kestrel inspect --kv-type` reports the cache's bytes
// for that type, and every command's cache is f16 unless --kv-type says otherwise. Bad values
// of these flags are in bad_input_test's table; perplexity --stream is in perplexity_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

::testing::AssertionResult Succeeded(const ProcessResult& r) {
  if (r.exited && r.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << Describe(r);
}

// How many tokens `kestrel run` says it decoded ("decode:  N tokens in ..." on stderr); -1 when
// the line is missing.
long DecodeSteps(const ProcessResult& r) {
  const size_t at = r.err.find("decode:");
  if (at == std::string::npos) return -1;
  return std::strtol(r.err.c_str() + at + 7, nullptr, 10);
}

// How often `needle` occurs in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

class LongGenerationCliTest : public ::testing::TestWithParam<TinyFamily> {
 protected:
  void SetUp() override { ASSERT_EQ(MakeTinyModel(&tiny_, GetParam()), ""); }
  TinyModel tiny_;
};

// Sampling hot over the whole vocabulary meets an end-of-generation token within 200 tokens for
// most seeds; --ignore-eos then emits it and goes on to -n tokens, the same stream before it.
TEST_P(LongGenerationCliTest, IgnoreEosKeepsGeneratingPastEndOfGeneration) {
  const std::vector<std::string> hot = {"run",    tiny_.kes, "-p",      "the cat", "-n",      "200",
                                        "--temp", "3",       "--top-k", "0",       "--top-p", "1"};
  ProcessResult stopped;
  std::string seed;
  for (int s = 0; s < 40 && seed.empty(); ++s) {
    std::vector<std::string> args = hot;
    args.insert(args.end(), {"--seed", std::to_string(s)});
    stopped = Cli(args);
    ASSERT_TRUE(Succeeded(stopped));
    if (stopped.err.find("stopped at end of generation") != std::string::npos) {
      seed = std::to_string(s);
    }
  }
  ASSERT_FALSE(seed.empty()) << "no seed of 40 met an end-of-generation token";
  EXPECT_LT(DecodeSteps(stopped), 199) << stopped.err;

  std::vector<std::string> args = hot;
  args.insert(args.end(), {"--seed", seed, "--ignore-eos"});
  const ProcessResult ignored = Cli(args);
  ASSERT_TRUE(Succeeded(ignored));
  EXPECT_EQ(DecodeSteps(ignored), 199) << ignored.err;  // the last token needs no decode
  EXPECT_EQ(ignored.err.find("stopped at end of generation"), std::string::npos) << ignored.err;
  ASSERT_FALSE(stopped.out.empty());
  const std::string before_end = stopped.out.substr(0, stopped.out.size() - 1);  // its "\n"
  EXPECT_EQ(ignored.out.compare(0, before_end.size(), before_end), 0)
      << "without --ignore-eos:\n"
      << stopped.out << "\nwith it:\n"
      << ignored.out;
}

// -n far beyond --ctx: generation goes on past the context, for every KV type and with or
// without sinks.
TEST_P(LongGenerationCliTest, IgnoreEosGoesOnPastTheContext) {
  for (const char* kv : {"f32", "f16"}) {
    for (const char* sinks : {"0", "4"}) {
      const ProcessResult r =
          Cli({"run", tiny_.kes, "-p", "the cat sat", "-n", "300", "--ctx", "48", "--temp", "0",
               "--ignore-eos", "--kv-type", kv, "--sinks", sinks});
      ASSERT_TRUE(Succeeded(r)) << kv << ", sinks " << sinks;
      EXPECT_EQ(DecodeSteps(r), 299) << r.err;
      EXPECT_NE(r.err.find(std::string("context: 48, KV ") + kv), std::string::npos) << r.err;
    }
  }
}

// --timings: one latency row per decoded token and the resident memory every 1000 tokens.
TEST_P(LongGenerationCliTest, TimingsFileHasEveryTokenAndTheResidentMemory) {
  const std::string path = ScratchPath(std::string(GetParam().stem) + "-timings.txt");
  const ProcessResult r = Cli({"run", tiny_.kes, "-p", "the cat", "-n", "2100", "--ctx", "64",
                               "--temp", "0", "--ignore-eos", "--timings", path});
  ASSERT_TRUE(Succeeded(r));
  std::FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr) << path;
  char line[256];
  size_t rows = 0, resident = 0;
  long previous = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (line[0] == '#') {
      long tokens = 0, peak = 0, current = 0;
      if (std::sscanf(line, "# resident after %ld tokens: peak %ld KiB, current %ld KiB", &tokens,
                      &peak, &current) == 3) {
        ++resident;
        EXPECT_EQ(tokens, static_cast<long>(resident * 1000));
        EXPECT_GT(peak, 0);
        EXPECT_GE(peak, current);
      }
      continue;
    }
    long token = 0;
    double ms = -1.0;
    ASSERT_EQ(std::sscanf(line, "%ld %lf", &token, &ms), 2) << line;
    EXPECT_EQ(token, previous + 1);
    EXPECT_GE(ms, 0.0);
    previous = token;
    ++rows;
  }
  std::fclose(f);
  EXPECT_EQ(rows, 2099u);  // the first token comes from the prefill
  EXPECT_EQ(resident, 2u);
  std::remove(path.c_str());

  const ProcessResult bad =
      Cli({"run", tiny_.kes, "-p", "the cat", "-n", "2", "--timings", "/nonexistent-dir/t.txt"});
  EXPECT_TRUE(bad.exited && bad.exit_code == 1) << Describe(bad);
  EXPECT_NE(bad.err.find("--timings: cannot create '/nonexistent-dir/t.txt'"), std::string::npos)
      << bad.err;
}

// Rows at each depth, labelled as llama-bench labels them; JSON gives the depth of every result
// and the KV type (the default f16 unless --kv-type says otherwise).
TEST_P(LongGenerationCliTest, BenchAtDepths) {
  const ProcessResult table =
      Cli({"bench", tiny_.kes, "-p", "16", "-n", "8", "-d", "0,40", "-r", "1", "--kv-type", "f32"});
  ASSERT_TRUE(Succeeded(table));
  for (const char* row : {"| pp16  ", "| tg8   ", "| pp16 @ d40 |", "| tg8 @ d40  |"}) {
    EXPECT_EQ(Count(table.out, row), 1u) << row << " missing:\n" << table.out;
  }
  EXPECT_NE(table.out.find(" (f32) at context 56"), std::string::npos) << table.out;

  const ProcessResult json = Cli({"bench", tiny_.kes, "-p", "16", "-n", "8", "--depth", "40,8",
                                  "-t", "1,2", "-r", "1", "--json"});
  ASSERT_TRUE(Succeeded(json));
  EXPECT_EQ(Count(json.out, "\"tokens_per_second\""), 8u) << json.out;
  EXPECT_EQ(Count(json.out, "\"depth\": 40, "), 4u) << json.out;
  EXPECT_EQ(Count(json.out, "\"depth\": 8, "), 4u) << json.out;
  EXPECT_EQ(Count(json.out, "\"test\": \"pp16\", \"depth\": 40"), 2u) << json.out;
  EXPECT_NE(json.out.find("\"kv_type\": \"f16\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"context\": 56"), std::string::npos) << json.out;
}

// --profile adds, per test, a table of the step's time by op: every op of the decode plan has a
// row (the matmuls with their weight type, shape and bytes per second) and the shares add up to
// the whole; it refuses --json, whose document has no place for it.
TEST_P(LongGenerationCliTest, BenchProfileSplitsEachTestByOp) {
  const ProcessResult r = Cli({"bench", tiny_.kes, "-p", "16", "-n", "8", "-r", "2", "-t", "1",
                               "--profile", "--kv-type", "f32"});
  ASSERT_TRUE(Succeeded(r));
  const size_t pp = r.out.find("pp16, 1 thread: time per prompt by op");
  const size_t tg = r.out.find("tg8, 1 thread: time per token by op");
  ASSERT_NE(pp, std::string::npos) << r.out;
  ASSERT_NE(tg, std::string::npos) << r.out;
  const std::string decode = r.out.substr(tg);
  for (const char* op : {"| MatMul ", "| Attention ", "| RmsNorm ", "| Embed ", "| total "}) {
    EXPECT_NE(decode.find(op), std::string::npos) << op << " missing:\n" << decode;
  }
  double share = 0;
  size_t matmuls = 0;
  for (size_t at = decode.find("\n| "); at != std::string::npos; at = decode.find("\n| ", at + 1)) {
    const std::string row = decode.substr(at + 1, decode.find('\n', at + 1) - at - 1);
    std::vector<std::string> cells;
    for (size_t c = 0, bar; (bar = row.find('|', c)) != std::string::npos; c = bar + 1) {
      if (bar > c) cells.push_back(row.substr(c, bar - c));
    }
    if (cells.size() != 5 || cells[0].find("total") != std::string::npos) continue;
    if (cells[0].find("op") != std::string::npos && cells[3].find("share") != std::string::npos) {
      continue;  // the header
    }
    share += std::strtod(cells[3].c_str(), nullptr);
    if (cells[0].find("MatMul") != std::string::npos) {
      ++matmuls;
      // No rate only where a clock too coarse to time the matmul read 0 s: its time is 0.000.
      if (cells[4].find_first_not_of(' ') == std::string::npos) {
        EXPECT_EQ(std::strtod(cells[2].c_str(), nullptr), 0.0) << row;
      } else {
        EXPECT_GT(std::strtod(cells[4].c_str(), nullptr), 0.0) << row;
      }
    }
  }
  EXPECT_GT(matmuls, 0u) << decode;
  EXPECT_NEAR(share, 100.0, 1.0) << decode;

  const ProcessResult json = Cli({"bench", tiny_.kes, "-n", "4", "--profile", "--json"});
  EXPECT_TRUE(json.exited && json.exit_code == 1) << Describe(json);
  EXPECT_NE(json.err.find("--profile"), std::string::npos) << json.err;
}

// A prompt longer than a sliding-window ring's spare slots: going back to the depth after each
// repetition needs the filler prefilled again (Session::Rewind refuses), and the bench still runs.
TEST_P(LongGenerationCliTest, BenchAtDepthWithSmallPrefillSteps) {
  const std::string kes = ScratchPath(std::string(GetParam().stem) + "-prefill4.kes");
  ASSERT_TRUE(Succeeded(Convert({tiny_.gguf, kes, "--prefill-tokens", "4"})));
  const ProcessResult r =
      Cli({"bench", kes, "-p", "100", "-n", "4", "-d", "30", "-r", "2", "--json"});
  EXPECT_TRUE(Succeeded(r));
  EXPECT_EQ(Count(r.out, "\"depth\": 30, "), 2u) << r.out;
  std::remove(kes.c_str());
}

// The bytes `inspect --kv-type` reports ("KV cache:     N B (...) (type)").
long long KvBytes(const std::string& inspect, const std::string& type) {
  const size_t at = inspect.find("KV cache:");
  if (at == std::string::npos) return -1;
  const size_t line_end = inspect.find('\n', at);
  if (inspect.substr(at, line_end - at).find("(" + type + ")") == std::string::npos) return -1;
  return std::strtoll(inspect.c_str() + at + 9, nullptr, 10);
}

// Without --kv-type the figures are the default f16 cache's, beside f32's bytes.
TEST_P(LongGenerationCliTest, InspectReportsTheKvTypesBytes) {
  const ProcessResult f32 = Cli({"inspect", tiny_.kes, "--ctx", "128", "--kv-type", "f32"});
  const ProcessResult f16 = Cli({"inspect", tiny_.kes, "--ctx", "128"});
  ASSERT_TRUE(Succeeded(f32));
  ASSERT_TRUE(Succeeded(f16));
  const long long f32_bytes = KvBytes(f32.out, "f32"), f16_bytes = KvBytes(f16.out, "f16");
  ASSERT_GT(f32_bytes, 0) << f32.out;
  ASSERT_GT(f16_bytes, 0) << f16.out;
  EXPECT_LT(f16_bytes, f32_bytes);
  EXPECT_NE(f16.out.find("% of f32's " + std::to_string(f32_bytes) + " B"), std::string::npos)
      << f16.out;
  EXPECT_EQ(f32.out.find("% of f32's"), std::string::npos) << f32.out;
}

// Without --kv-type the cache is f16 (llama.cpp's default: half of f32's memory), and every
// command's help says so.
TEST_P(LongGenerationCliTest, KvCacheDefaultsToF16) {
  const ProcessResult run =
      Cli({"run", tiny_.kes, "-p", "the cat", "-n", "4", "--ctx", "48", "--temp", "0"});
  ASSERT_TRUE(Succeeded(run));
  EXPECT_NE(run.err.find("context: 48, KV f16"), std::string::npos) << run.err;
  for (const char* command : {"run", "chat", "bench", "perplexity", "inspect"}) {
    const ProcessResult help = Cli({command, "--help"});
    ASSERT_TRUE(Succeeded(help)) << command;
    EXPECT_NE(help.out.find("f32, f16 or int8 (default f16)"), std::string::npos)
        << command << ":\n"
        << help.out;
    EXPECT_EQ(help.out.find("default f32"), std::string::npos) << command << ":\n" << help.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LongGenerationCliTest,
                         ::testing::Values(kTinyGemma3, kTinyQwen2),
                         [](const ::testing::TestParamInfo<TinyFamily>& info) {
                           return ParamName(info.param.stem);
                         });

}  // namespace
}  // namespace kestrel
