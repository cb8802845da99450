// The one arena of a Session or an Encoder: the caller's buffer when one is given (checked for
// alignment and size), else allocated once here. Zeroed on acquisition, which also touches every
// page now, so the first step does not pay for page faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/status.h"

namespace kestrel {

class Arena {
 public:
  // need: the bytes the memory plan asks for; caller, caller_bytes: SessionOptions::arena and
  // arena_bytes (or the Encoder's), nullptr to allocate.
  Status Acquire(void* caller, size_t caller_bytes, size_t need);
  uint8_t* data() const { return data_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> owned_;
  uint8_t* data_ = nullptr;
};

}  // namespace kestrel
