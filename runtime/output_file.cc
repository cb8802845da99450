#include "runtime/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kestrel {
namespace {

// The temporaries the signal handler removes: fixed buffers, since a handler may neither
// allocate nor take locks. A slot's path is complete before its flag is raised, and the flag is
// lowered before the slot is reused, so the handler never reads a path being written.
constexpr int kSlots = 8;
char g_temp_paths[kSlots][PATH_MAX];
volatile sig_atomic_t g_temp_used[kSlots];
std::mutex g_slots_mutex;  // between threads registering temporaries
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void RemoveTemporaries() {
  for (int i = 0; i < kSlots; ++i) {
    if (g_temp_used[i]) ::unlink(g_temp_paths[i]);
  }
}

extern "C" void RemoveTemporariesAndReraise(int sig) {
  RemoveTemporaries();
  // The signal stays blocked until the handler returns; it is then delivered again with its
  // default action, so the exit status is the signal's, as without the handler.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Once, for the signals still at their default action: one ignored (nohup, a background job) or
// handled by the program stays as it is. And at exit: std::exit skips the destructors of the
// AtomicOutputs still alive (the CLI exits so on a broken stdout while generating).
void InstallHandlers() {
  std::atexit(RemoveTemporaries);
  struct sigaction action = {};
  action.sa_handler = RemoveTemporariesAndReraise;
  sigemptyset(&action.sa_mask);
  for (int sig : kCleanupSignals) sigaddset(&action.sa_mask, sig);
  for (int sig : kCleanupSignals) {
    struct sigaction old = {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL &&
        !(old.sa_flags & SA_SIGINFO)) {
      ::sigaction(sig, &action, nullptr);
    }
  }
}

// Takes a slot for a temporary about to be created from `path`, mkstemp's template, which the
// caller then completes in place (TemporarySlotPath): a signal that comes between the file's
// creation and its registration would otherwise leave it behind. Until then the handler unlinks
// a name that does not exist. -1 when the path is too long for a slot or all are taken: the
// file is then still written safely, only not removed on a signal.
int RegisterTemporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  static const bool installed = (InstallHandlers(), true);
  (void)installed;
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    if (g_temp_used[i]) continue;
    std::memcpy(g_temp_paths[i], path.c_str(), path.size() + 1);
    g_temp_used[i] = 1;
    return i;
  }
  return -1;
}

char* TemporarySlotPath(int slot) { return g_temp_paths[slot]; }

void UnregisterTemporary(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_temp_used[slot] = 0;
}

// The folder holding `path` ("." for a bare name) and the name in it.
void SplitPath(const std::string& path, std::string* folder, std::string* name) {
  const size_t slash = path.find_last_of('/');
  *folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  *name = slash == std::string::npos ? path : path.substr(slash + 1);
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The first reason a write to stdout failed (0: none yet).
int g_stdout_errno = 0;

}  // namespace

AtomicOutput::AtomicOutput(std::string path, std::string name, std::string temp_path,
                           std::FILE* file, int slot)
    : path_(std::move(path)),
      name_(std::move(name)),
      temp_path_(std::move(temp_path)),
      file_(file),
      slot_(slot) {}

AtomicOutput::~AtomicOutput() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) ::unlink(temp_path_.c_str());
  UnregisterTemporary(slot_);
}

Status AtomicOutput::Create(const std::string& path, std::unique_ptr<AtomicOutput>* out,
                            const std::string& name) {
  const std::string quoted = name.empty() ? "'" + path + "'" : name;
  // A link is written through, as fopen would: the file it names is replaced, not the link.
  std::string target = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  }
  std::string folder, base;
  SplitPath(target, &folder, &base);
  const bool exists = ::stat(target.c_str(), &st) == 0;
  KES_CHECK_OR_RETURN(!base.empty() && !(exists && S_ISDIR(st.st_mode)),
                      "cannot write " + quoted + ": expected a file name, found a folder");
  // A device or FIFO cannot be replaced by a rename (and must not be: /dev/null).
  KES_CHECK_OR_RETURN(!exists || S_ISREG(st.st_mode),
                      "cannot write " + quoted +
                          ": expected a regular file, found a device, FIFO "
                          "or socket");
  // The name is shortened so the temporary's stays within NAME_MAX (255).
  std::string temp = folder + "/." + base.substr(0, 200) + ".XXXXXX.tmp";
  const int slot = RegisterTemporary(temp);
  char* name_in_place = slot >= 0 ? TemporarySlotPath(slot) : temp.data();
  const int fd = ::mkstemps(name_in_place, 4);
  if (fd < 0) {
    const int error = errno;
    UnregisterTemporary(slot);
    return Status::Error("cannot create " + quoted + ": " + std::strerror(error));
  }
  temp = name_in_place;
  // mkstemp creates the file 0600; a file the program creates normally gets 0666 less the
  // umask, which umask() can only read by setting it.
  {
    std::lock_guard<std::mutex> lock(g_slots_mutex);
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
  }
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    const int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    UnregisterTemporary(slot);
    return Status::Error("cannot write " + quoted + ": " + std::strerror(error));
  }
  out->reset(new AtomicOutput(target, quoted, temp, file, slot));
  return OkStatus();
}

