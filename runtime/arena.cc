#include "runtime/arena.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/format.h"

namespace kestrel {

void Arena::Free::operator()(uint8_t* p) const { std::free(p); }

Status Arena::Acquire(void* caller, size_t caller_bytes, size_t need) {
  if (caller != nullptr) {
    KES_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(caller) % kKesAlignment == 0,
                        "arena must be 64-byte aligned");
    KES_CHECK_OR_RETURN(caller_bytes >= need, "arena too small: expected at least " +
                                                  std::to_string(need) + " bytes, found " +
                                                  std::to_string(caller_bytes));
    owned_.reset();
    data_ = static_cast<uint8_t*>(caller);
  } else {
    void* p = std::aligned_alloc(kKesAlignment, AlignUp(need, kKesAlignment));
    KES_CHECK_OR_RETURN(p != nullptr,
                        "cannot allocate the " + std::to_string(need) + "-byte arena");
    owned_.reset(static_cast<uint8_t*>(p));
    data_ = owned_.get();
  }
  std::memset(data_, 0, need);
  return OkStatus();
}

}  // namespace kestrel
