// Nothing lost when kestrel-convert and the kestrel CLI write files (issue 35, points 1-5):
// concurrent conversions to one path leave one whole model and no temporary; an input given as
// the output (the same file, or a path inside the checkpoint folder) is refused before anything
// is written; a KL-divergence base is never written over the text, the model or a file that is
// not a base; a failed write to stdout is an error exit; SIGINT/SIGTERM leave no temporary.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

// A child started without waiting for it, stdout and stderr to files (stdout to `out_path`,
// which may be /dev/full), stdin empty.
struct Child {
  pid_t pid = -1;
  std::string out_path, err_path;
};

Child Start(const std::vector<std::string>& program_args, const std::string& out_path,
            const std::string& err_path) {
  Child child{-1, out_path, err_path};
  if (!StartProcess(program_args, "/dev/null", out_path, err_path, &child.pid, nullptr)) {
    child.pid = -1;
  }
  return child;
}

ProcessResult Wait(const Child& child) {
  ProcessResult r;
  if (child.pid < 0) {
    r.err = "not started";
    return r;
  }
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  r.exited = WIFEXITED(status);
  r.exit_code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (child.out_path != "/dev/full") {
    const std::vector<uint8_t> out = ReadBytes(child.out_path);
    r.out.assign(out.begin(), out.end());
  }
  const std::vector<uint8_t> err = ReadBytes(child.err_path);
  r.err.assign(err.begin(), err.end());
  return r;
}

// Runs a program with stdout going to `out_path`.
ProcessResult RunTo(const std::vector<std::string>& args, const std::string& out_path) {
  static int counter = 0;
  return Wait(Start(args, out_path, ScratchPath("err" + std::to_string(counter++))));
}

// A fresh empty folder in the scratch area.
std::string MakeFolder(const std::string& name) {
  const std::string folder = ScratchPath(name);
  RunHostCommand("rm -rf '" + folder + "'");
  ::mkdir(folder.c_str(), 0755);
  return folder;
}

std::vector<std::string> FolderEntries(const std::string& folder) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool CopyFile(const std::string& from, const std::string& to) {
  const std::vector<uint8_t> bytes = ReadBytes(from);
  return !bytes.empty() && WriteBytes(to, bytes.data(), bytes.size());
}

// Point 1: 20 conversions of two different models to one path at the same time. Each writes a
// temporary of its own, so the file is always one of the two models whole, bit for bit as its
// conversion alone, and no temporary is left in the folder.
TEST(OutputFiles, ConcurrentConversionsToOnePathLeaveOneWholeModel) {
  const std::string folder = MakeFolder("concurrent");
  const std::string gguf[2] = {folder + "/a.gguf", folder + "/b.gguf"};
  ASSERT_EQ(MakeTinyGguf(gguf[0], 1, kTinyGemma3), "");
  ASSERT_EQ(MakeTinyGguf(gguf[1], 2, kTinyLlama), "");
  // The references, converted alone, in another folder (the file records only the input's name).
  const std::string ref_folder = MakeFolder("concurrent-ref");
  std::vector<uint8_t> reference[2];
  for (int m = 0; m < 2; ++m) {
    const std::string kes = ref_folder + "/ref" + std::to_string(m) + ".kes";
    const ProcessResult r = Convert({gguf[m], kes, "--weights", "f32"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    reference[m] = ReadBytes(kes);
  }
  ASSERT_NE(reference[0], reference[1]);

  const std::string out = folder + "/same.kes";
  for (int round = 0; round < 2; ++round) {
    std::vector<Child> children;
    for (int i = 0; i < 20; ++i) {
      const std::string log = ScratchPath("concurrent" + std::to_string(i));
      children.push_back(Start({KESTREL_CONVERT_BIN, gguf[i % 2], out, "--weights", "f32"},
                               log + ".out", log + ".err"));
    }
    for (const Child& child : children) {
      const ProcessResult r = Wait(child);
      EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    }
    const std::vector<uint8_t> bytes = ReadBytes(out);
    EXPECT_TRUE(bytes == reference[0] || bytes == reference[1])
        << "round " << round << ": " << bytes.size() << " bytes, neither model's conversion";
    EXPECT_EQ(FolderEntries(folder), (std::vector<std::string>{"a.gguf", "b.gguf", "same.kes"}));
  }
  // The permissions a created file gets: 0666 less the umask (mkstemp alone gives 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  RunHostCommand("rm -rf '" + folder + "' '" + ref_folder + "'");
}

// Point 2: the input file given as the output, also spelled another way, and a path inside the
// input checkpoint folder, are refused before anything is written.
TEST(OutputFiles, InputAsOutputIsRefused) {
  const std::string folder = MakeFolder("input-as-output");
  const std::string gguf = folder + "/x.gguf";
  ASSERT_EQ(MakeTinyGguf(gguf, 1, kTinyGemma3), "");
  const std::vector<uint8_t> original = ReadBytes(gguf);
  for (const std::string& output :
       {gguf, folder + "/../" + folder.substr(folder.rfind('/') + 1) + "/./x.gguf"}) {
    const ProcessResult r = Convert({gguf, output});
    EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    EXPECT_NE(r.err.find("it is the input"), std::string::npos) << r.err;
    EXPECT_TRUE(ReadBytes(gguf) == original);
    EXPECT_EQ(FolderEntries(folder), std::vector<std::string>{"x.gguf"});
  }

  // A copy of the tiny BERT checkpoint: the shared one must survive a failing test.
  std::string bert;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &bert), "");
  const std::string checkpoint = MakeFolder("input-as-output-bert");
  ASSERT_EQ(RunHostCommand("cp -R '" + bert + "/.' '" + checkpoint + "'"), "");
  const std::vector<std::string> files = FolderEntries(checkpoint);
  const std::vector<uint8_t> weights = ReadBytes(checkpoint + "/model.safetensors");
  for (const std::string& output :
       {checkpoint + "/model.safetensors", checkpoint + "/model.kes", checkpoint + "/./new.kes"}) {
    const ProcessResult r = Convert({checkpoint, output});
    EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    EXPECT_NE(r.err.find("inside the input folder"), std::string::npos) << r.err;
    EXPECT_TRUE(ReadBytes(checkpoint + "/model.safetensors") == weights);
    EXPECT_EQ(FolderEntries(checkpoint), files);
  }
  RunHostCommand("rm -rf '" + folder + "' '" + checkpoint + "'");
}

