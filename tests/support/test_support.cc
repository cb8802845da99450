#include "tests/support/test_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ops/block_layout.h"
#include "ops/embed.h"
#include "runtime/format.h"
#include "runtime/model.h"
#include "runtime/session.h"

extern char** environ;

namespace kestrel::test {

std::string TmpPath(const std::string& name) {
  const std::string dir = std::string(KESTREL_TEST_TMP) + "/scratch";
  ::mkdir(KESTREL_TEST_TMP, 0755);
  ::mkdir(dir.c_str(), 0755);
  return dir + "/" + name;
}

std::string ScratchPath(const std::string& name) {
  return TmpPath(std::to_string(::getpid()) + "-" + name);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

bool WriteBytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return out.good();
}

bool IsFresh(const std::string& path, const std::vector<std::string>& inputs) {
  struct stat out;
  if (::stat(path.c_str(), &out) != 0) return false;
  for (const std::string& input : inputs) {
    struct stat in;
    if (::stat(input.c_str(), &in) != 0) return false;
    if (in.st_mtim.tv_sec > out.st_mtim.tv_sec ||
        (in.st_mtim.tv_sec == out.st_mtim.tv_sec && in.st_mtim.tv_nsec > out.st_mtim.tv_nsec)) {
      return false;
    }
  }
  return true;
}

double LargestLogitError(const float* ours, const float* reference, size_t rows, size_t vocab,
                         size_t* worst_row) {
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* a = ours + r * vocab;
    const float* b = reference + r * vocab;
    float lo = b[0], hi = b[0];
    double largest = 0;
    for (size_t i = 0; i < vocab; ++i) {
      lo = std::min(lo, b[i]);
      hi = std::max(hi, b[i]);
      largest = std::max(largest, std::fabs(double(a[i]) - double(b[i])));
    }
    const double e = largest / (double(hi) - double(lo));
    // NaN logits must fail: compare so that a NaN error becomes the worst.
    if (!(e <= worst)) {
      worst = e;
      if (worst_row) *worst_row = r;
    }
  }
  return worst;
}

std::string Describe(const ProcessResult& r) {
  std::string s =
      r.exited ? "exit code " + std::to_string(r.exit_code) : "signal " + std::to_string(r.signal);
  return s + "\n--- stdout:\n" + r.out.substr(0, 2000) + "\n--- stderr:\n" + r.err.substr(0, 4000);
}

std::vector<std::string> EmulatorCommand() {
  // CMake passes the emulator list with '|' between its items (';' would split the define).
  std::vector<std::string> items;
  const std::string list = KESTREL_EMULATOR;
  size_t begin = 0;
  while (begin < list.size()) {
    size_t end = list.find('|', begin);
    if (end == std::string::npos) end = list.size();
    if (end > begin) items.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

bool StartProcess(const std::vector<std::string>& program_args, const std::string& in_path,
                  const std::string& out_path, const std::string& err_path, pid_t* pid,
                  std::string* error) {
  std::vector<std::string> args = EmulatorCommand();
  args.insert(args.end(), program_args.begin(), program_args.end());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // posix_spawnp: the emulator is named without a path.
  const int rc = posix_spawnp(pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0 && error != nullptr) *error = "cannot start " + args[0] + ": " + std::strerror(rc);
  return rc == 0;
}

ProcessResult RunProcess(const std::vector<std::string>& program_args, const std::string& input) {
  static int counter = 0;
  const std::string base = ScratchPath("proc" + std::to_string(counter++));
  const std::string out_path = base + ".out", err_path = base + ".err", in_path = base + ".in";
  ProcessResult r;
  if (!WriteBytes(in_path, reinterpret_cast<const uint8_t*>(input.data()), input.size())) {
    r.err = "cannot write " + in_path;
    return r;
  }
  pid_t pid;
  if (!StartProcess(program_args, in_path, out_path, err_path, &pid, &r.err)) return r;
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exited = WIFEXITED(status);
  r.exit_code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const std::vector<uint8_t> out = ReadBytes(out_path), err = ReadBytes(err_path);
  r.out.assign(out.begin(), out.end());
  r.err.assign(err.begin(), err.end());
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  std::remove(in_path.c_str());
  return r;
}

ProcessResult Cli(std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin(), KESTREL_CLI_BIN);
  return RunProcess(args, input);
}

ProcessResult Convert(std::vector<std::string> args) {
  args.insert(args.begin(), KESTREL_CONVERT_BIN);
  return RunProcess(args);
}

std::string RunHostCommand(const std::string& command) {
  // Under qemu-user the shell and Python it starts are host programs and run natively.
  const int rc = std::system(command.c_str());
  return rc == 0 ? std::string() : "failed (status " + std::to_string(rc) + "): " + command;
}

std::string MakeTinyGguf(const std::string& out, int seed, const TinyFamily& family) {
  return RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/" +
                        family.make_script + " " + out + " --seed " + std::to_string(seed) + " " +
                        family.make_args);
}
std::string MakeTinyWhisper(const std::string& folder, const std::string& flags) {
  return RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                        "/tests/py/make_tiny_whisper.py '" + folder + "' " + flags);
}
std::string MakeTinyBert(const std::string& stem, const std::string& flags, std::string* folder) {
  *folder = TmpPath(stem);
  ::mkdir(folder->substr(0, folder->rfind('/')).c_str(), 0755);  // a stem may name a subfolder
  const std::string script = std::string(KESTREL_SOURCE_DIR) + "/tests/py/make_tiny_bert.py";
  // XLM-R checkpoints take their tokenizer from this one.
  const std::string tokenizer_script =
      std::string(KESTREL_SOURCE_DIR) + "/tests/py/make_unigram_tokenizer.py";
  const std::string lock_path = *folder + ".lock";
  const int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    return "cannot lock " + lock_path;
  }
  std::string error;
  if (!IsFresh(*folder + "/model.safetensors", {script, tokenizer_script})) {
    error = RunHostCommand("rm -rf '" + *folder + "' && " + KESTREL_PYTHON + " " + script + " '" +
                           *folder + "' " + flags + " > /dev/null");
  }
  ::close(lock);  // releases the lock
  return error;
}

