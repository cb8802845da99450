// The C API's calls about the library itself: its version, its ABI version, status names and
// the calling thread's last error.
#include "capi/c_call.h"
#include "kestrel/kestrel.h"

// CMakeLists.txt defines it for this file only: project() VERSION.
#ifndef KESTREL_VERSION
#define KESTREL_VERSION "unknown"
#endif

extern "C" {

const char* kes_version(void) { return KESTREL_VERSION; }

int kes_abi_version(void) { return KES_ABI_VERSION; }

const char* kes_last_error(void) { return kestrel::capi::ThreadError(); }

const char* kes_status_name(kes_status status) {
  switch (status) {
    case KES_OK: return "KES_OK";
    case KES_INVALID_ARGUMENT: return "KES_INVALID_ARGUMENT";
    case KES_IO_ERROR: return "KES_IO_ERROR";
    case KES_BAD_MODEL: return "KES_BAD_MODEL";
    case KES_UNSUPPORTED: return "KES_UNSUPPORTED";
    case KES_BUFFER_TOO_SMALL: return "KES_BUFFER_TOO_SMALL";
    case KES_CONTEXT_FULL: return "KES_CONTEXT_FULL";
    case KES_OUT_OF_MEMORY: return "KES_OUT_OF_MEMORY";
    case KES_ABORTED: return "KES_ABORTED";
    case KES_INTERNAL: return "KES_INTERNAL";
    case KES_BAD_STATE: return "KES_BAD_STATE";
  }
  return "KES_UNKNOWN";  // a value from a newer header, or not a kes_status at all
}

}  // extern "C"
