#include "tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kestrel {
namespace {

// write(2) straight to the terminal: stderr's stdio buffer may hold a caller's partial line.
void WriteStderr(const char* data, size_t n) {
  while (n > 0) {
    const ssize_t k = write(STDERR_FILENO, data, n);
    if (k <= 0) return;  // a progress line is not worth an error
    data += k;
    n -= static_cast<size_t>(k);
  }
}

}  // namespace

Progress::Progress(const char* what, size_t total,
                   std::chrono::steady_clock::duration redraw_interval)
    : what_(what),
      total_(total),
      redraw_interval_(redraw_interval),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::Update(size_t done) { Update(done, UINT64_MAX); }

void Progress::Update(size_t done, uint64_t bytes) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // The first update draws at once (a line that says the work started), later ones at most
  // every redraw_interval_.
  if (shown_ && now - last_draw_ < redraw_interval_) return;
  last_draw_ = now;
  if (total_ > 0 && done > total_) done = total_;
  char line[256];
  int n = 0;
  if (total_ > 0) {
    n = std::snprintf(line, sizeof(line), "\r%s %zu/%zu (%zu%%)\033[K", what_.c_str(), done, total_,
                      done * 100 / total_);
  } else {
    n = std::snprintf(line, sizeof(line), "\r%s %zu\033[K", what_.c_str(), done);
  }
  if (n > 0 && bytes != UINT64_MAX && static_cast<size_t>(n) < sizeof(line)) {
    // Backs over the erase-to-end that ends the count, then appends the bytes and their rate.
    n -= 3;
    const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
    // At least a millisecond: the first draw comes at once.
    const double seconds = std::max(std::chrono::duration<double>(now - start_).count(), 1e-3);
    const int more = std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n),
                                   ", %.1f MiB, %.1f MiB/s\033[K", mib, mib / seconds);
    n = more > 0 ? n + more : 0;
  }
  if (n <= 0) return;
  WriteStderr(line,
              static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1);
  shown_ = true;
}

void Progress::Clear() {
  if (!shown_) return;
  static const char kErase[] = "\r\033[K";
  WriteStderr(kErase, sizeof(kErase) - 1);
  shown_ = false;
}

}  // namespace kestrel