std::string MakeTinyModel(TinyModel* t, const TinyFamily& family) {
  const std::string script = std::string(KESTREL_SOURCE_DIR) + "/tests/py/" + family.make_script;
  const std::string stem = family.stem;
  t->gguf = TmpPath(stem + ".gguf");
  t->kes = TmpPath(stem + ".kes");
  // Written under a name of our own, then renamed: parallel test processes never see half a file.
  if (!IsFresh(t->gguf, {script})) {
    const std::string tmp = ScratchPath(stem + ".gguf");
    const std::string error = MakeTinyGguf(tmp, 1, family);
    if (!error.empty()) return error;
    if (std::rename(tmp.c_str(), t->gguf.c_str()) != 0) return "cannot rename " + tmp;
  }
  if (!IsFresh(t->kes, {t->gguf, KESTREL_CONVERT_BIN})) {
    const std::string tmp = ScratchPath(stem + ".kes");
    // f32: the oracles' exact weights (the file mixes quantized types, which keep would keep).
    const ProcessResult r = Convert({t->gguf, tmp, "--weights", "f32"});
    if (!r.exited || r.exit_code != 0) return "kestrel-convert failed: " + Describe(r);
    if (std::rename(tmp.c_str(), t->kes.c_str()) != 0) return "cannot rename " + tmp;
  }
  t->bytes = ReadBytes(t->kes);
  if (t->bytes.size() < kKesPreambleBytes) return "cannot read " + t->kes;
  return std::string();
}

LookupFn QuantizedLookup(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::Q8_0: return ops::EmbedQ8;
    case fb::DType::Q4_0: return ops::EmbedQ4;
#define KESTREL_LOOKUP(T) \
  case fb::DType::T: return ops::Embed##T;
      KESTREL_BLOCK_TYPES(KESTREL_LOOKUP)
#undef KESTREL_LOOKUP
    default: return nullptr;
  }
}

std::string ScoreAll(const Model& model, const std::vector<int32_t>& tokens, size_t threads,
                     size_t context, std::vector<float>* logits) {
  SessionOptions options;
  options.context_length = context;
  options.n_threads = threads;
  options.kv.type = ops::KvType::kF32;  // the oracles' precision, not the default f16
  std::unique_ptr<Session> session;
  Status s = Session::Create(model, options, &session);
  if (!s.ok()) return s.message();
  logits->assign(tokens.size() * model.vocab_size(), 0.0f);
  s = session->Score(tokens.data(), tokens.size(), logits->data());
  return s.ok() ? "" : s.message();
}

}  // namespace kestrel::test
