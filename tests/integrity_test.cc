// Issue 35's integrity checks on the tiny model: the weights checksum kestrel-convert records
// (a flipped weight byte is found by `kestrel inspect --verify` and by an opt-in verify at open;
// a file from before checksums still loads), a model file truncated under a running program
// (SIGBUS turned into a one-line error), a GGUF given to the runtime (named before anything is
// mapped), `--version` of both programs and the progress line on a terminal.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/format.h"
#include "runtime/mapped_file.h"
#include "runtime/model.h"
#include "runtime/weights_checksum.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_model_test.h"
#include "tools/progress.h"

extern char** environ;

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

class IntegrityTest : public TinyModelSuite {
 protected:
  static const fb::Model& Meta() { return *fb::GetModel(tiny_->bytes.data() + kKesPreambleBytes); }
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(IntegrityTest, ConverterRecordsTheChecksumOfTheWeightBlob) {
  const fb::Model& meta = Meta();
  ASSERT_TRUE(meta.weights_xxh3().has_value()) << "the converter recorded no checksum";
  // A straight hash of the blob's bytes, padding included.
  const uint8_t* blob = tiny_->bytes.data() + meta.weights_offset();
  ASSERT_LE(meta.weights_offset() + meta.weights_size(), tiny_->bytes.size());
  EXPECT_EQ(*meta.weights_xxh3(), WeightsChecksum(blob, meta.weights_size()));
}

TEST_F(IntegrityTest, InspectVerifyFindsAFlippedWeightByte) {
  const std::string path = ScratchPath("checksum.kes");
  std::vector<uint8_t> file = tiny_->bytes;
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;
  ProcessResult r = Cli({"inspect", path, "--verify"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "OK")) << Describe(r);

  // One bit of one weight in the middle of the blob: the model still loads and runs (no check
  // looks at weight values), which is why it needs a checksum.
  const fb::Model& meta = Meta();
  file[meta.weights_offset() + meta.weights_size() / 2] ^= 0x10;
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;
  std::unique_ptr<Model> model;
  Status s = Model::Open(path, &model);
  EXPECT_TRUE(s.ok()) << s.message();
  r = Cli({"inspect", path, "--verify"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "kestrel: error: ")) << Describe(r);
  EXPECT_TRUE(Contains(r.err, path)) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "checksum mismatch")) << Describe(r);

  // The opt-in verify at open gives the same error.
  model.reset();
  ModelOpenOptions options;
  options.verify_weights = true;
  s = Model::Open(path, options, &model);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), path) && Contains(s.message(), "checksum mismatch"))
      << s.message();
  EXPECT_EQ(model, nullptr);

  // And the CLI's: KESTREL_VERIFY_WEIGHTS=1 makes every command verify at open.
  ASSERT_EQ(::setenv("KESTREL_VERIFY_WEIGHTS", "1", 1), 0);
  r = Cli({"run", path, "-p", "hi", "-n", "2"});
  ASSERT_EQ(::unsetenv("KESTREL_VERIFY_WEIGHTS"), 0);
  EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "checksum mismatch")) << Describe(r);
  std::remove(path.c_str());
}