Status AtomicOutput::Fail(const std::string& what, int error) {
  if (error_.ok()) {
    error_ = Status::Error("cannot " + what + " " + name_ + ": " + std::strerror(error));
  }
  return error_;
}

Status AtomicOutput::Write(const void* data, size_t n) {
  KES_RETURN_IF_ERROR(error_);
  KES_CHECK_OR_RETURN(file_ != nullptr, "cannot write " + name_ + ": already finished");
  if (n == 0 || std::fwrite(data, 1, n, file_) == n) return OkStatus();
  return Fail("write", errno);
}

Status AtomicOutput::Finish() {
  KES_RETURN_IF_ERROR(error_);
  if (file_ == nullptr) return OkStatus();
  int error = 0;
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) error = errno;
  if (std::fclose(file_) != 0 && error == 0) error = errno;
  file_ = nullptr;
  return error == 0 ? OkStatus() : Fail("write", error);
}

Status AtomicOutput::Commit() {
  KES_RETURN_IF_ERROR(Finish());
  KES_CHECK_OR_RETURN(!committed_, name_ + " is already in place");
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) return Fail("write", errno);
  committed_ = true;
  UnregisterTemporary(slot_);
  slot_ = -1;
  // The rename is durable only once the folder is synced. Some file systems cannot sync a
  // folder (EINVAL): the file is in place all the same.
  std::string folder, name;
  SplitPath(path_, &folder, &name);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir < 0) return OkStatus();
  const bool synced = ::fsync(dir) == 0 || errno == EINVAL || errno == EROFS;
  const int error = errno;
  ::close(dir);
  return synced ? OkStatus() : Fail("sync the folder of", error);
}

Status CheckNotInput(const std::string& output, const std::string& input, const std::string& role) {
  struct stat in, out;
  if (::stat(input.c_str(), &in) != 0) return OkStatus();
  if (::stat(output.c_str(), &out) == 0 && SameFile(in, out)) {
    return Status::Error("cannot write '" + output + "': it is the " + role + " '" + input +
                         "' itself (the same file); give another output path");
  }
  if (!S_ISDIR(in.st_mode)) return OkStatus();
  std::string folder, name;
  SplitPath(output, &folder, &name);
  char* real = ::realpath(folder.c_str(), nullptr);
  if (real == nullptr) return OkStatus();  // no such folder: nothing can be written there
  std::string dir = real;
  std::free(real);
  for (;;) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && SameFile(in, st)) {
      return Status::Error("cannot write '" + output + "': it lies inside the " + role +
                           " folder '" + input +
                           "', whose files it could replace; give a path "
                           "outside that folder");
    }
    if (dir == "/") return OkStatus();
    const size_t slash = dir.find_last_of('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

Status CloseStdout() {
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed && g_stdout_errno == 0) g_stdout_errno = errno;
  const bool failed = !flushed || std::ferror(stdout);
  if (std::fclose(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno;
  if (!failed && g_stdout_errno == 0) return OkStatus();
  return Status::Error(
      std::string("cannot write to standard output: ") +
      (g_stdout_errno != 0 ? std::strerror(g_stdout_errno) : "an earlier write failed"));
}

bool WriteStdout(const void* data, size_t n) {
  if (g_stdout_errno != 0) return false;
  const bool ok = (n == 0 || std::fwrite(data, 1, n, stdout) == n) && std::fflush(stdout) == 0;
  if (!ok) g_stdout_errno = errno != 0 ? errno : EIO;
  return ok;
}

}  // namespace kestrel
