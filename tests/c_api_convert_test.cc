// kes_convert (include/kestrel/kestrel.h) on the tiny Gemma 3 GGUF: the same bytes as
// kestrel-convert for the default, f32 and q8 weights; the same refusals with the same messages
// (an input that is not a model, a missing input, an output that is the input, an unknown
// weights type), each leaving the output as it was and no temporary behind; the progress
// callback; parameter structs from an older header.
#include "kestrel/kestrel.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

const test::TinyModel& Tiny() {
  static test::TinyModel tiny;
  if (tiny.gguf.empty()) {
    const std::string error = test::MakeTinyModel(&tiny);
    EXPECT_EQ(error, "");
  }
  return tiny;
}

// kestrel-convert's output for `args` (INPUT OUTPUT first), its bytes.
std::vector<uint8_t> CliBytes(const std::vector<std::string>& args) {
  const ProcessResult r = test::Convert(args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  return test::ReadBytes(args[1]);
}

// The message kestrel-convert prints for a failure (after "kestrel-convert: error: ").
std::string CliError(const std::vector<std::string>& args) {
  const ProcessResult r = test::Convert(args);
  EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  const std::string prefix = "kestrel-convert: error: ";
  EXPECT_EQ(r.err.compare(0, prefix.size(), prefix), 0) << r.err;
  std::string message = r.err.substr(std::min(prefix.size(), r.err.size()));
  if (!message.empty() && message.back() == '\n') message.pop_back();
  return message;
}

// The names in `folder` that start with `prefix` (AtomicOutput's temporaries are ".NAME.*").
std::vector<std::string> FilesStartingWith(const std::string& folder, const std::string& prefix) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

TEST(CApiConvertTest, WritesTheBytesKestrelConvertWrites) {
  const test::TinyModel& tiny = Tiny();
  const std::string out = test::ScratchPath("c-convert.kes");
  for (const char* weights : {"", "f32", "q8"}) {
    SCOPED_TRACE(std::string("weights '") + weights + "'");
    std::vector<std::string> args = {tiny.gguf, test::ScratchPath("cli-convert.kes")};
    kes_convert_params params = kes_convert_default_params();
    if (*weights != '\0') {
      args.insert(args.end(), {"--weights", weights});
      params.weights = weights;
    }
    const std::vector<uint8_t> expected = CliBytes(args);
    ASSERT_FALSE(expected.empty());
    ASSERT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &params), KES_OK) << kes_last_error();
    EXPECT_TRUE(test::ReadBytes(out) == expected);
    // NULL parameters are the defaults.
    if (*weights == '\0') {
      ASSERT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), nullptr), KES_OK) << kes_last_error();
      EXPECT_TRUE(test::ReadBytes(out) == expected);
    }
  }
  // f32 is what MakeTinyModel's own conversion used.
  kes_convert_params f32 = kes_convert_default_params();
  f32.weights = "f32";
  ASSERT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &f32), KES_OK) << kes_last_error();
  EXPECT_TRUE(test::ReadBytes(out) == tiny.bytes);
}

// Each failure: its code, kestrel-convert's message, `out` left as it was and no temporary.
struct Refusal {
  const char* what;
  std::string input;
  std::string output;
  const char* weights;  // nullptr: the default
  kes_status code;
};

