// The boundary every C API call crosses: how a call reports what failed (a kes_status code and a
// message, kept for kes_last_error and the handle's *_last_error), the try/catch that keeps C++
// exceptions from reaching C, and the reading of size-prefixed parameter structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "kestrel/kestrel.h"
#include "runtime/status.h"

namespace kestrel {
class Model;
}  // namespace kestrel

namespace kestrel::capi {

// What a call body returns: KES_OK, or a code with the message that explains it.
struct CallStatus {
  kes_status code = KES_OK;
  std::string message;
  bool ok() const { return code == KES_OK; }
};

inline CallStatus Ok() { return {}; }
inline CallStatus Error(kes_status code, std::string message) { return {code, std::move(message)}; }
// A runtime Status (which has no code yet) given the code its failure means at this call.
inline CallStatus FromStatus(kes_status code_if_failed, const Status& status) {
  return status.ok() ? Ok() : Error(code_if_failed, status.message());
}

#define KES_C_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::kestrel::capi::CallStatus kes_c_call_ = (expr); \
    if (!kes_c_call_.ok()) return kes_c_call_;        \
  } while (0)

// Keeps the message of a failed call on `handle` (nullptr: none) as the calling thread's last
// error; `handle_error` (optional) also gets it. Never throws: without memory for the message
// a fixed one stands in.
kes_status Record(const void* handle, std::string* handle_error, CallStatus status) noexcept;
// The calling thread's last error, and the same only when it was on `handle` ("" otherwise).
const char* ThreadError() noexcept;
const char* ThreadErrorFor(const void* handle) noexcept;

// Runs `body` (returning CallStatus) with every exception turned into a status: no C++
// exception crosses into C.
template <typename Body>
kes_status Guard(const void* handle, std::string* handle_error, Body&& body) noexcept {
  try {
    CallStatus status = body();
    if (status.ok()) return KES_OK;
    return Record(handle, handle_error, std::move(status));
  } catch (const std::bad_alloc&) {
    return Record(handle, handle_error, {KES_OUT_OF_MEMORY, "out of memory"});
  } catch (const std::exception& e) {
    return Record(handle, handle_error, {KES_INTERNAL, std::string("internal error: ") + e.what()});
  } catch (...) {
    return Record(handle, handle_error, {KES_INTERNAL, "internal error: unknown exception"});
  }
}

// Reads a caller's parameter struct into *out: the defaults, overwritten by the leading
// struct_size bytes the caller gave (an older header's struct is a prefix of ours, because
// fields are only appended and no version ends in padding: see the static_asserts beside each
// struct's defaults). nullptr: the defaults.
template <typename T>
CallStatus ReadParams(const T* in, const T& defaults, const char* name, T* out) {
  *out = defaults;
  if (in == nullptr) return Ok();
  const size_t size = in->struct_size;
  if (size < sizeof(size_t) || size > sizeof(T)) {
    return Error(KES_INVALID_ARGUMENT,
                 std::string(name) + ".struct_size: expected " + std::to_string(sizeof(size_t)) +
                     " to " + std::to_string(sizeof(T)) + " bytes (set by " + name +
                     " defaults), found " + std::to_string(size) +
                     (size > sizeof(T) ? ": the program was built with a newer kestrel.h than "
                                         "this library"
                                       : ""));
  }
  std::memcpy(static_cast<void*>(out), static_cast<const void*>(in), size);
  out->struct_size = sizeof(T);
  return Ok();
}