// A file written before the checksum existed: the same model without the field.
TEST_F(IntegrityTest, FileWithoutChecksumLoadsAndVerifySaysSo) {
  std::unique_ptr<fb::ModelT> meta(Meta().UnPack());
  meta->weights_xxh3 = flatbuffers::nullopt;
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Model::Pack(builder, meta.get()), fb::ModelIdentifier());
  // Smaller than before, so it still ends before the weights, which stay where they were.
  ASSERT_LE(kKesPreambleBytes + builder.GetSize(), meta->weights_offset);
  std::vector<uint8_t> file(tiny_->bytes.size(), 0);
  std::memcpy(file.data(), tiny_->bytes.data(), 8 + 4);
  const uint32_t fb_size = builder.GetSize();
  std::memcpy(file.data() + 12, &fb_size, 4);
  std::memcpy(file.data() + kKesPreambleBytes, builder.GetBufferPointer(), fb_size);
  std::memcpy(file.data() + meta->weights_offset, tiny_->bytes.data() + meta->weights_offset,
              tiny_->bytes.size() - meta->weights_offset);
  const std::string path = ScratchPath("no-checksum.kes");
  ASSERT_TRUE(WriteBytes(path, file.data(), file.size())) << path;

  std::unique_ptr<Model> model;
  Status s = Model::Open(path, &model);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(model->has_weights_checksum());
  ProcessResult r = Cli({"run", path, "-p", "hi", "-n", "2"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  r = Cli({"inspect", path, "--verify"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, path) && Contains(r.err, "no weights checksum")) << Describe(r);
  std::remove(path.c_str());
}

// The model is mapped in a child process (a death test), its file truncated under it, and its
// weights read: exit code 1 with one line naming the file, not a silent death by SIGBUS.
TEST_F(IntegrityTest, TruncatedUnderTheProgramGivesAnErrorNotSigbus) {
  // "fast" (fork only): "threadsafe" re-executes the test binary, which fails under qemu-user.
  GTEST_FLAG_SET(death_test_style, "fast");
  // Not ScratchPath: the death test's child is another process, which must use the same file.
  const std::string path = TmpPath("integrity-truncated-in-use.kes");
  ASSERT_TRUE(WriteBytes(path, tiny_->bytes.data(), tiny_->bytes.size())) << path;
  const auto touch_after_truncation = [&] {
    InstallMappedFileFaultHandler("kestrel");
    std::unique_ptr<Model> model;
    if (!Model::Open(path, &model).ok()) std::_Exit(3);
    if (::truncate(path.c_str(), 100) != 0) std::_Exit(4);
    const uint8_t* last = model->TensorData(model->meta().tensors()->size() - 1);
    volatile uint8_t byte = *last;  // past the new end of the file: SIGBUS
    (void)byte;
    std::_Exit(0);
  };
  EXPECT_EXIT(touch_after_truncation(), ::testing::ExitedWithCode(1),
              "kestrel: error: the file '.*truncated-in-use.kes' changed or was truncated "
              "while in use");
  std::remove(path.c_str());
}

// A SIGBUS that is not about a mapped model file keeps its default action.
TEST(MappedFileFaultHandler, OtherSigbusKeepsItsDefaultAction) {
  // "fast" (fork only): "threadsafe" re-executes the test binary, which fails under qemu-user.
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(
      {
        InstallMappedFileFaultHandler("kestrel");
        ::raise(SIGBUS);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST_F(IntegrityTest, GgufGivenToTheRuntimeIsNamedBeforeMapping) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(tiny_->gguf, &model);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "is a GGUF file")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "kestrel-convert " + tiny_->gguf)) << s.message();
  const ProcessResult r = Cli({"run", tiny_->gguf, "-p", "hi"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "is a GGUF file, not a .kes file; convert it first")) << Describe(r);
}

TEST(Version, BothProgramsPrintIt) {
  for (const bool convert : {false, true}) {
    const ProcessResult r = convert ? Convert({"--version"}) : Cli({"--version"});
    const std::string program = convert ? "kestrel-convert " : "kestrel ";
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_EQ(r.out.compare(0, program.size(), program), 0) << r.out;
    EXPECT_TRUE(Contains(r.out, ".kes format " + std::to_string(kKesFormatVersion))) << r.out;
    EXPECT_TRUE(Contains(r.out, "SIMD targets ")) << r.out;
    EXPECT_EQ(r.out.back(), '\n');
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "expected one line: " << r.out;
  }
}

// Runs `args` with stderr on a pseudo-terminal; returns what the terminal received.
std::string RunOnTerminal(const std::vector<std::string>& program_args, int* exit_code) {
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return "openpty failed";
  std::vector<std::string> args = EmulatorCommand();
  args.insert(args.end(), program_args.begin(), program_args.end());
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, slave, 2);
  posix_spawn_file_actions_addclose(&actions, master);
  pid_t pid;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(slave);
  std::string seen;
  if (rc == 0) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(master, buf, sizeof(buf));
      if (n > 0)
        seen.append(buf, static_cast<size_t>(n));
      else if (n < 0 && errno == EINTR)
        continue;
      else
        break;  // EIO: every copy of the slave closed
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ::close(master);
  return seen;
}