// Point 3: a base run (--kl-divergence-base without --kl-divergence) refuses to write over the
// text, the model or a file that is not a base file, says that it writes a base, and writes it
// whole, over an older base file too.
TEST(OutputFiles, KlDivergenceBaseNeverOverwritesTextOrModel) {
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  const std::string folder = MakeFolder("kld-base");
  const std::string model = folder + "/model.kes", text = folder + "/text.txt";
  ASSERT_TRUE(CopyFile(tiny.kes, model));
  std::string words;
  for (int i = 0; i < 60; ++i) words += i % 3 ? "the cat sat on the mat. " : "hello world ";
  ASSERT_TRUE(WriteBytes(text, reinterpret_cast<const uint8_t*>(words.data()), words.size()));
  const std::vector<uint8_t> model_bytes = ReadBytes(model);
  const std::vector<uint8_t> text_bytes = ReadBytes(text);
  const std::string other = folder + "/notes.txt";
  ASSERT_TRUE(WriteBytes(other, text_bytes.data(), 100));

  for (const std::string& target : {text, model, other}) {
    const ProcessResult r =
        Cli({"perplexity", model, "-f", text, "--ctx", "16", "--kl-divergence-base", target});
    EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    EXPECT_NE(r.err.find("--kl-divergence-base"), std::string::npos) << r.err;
    EXPECT_TRUE(ReadBytes(model) == model_bytes);
    EXPECT_TRUE(ReadBytes(text) == text_bytes);
    EXPECT_EQ(ReadBytes(other).size(), 100u);
  }
  const ProcessResult refused =
      Cli({"perplexity", model, "-f", text, "--ctx", "16", "--kl-divergence-base", other});
  EXPECT_NE(refused.err.find("add --kl-divergence"), std::string::npos) << refused.err;

  const std::string base = folder + "/base.kld";
  for (int run = 0; run < 2; ++run) {  // the second replaces the first's base file
    const ProcessResult r =
        Cli({"perplexity", model, "-f", text, "--ctx", "16", "--kl-divergence-base", base});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_NE(r.err.find("writing the KL-divergence base to '" + base + "'"), std::string::npos)
        << r.err;
    EXPECT_EQ(FolderEntries(folder),
              (std::vector<std::string>{"base.kld", "model.kes", "notes.txt", "text.txt"}));
  }
  const ProcessResult compared = Cli({"perplexity", model, "-f", text, "--ctx", "16",
                                      "--kl-divergence-base", base, "--kl-divergence"});
  EXPECT_TRUE(compared.exited && compared.exit_code == 0) << Describe(compared);
  RunHostCommand("rm -rf '" + folder + "'");
}