TEST(CApiConvertTest, RefusesAsKestrelConvertDoes) {
  const test::TinyModel& tiny = Tiny();
  const std::string folder = test::ScratchPath("c-convert-refusals");
  ASSERT_EQ(test::RunHostCommand("rm -rf '" + folder + "' && mkdir -p '" + folder + "'"), "");
  const std::string not_model = folder + "/notes.gguf";
  const std::string text = "not a GGUF file\n";
  ASSERT_TRUE(
      test::WriteBytes(not_model, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  // An earlier output that every failed conversion must leave as it was.
  const std::string out = folder + "/out.kes";
  const std::string previous = "previous output";
  ASSERT_TRUE(
      test::WriteBytes(out, reinterpret_cast<const uint8_t*>(previous.data()), previous.size()));
  const std::string input_copy = folder + "/model.gguf";
  ASSERT_EQ(test::RunHostCommand("cp '" + tiny.gguf + "' '" + input_copy + "'"), "");
  const std::vector<uint8_t> input_bytes = test::ReadBytes(input_copy);

  const Refusal refusals[] = {
      {"an input that is not a model", not_model, out, nullptr, KES_BAD_MODEL},
      {"a missing input", folder + "/missing.gguf", out, nullptr, KES_IO_ERROR},
      {"the input as output", input_copy, input_copy, nullptr, KES_INVALID_ARGUMENT},
      {"an unknown weights type", input_copy, out, "q3", KES_INVALID_ARGUMENT},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.what);
    kes_convert_params params = kes_convert_default_params();
    params.weights = r.weights;
    EXPECT_EQ(kes_convert(r.input.c_str(), r.output.c_str(), &params), r.code);
    const std::string message = kes_last_error();
    std::vector<std::string> args = {r.input, r.output};
    if (r.weights != nullptr) args.insert(args.end(), {"--weights", r.weights});
    const std::string cli = CliError(args);
    if (r.weights != nullptr) {
      // The option is named as each interface names it; the rest is the same.
      EXPECT_EQ(message,
                "kes_convert_params.weights: expected keep, f32, f16, bf16, q8, q4, "
                "q4_k_m, q4_k, q5_k or q6_k, found 'q3'");
      EXPECT_EQ(cli,
                "--weights: expected keep, f32, f16, bf16, q8, q4, q4_k_m, q4_k, q5_k or "
                "q6_k, found 'q3'");
    } else {
      EXPECT_EQ(message, cli);
      EXPECT_NE(message, "");
    }
    const std::vector<uint8_t> kept = test::ReadBytes(out);
    EXPECT_EQ(std::string(kept.begin(), kept.end()), previous);
    EXPECT_TRUE(test::ReadBytes(input_copy) == input_bytes);
    EXPECT_EQ(FilesStartingWith(folder, ".").size(), 2u);  // "." and ".." alone
  }
}

TEST(CApiConvertTest, RefusesBadParameters) {
  const test::TinyModel& tiny = Tiny();
  const std::string out = test::ScratchPath("c-convert-params.kes");
  kes_convert_params p = kes_convert_default_params();
  p.prefill_tokens = 0;
  EXPECT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &p), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_last_error(), "kes_convert_params.prefill_tokens: expected 1 to 4096, found 0");
  p = kes_convert_default_params();
  p.reserved0 = 1;
  EXPECT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &p), KES_INVALID_ARGUMENT);
  p = kes_convert_default_params();
  p.struct_size = sizeof(p) + 8;
  EXPECT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &p), KES_INVALID_ARGUMENT);
  EXPECT_EQ(kes_convert(nullptr, out.c_str(), nullptr), KES_INVALID_ARGUMENT);
  EXPECT_STREQ(kes_last_error(), "src is NULL");
  EXPECT_FALSE(test::Exists(out));
}

struct ProgressLog {
  std::vector<size_t> done;
  size_t total = 0;
};

void LogProgress(void* user_data, size_t done, size_t total) {
  auto* log = static_cast<ProgressLog*>(user_data);
  log->done.push_back(done);
  log->total = total;
}

TEST(CApiConvertTest, ReportsProgressPerTensor) {
  const test::TinyModel& tiny = Tiny();
  const std::string out = test::ScratchPath("c-convert-progress.kes");
  ProgressLog log;
  kes_convert_params p = kes_convert_default_params();
  p.weights = "f32";
  p.progress = LogProgress;
  p.progress_user_data = &log;
  ASSERT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &p), KES_OK) << kes_last_error();
  ASSERT_FALSE(log.done.empty());
  EXPECT_GT(log.total, 0u);
  for (size_t i = 0; i < log.done.size(); ++i) EXPECT_EQ(log.done[i], i + 1);
  EXPECT_TRUE(test::ReadBytes(out) == tiny.bytes);
}

// A program built against a header whose struct ended before `progress` (an older one): the
// fields past its struct_size are the defaults, whatever the bytes there hold.
TEST(CApiConvertTest, TakesAnOlderHeadersStruct) {
  const test::TinyModel& tiny = Tiny();
  const std::string out = test::ScratchPath("c-convert-old.kes");
  kes_convert_params p = kes_convert_default_params();
  p.weights = "f32";
  p.struct_size = offsetof(kes_convert_params, progress);
  p.progress = reinterpret_cast<kes_convert_progress>(uintptr_t{1});  // never called
  ASSERT_EQ(kes_convert(tiny.gguf.c_str(), out.c_str(), &p), KES_OK) << kes_last_error();
  EXPECT_TRUE(test::ReadBytes(out) == tiny.bytes);
}

}  // namespace
}  // namespace kestrel