TEST_F(IntegrityTest, ConversionShowsProgressOnATerminalOnly) {
  const std::string out = ScratchPath("progress.kes");
  int exit_code = -1;
  const std::string seen = RunOnTerminal({KESTREL_CONVERT_BIN, tiny_->gguf, out}, &exit_code);
  EXPECT_EQ(exit_code, 0) << seen;
  EXPECT_TRUE(Contains(seen, "\rconverting tensor 1/")) << seen;
  // The bytes converted and their rate after the count.
  EXPECT_TRUE(Contains(seen, " MiB, ") && Contains(seen, " MiB/s\033[K")) << seen;
  ASSERT_GE(seen.size(), 4u);
  // Erased at the end: the line's last write is the erase.
  EXPECT_EQ(seen.substr(seen.size() - 4), "\r\033[K") << seen;
  // Not on a pipe or file.
  const ProcessResult r = Convert({tiny_->gguf, out});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_FALSE(Contains(r.err, "\r")) << Describe(r);
  EXPECT_FALSE(Contains(r.err, "converting tensor")) << Describe(r);
  std::remove(out.c_str());
}

// `embed -f` counts the encoder's steps on a terminal (Encoder::SetProgress); the embeddings are
// the same bits as one Encode call over all texts without it.
TEST(EmbedProgress, ShowsOnATerminalAndKeepsTheEmbeddings) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &folder), "");
  const std::string kes = ScratchPath("progress-bert.kes");
  ProcessResult r = Convert({folder, kes, "--max-batch", "4"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  const std::string texts_path = ScratchPath("progress-texts.txt");
  std::string texts;
  std::vector<std::string> lines;
  for (int i = 0; i < 23; ++i) {
    lines.push_back("text number " + std::to_string(i) + std::string(i % 5, 'a') + " here");
    texts += lines.back() + "\n";
  }
  ASSERT_TRUE(WriteBytes(texts_path, reinterpret_cast<const uint8_t*>(texts.data()), texts.size()));

  int exit_code = -1;
  const std::string seen =
      RunOnTerminal({KESTREL_CLI_BIN, "embed", kes, "-f", texts_path, "-t", "1"}, &exit_code);
  EXPECT_EQ(exit_code, 0) << seen;
  EXPECT_TRUE(Contains(seen, "\rembedding text 0/23 (0%)")) << seen;
  ASSERT_GE(seen.size(), 4u);
  EXPECT_EQ(seen.substr(seen.size() - 4), "\r\033[K") << seen;

  r = Cli({"embed", kes, "-f", texts_path, "-t", "1", "--json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_FALSE(Contains(r.err, "\r")) << Describe(r);
  std::vector<float> printed;
  const size_t begin = r.out.find("[[") != std::string::npos ? r.out.find("[[") : r.out.find("[\n");
  const size_t end = r.out.find("token_counts");
  ASSERT_NE(end, std::string::npos) << r.out;
  for (const char* p = r.out.c_str() + begin; p < r.out.c_str() + end; ++p) {
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      char* after = nullptr;
      printed.push_back(std::strtof(p, &after));
      p = after - 1;
    }
  }
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes, &model).ok());
  EncoderOptions options;
  options.n_threads = 1;
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model, options, &encoder).ok());
  std::vector<std::vector<int32_t>> ids(lines.size());
  std::vector<const int32_t*> pointers;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_TRUE(encoder->Tokenize(lines[i], &ids[i]).ok());
    pointers.push_back(ids[i].data());
    lengths.push_back(ids[i].size());
  }
  std::vector<float> expected(lines.size() * encoder->embedding_dim());
  ASSERT_TRUE(encoder->Encode(pointers.data(), lengths.data(), lines.size(), expected.data()).ok());
  EXPECT_EQ(printed, expected);
  std::remove(kes.c_str());
  std::remove(texts_path.c_str());
}

TEST(Progress, WritesOnlyToATerminalAndErasesItsLine) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  const int saved = ::dup(2);
  ASSERT_GE(saved, 0);
  ::dup2(slave, 2);
  {
    // An hour between draws, not the default 100 ms: on a loaded machine the thread may be
    // preempted that long between the two updates, and the second would draw too.
    Progress progress("embedding text", 40, std::chrono::hours(1));
    progress.Update(1);  // the first update draws at once
    progress.Update(2);  // later ones only once the interval has passed
  }
  ::dup2(saved, 2);
  ::close(saved);
  ::close(slave);
  // Every write the pty holds, not one read: a read may return the first write alone (seen
  // under qemu-arm). With the slave closed, read ends with 0 or EIO once it is drained.
  std::string written;
  char buf[256];
  for (ssize_t n; (n = ::read(master, buf, sizeof(buf))) > 0;) {
    written.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  EXPECT_EQ(written, "\rembedding text 1/40 (2%)\033[K\r\033[K");
}

}  // namespace
}  // namespace kestrel
