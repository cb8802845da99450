// Status values for every fallible call in Kestrel. The runtime API never throws: errors come
// back as a Status whose message says what was expected and what was found.
#pragma once

#include <string>
#include <utility>

namespace kestrel {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context, e.g. "tensor blk.3.attn_q.weight: " + message.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)), failed_(true) {}
  std::string message_;
  bool failed_ = false;
};

inline Status OkStatus() { return Status(); }

}  // namespace kestrel

#define KES_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::kestrel::Status kes_status_ = (expr);    \
    if (!kes_status_.ok()) return kes_status_; \
  } while (0)

// Returns an error built from the streamed message when cond is false.
#define KES_CHECK_OR_RETURN(cond, message)                 \
  do {                                                     \
    if (!(cond)) return ::kestrel::Status::Error(message); \
  } while (0)