// Point 4: stdout on a full device: every command that prints exits 1 with the reason, as does
// kestrel-convert (which still writes its model).
TEST(OutputFiles, WriteErrorsOnStdoutFailTheCommand) {
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  std::string bert;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &bert), "");
  const std::string bert_kes = ScratchPath("full-bert.kes");
  const ProcessResult converted = Convert({bert, bert_kes, "--weights", "f32"});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << Describe(converted);
  const std::string texts = ScratchPath("full-texts.txt");
  const std::string lines = "hello world\nthe cat sat on the mat\n";
  ASSERT_TRUE(WriteBytes(texts, reinterpret_cast<const uint8_t*>(lines.data()), lines.size()));

  const std::vector<std::vector<std::string>> commands = {
      {KESTREL_CLI_BIN, "tokenize", tiny.kes, "-p", "hello world"},
      {KESTREL_CLI_BIN, "inspect", tiny.kes},
      {KESTREL_CLI_BIN, "embed", bert_kes, "-f", texts, "--json"},
      {KESTREL_CLI_BIN, "run", tiny.kes, "-p", "hello", "-n", "4"},
      {KESTREL_CONVERT_BIN, tiny.gguf, ScratchPath("full.kes"), "--weights", "f32"}};
  for (const std::vector<std::string>& command : commands) {
    const ProcessResult r = RunTo(command, "/dev/full");
    EXPECT_TRUE(r.exited && r.exit_code == 1) << command[1] << ": " << Describe(r);
    EXPECT_NE(r.err.find("cannot write to standard output: No space left on device"),
              std::string::npos)
        << command[1] << ": " << r.err;
  }
  std::remove(bert_kes.c_str());
  std::remove(texts.c_str());
  std::remove(ScratchPath("full.kes").c_str());
}

// Point 4, other output files: --timings is created before generating, so a folder fails at
// once (no prompt echoed); a device is refused, never replaced; a link is written through.
TEST(OutputFiles, TimingsFileIsCheckedBeforeGenerating) {
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  const std::string folder = MakeFolder("timings");
  const std::vector<std::string> run = {"run", tiny.kes, "-p", "hello", "-n", "2", "--timings"};
  for (const std::string& target : {folder, std::string("/dev/full")}) {
    std::vector<std::string> args = run;
    args.push_back(target);
    const ProcessResult r = Cli(args);
    EXPECT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
    EXPECT_EQ(r.out, "") << target;
    EXPECT_NE(r.err.find("--timings: cannot write '" + target + "'"), std::string::npos) << r.err;
  }
  struct stat st;
  EXPECT_TRUE(::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));

  const std::string real = folder + "/real.txt", link = folder + "/link.txt";
  ASSERT_TRUE(WriteBytes(real, reinterpret_cast<const uint8_t*>("old"), 3));
  ASSERT_EQ(::symlink("real.txt", link.c_str()), 0);
  std::vector<std::string> args = run;
  args.push_back(link);
  const ProcessResult r = Cli(args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_TRUE(::lstat(link.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) << "the link was replaced";
  const std::vector<uint8_t> timings = ReadBytes(real);
  EXPECT_EQ(std::string(timings.begin(), timings.end()).rfind("# token latency_ms", 0), 0u);
  EXPECT_EQ(FolderEntries(folder), (std::vector<std::string>{"link.txt", "real.txt"}));

  // Generation ended by a broken stdout leaves no temporary of the timings file.
  std::vector<std::string> full = {KESTREL_CLI_BIN};
  full.insert(full.end(), run.begin(), run.end());
  full.push_back(folder + "/t.txt");
  const ProcessResult broken = RunTo(full, "/dev/full");
  EXPECT_TRUE(broken.exited && broken.exit_code == 1) << Describe(broken);
  EXPECT_EQ(FolderEntries(folder), (std::vector<std::string>{"link.txt", "real.txt"}));
  RunHostCommand("rm -rf '" + folder + "'");
}

// Point 5: SIGINT or SIGTERM while converting removes the temporary, and the exit status is the
// signal's. The conversion waits on a FIFO given as calibration texts, which it opens once its
// temporary exists: the signal always comes mid-conversion.
TEST(OutputFiles, SignalsRemoveTheTemporary) {
  std::string bert;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &bert), "");
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string folder = MakeFolder("signal-" + std::to_string(sig));
    const std::string fifo = folder + "/calibration.fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string log = ScratchPath("signal" + std::to_string(sig));
    const Child child = Start(
        {KESTREL_CONVERT_BIN, bert, folder + "/out.kes", "--weights", "q8", "--calibration", fifo},
        log + ".out", log + ".err");
    ASSERT_GE(child.pid, 0);
    // Waits for the temporary to appear beside the FIFO: at most 120 s, room for a slow, loaded
    // machine to start kestrel-convert and read the model.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    bool appeared = FolderEntries(folder).size() > 1;
    while (!appeared && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      appeared = FolderEntries(folder).size() > 1;
    }
    EXPECT_TRUE(appeared) << "no temporary appeared in " << folder;
    ::kill(child.pid, sig);
    const ProcessResult r = Wait(child);
    EXPECT_FALSE(r.exited) << Describe(r);
    EXPECT_EQ(r.signal, sig) << Describe(r);
    EXPECT_EQ(FolderEntries(folder), std::vector<std::string>{"calibration.fifo"});
    RunHostCommand("rm -rf '" + folder + "'");
  }
}

}  // namespace
}  // namespace kestrel
