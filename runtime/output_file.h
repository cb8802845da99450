// Output that is never lost or cut silently, for kestrel-convert and the kestrel CLI alike:
//  - AtomicOutput: a file written under a unique temporary name beside its final path, synced,
//    and renamed into place only when complete, so concurrent writers never mix their bytes, a
//    failed or interrupted write leaves the previous file as it was, and no temporary is left
//    behind, also on SIGINT, SIGTERM or SIGHUP;
//  - CheckNotInput: refuses an output path that would destroy an input (the same file, or a
//    path inside an input folder) before anything is written;
//  - CloseStdout / WriteStdout: write errors on standard output (a full disk, a closed pipe)
//    become a non-zero exit with the reason instead of exit 0 with a cut output.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/status.h"

namespace kestrel {

class AtomicOutput {
 public:
  // Creates ".NAME.XXXXXX.tmp" in the folder of `path` (mkstemp), with the permissions a newly
  // created file gets (0666 less the umask), and registers it for removal on SIGINT, SIGTERM
  // and SIGHUP (handlers are installed on first use, where the signal is not ignored). Fails
  // at once when `path` is a folder, a device or a FIFO, or its folder cannot be written. A
  // symbolic link is written through (the file it names is replaced). Errors name the file as
  // `name` ("base file 'x.kld'"; default: the path in quotes).
  static Status Create(const std::string& path, std::unique_ptr<AtomicOutput>* out,
                       const std::string& name = "");
  // Removes the temporary unless Commit succeeded.
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // Appends to the temporary; after a failure every later call fails with the same error.
  Status Write(const void* data, size_t n);
  // Flushes, fsyncs and closes the temporary: it is then complete at temp_path(), ready to be
  // checked before Commit puts it in place.
  Status Finish();
  // Finishes if not done yet, renames the temporary over path() and fsyncs the folder.
  Status Commit();

  const std::string& path() const { return path_; }  // the link's target for a link
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicOutput(std::string path, std::string name, std::string temp_path, std::FILE* file,
               int slot);
  Status Fail(const std::string& what, int error);

  std::string path_, name_, temp_path_;
  std::FILE* file_;  // null once finished
  int slot_;         // in the signal handler's list of temporaries; -1: not registered
  Status error_;     // the first failure
  bool committed_ = false;
};

// Refuses to write `output` when it is the same file as `input` (same device and inode) or,
// when `input` is a folder, lies inside it (compared by real path, folder by folder, so links
// and "dir/../dir" do not slip through). `role` names the input in the message ("input", "text
// file (-f)", "model"). Paths that do not exist pass: nothing of them can be lost.
Status CheckNotInput(const std::string& output, const std::string& input, const std::string& role);

// Flushes and closes stdout; the error says why a write to it failed (now or earlier), as
// "cannot write to standard output: <reason>". Called once, as a program ends.
Status CloseStdout();
// Writes to stdout and flushes (streamed tokens); false when this or an earlier write failed.
bool WriteStdout(const void* data, size_t n);

}  // namespace kestrel