// The error for a NULL pointer argument.
inline CallStatus NullArgument(const char* name) {
  return Error(KES_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

// Fills a caller's info struct (kes_model_info, kes_encoder_info) as far as its struct_size
// reaches: `fill` sets the fields of a zeroed copy of our size, whose leading struct_size bytes
// are copied out (an older header's struct is a prefix of ours, as ReadParams's is).
template <typename T, typename Fill>
CallStatus FillInfo(T* info, const char* name, Fill&& fill) {
  if (info == nullptr) return NullArgument("info");
  const size_t size = info->struct_size;
  if (size < sizeof(size_t) || size > sizeof(T)) {
    return Error(KES_INVALID_ARGUMENT,
                 std::string(name) + ".struct_size: expected " + std::to_string(sizeof(size_t)) +
                     " to " + std::to_string(sizeof(T)) + ", found " + std::to_string(size));
  }
  T full;
  std::memset(static_cast<void*>(&full), 0, sizeof(full));
  full.struct_size = size;
  fill(&full);
  std::memcpy(static_cast<void*>(info), static_cast<const void*>(&full), size);
  return Ok();
}

// KES_BUFFER_TOO_SMALL for the caller's buffer `name` ("tokens"), which holds `capacity` of the
// `need` elements (`unit`: "tokens", "bytes") the call has for it.
inline CallStatus BufferTooSmall(const char* name, size_t need, size_t capacity, const char* unit) {
  return Error(KES_BUFFER_TOO_SMALL, std::string(name) + ": expected a capacity of at least " +
                                         std::to_string(need) + " " + unit + ", found " +
                                         std::to_string(capacity));
}

// What a caller's buffer counts: ids in tokens, text in bytes.
inline const char* BufferUnit(const int32_t*) { return "tokens"; }
inline const char* BufferUnit(const char*) { return "bytes"; }

// A call's result data[n] into the caller's buf[capacity] (named `name` in the message), as
// kestrel.h promises: *n_out gets n either way, and a short buffer is left untouched with
// KES_BUFFER_TOO_SMALL.
template <typename T>
CallStatus CopyOut(const T* data, size_t n, T* buf, size_t capacity, size_t* n_out,
                   const char* name) {
  *n_out = n;
  if (n > capacity) return BufferTooSmall(name, n, capacity, BufferUnit(buf));
  if (n > 0) std::memcpy(buf, data, n * sizeof(T));
  return Ok();
}

// Whether this CPU can run the library (KES_UNSUPPORTED if not) and then `n_threads` threads of
// it (KES_INVALID_ARGUMENT): what creating a session, an encoder or a transcriber checks first.
CallStatus CheckCanRunThreads(size_t n_threads);

// KES_UNSUPPORTED for a handle asked of the wrong kind of model, naming the model's `kind` ("an
// encoder model") and architecture, then what to do `instead`.
CallStatus WrongModel(const Model& model, const char* kind, const char* instead);

// Whether `path` is a regular file this process can open: tells a file that cannot be read
// (KES_IO_ERROR) from one whose contents are wrong. The runtime's Status has no code yet, so the
// C API asks the file system itself; the message stays the runtime's.
bool CanOpenRegularFile(const char* path) noexcept;

// A call given a NULL handle (`name`: "session"), its error kept as the thread's last one.
inline kes_status NullHandle(const char* name) noexcept {
  return Guard(nullptr, nullptr, [name] { return NullArgument(name); });
}

// A call on a handle (`name`: "session"): NULL refused, else `body` under Guard, its failure
// kept as the handle's error too (its `error` member: kes_session_last_error and the others).
template <typename Handle, typename Body>
kes_status OnHandle(Handle* handle, const char* name, Body&& body) noexcept {
  if (handle == nullptr) return NullHandle(name);
  return Guard(handle, &handle->error, std::forward<Body>(body));
}

// What every kes_*_create does around making its handle: *out cleared (NULL refused, as `name`),
// a new handle of `model` that `fill` (CallStatus(Handle*)) checks the rest and sets up, and *out
// given it only when all went well; a failure frees it.
template <typename Handle, typename Fill>
kes_status CreateHandle(const kes_model* model, const char* name, Handle** out,
                        Fill&& fill) noexcept {
  return Guard(model, nullptr, [&]() -> CallStatus {
    if (out == nullptr) return NullArgument(name);
    *out = nullptr;
    auto handle = std::make_unique<Handle>();
    handle->model = model;
    KES_C_RETURN_IF_ERROR(fill(handle.get()));
    *out = handle.release();
    return Ok();
  });
}

// A size-prefixed struct (kes_*_params, kes_segment) with every byte zero but its struct_size:
// where each *_default_params starts.
template <typename T>
T ZeroedStruct() {
  T p;
  std::memset(static_cast<void*>(&p), 0, sizeof(p));
  p.struct_size = sizeof(p);
  return p;
}

}  // namespace kestrel::capi
