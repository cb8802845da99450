// A one-line progress counter on stderr for long work ("converting tensor 123/272"), redrawn in
// place with '\r' and erased when done. It writes only when stderr is a terminal: redirected
// output and logs stay free of carriage returns. Not thread-safe: one thread updates it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel {

class Progress {
 public:
  // what: the words before the count ("converting tensor"); total: the count when done, or 0
  // when unknown (the line then shows the count alone); redraw_interval: the least time between
  // two draws (a test makes it long, so that its output does not depend on the scheduler).
  Progress(const char* what, size_t total,
           std::chrono::steady_clock::duration redraw_interval = std::chrono::milliseconds(100));
  ~Progress() { Clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` items of `total` finished. The first call draws the line; later ones redraw it at
  // most every redraw_interval, so calling it per item is cheap.
  void Update(size_t done);
  // The same with the bytes those items came to, shown with their rate since construction
  // ("converting tensor 12/272 (4%), 96.0 MiB, 310.2 MiB/s").
  void Update(size_t done, uint64_t bytes);
  // Erases the line, e.g. before printing a message; a later Update draws it again.
  void Clear();

 private:
  std::string what_;
  size_t total_;
  std::chrono::steady_clock::duration redraw_interval_;
  bool enabled_;  // stderr is a terminal
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace kestrel
