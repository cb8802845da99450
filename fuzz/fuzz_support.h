// What the fuzz harnesses share: input bytes copied the way a mapping would hold them, running
// an accepted model (a short generation, or one embedding), and the converter's contract that
// whatever it accepts it writes as a model the runtime accepts.
//
// Limits on what a harness runs are the harness's, not the runtime's: a model whose arena or
// cache would exceed kMaxArenaBytes at the harness's small context is only loaded, not run, so
// that libFuzzer's memory limit reports real leaks and overflows rather than a large (and
// legitimate) allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "converters/gguf_import.h"
#include "converters/kes_model.h"
#include "runtime/model.h"

namespace kestrel::fuzz {

inline constexpr size_t kMaxArenaBytes = size_t{64} << 20;
inline constexpr size_t kContextLength = 48;

// A 64-byte aligned copy of an input (as mmap gives a file), at least 64 bytes allocated.
class AlignedCopy {
 public:
  AlignedCopy(const uint8_t* data, size_t size);
  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> bytes_;
  size_t size_;
};

// Reports a broken invariant (a bug, not a bad input) and aborts, which libFuzzer records as a
// crash with the input that caused it.
[[noreturn]] void Die(const std::string& what);

// Runs an accepted model the way the CLI would: a decoder prefills a few tokens and decodes two
// (KV type and thread count picked by `variant`: 2 threads when variant % 8 == 1, KV type
// f32/f16/int8 by (variant / 8) % 3), an encoder embeds two short texts; plus a
// tokenizer round on the model's vocabulary. Errors returned by the runtime are fine (a model may
// be valid yet, e.g., too large for the harness's limits); crashes and sanitizer reports are not.
void RunModel(const Model& model, uint32_t variant);

// The --weights choice `choice` (an input's last byte) stands for, for the float-checkpoint
// importers: keep, f32, f16, q8 or q4 (choice % 5).
ConvertOptions FloatWeightsChoice(uint8_t choice);

// The converter accepted `model`: plans its arena, serializes it, and requires the runtime to
// accept the bytes (Die otherwise: the converter must never write a file the runtime refuses),
// then runs it.
void CheckConvertedModel(KesModel* model, uint32_t variant);

}  // namespace kestrel::fuzz
