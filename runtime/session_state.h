// A Session's sequence saved as bytes (Session::SaveState / LoadState), so that a prefilled
// system prompt or a conversation restores in the time of a copy instead of a prefill.
//
// Format version 1, in the host's byte order (a state is for machines like the one that saved
// it; another byte order is refused):
//   StateHeader (128 bytes, below)
//   per self-attention layer, in the model's order, for its `used` = min(position, capacity)
//   first slots (ops/kv_layout.h: positions below the capacity sit in slots 0..position-1, and
//   once the ring has wrapped every slot is in use, so those slots are exactly what is held):
//     K rows, V rows                        used * KvRowBytes(type, row_elems) bytes each
//     int8 only: K scales, V scales         used * KvRowScaleBytes(type, row_elems) bytes each
//   logits, `vocab` floats (vocab 0: none; left out while a pending token awaits its step)
// Nothing else: activations are scratch, and which slot holds which position (the ring's
// wrapping, the sinks) follows from the position, the context and the sinks, all recorded.
// The checksum covers every byte after itself, so a damaged or cut state is refused whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/status.h"

namespace kestrel {

inline constexpr char kStateMagic[8] = {'K', 'E', 'S', 'S', 'T', 'A', 'T', 'E'};
inline constexpr uint32_t kStateFormatVersion = 1;
inline constexpr uint32_t kStateByteOrder = 0x01020304;

// What a Session's caller keeps beside the sequence and saves with it: a token counted in the
// sequence but not run yet, and its sampler's options and place in the random sequence, so that
// sampling after a load continues exactly as the saved run would have.
struct SequenceExtras {
  int32_t pending = -1;        // -1: none
  bool sampler_ready = false;  // false: the next sampling call seeds its sampler afresh
  SamplerOptions sampler;
  uint64_t sampler_random = 0;  // Sampler::random_state
};

struct StateHeader {
  char magic[8];            // kStateMagic
  uint32_t format_version;  // kStateFormatVersion
  uint32_t header_bytes;    // sizeof(StateHeader)
  uint64_t checksum;        // XXH3-64 of the bytes [offsetof(StateHeader, total_bytes), total)
  uint64_t total_bytes;     // header and payload
  uint64_t model_id;        // ModelIdentity
  uint64_t context_length;
  uint64_t sinks;
  uint64_t position;    // tokens run through the model
  uint64_t vocab;       // logits saved: vocab floats; 0: none
  uint32_t kv_type;     // ops::KvType
  uint32_t n_layers;    // self-attention rings
  int32_t pending;      // a token counted in the sequence but not run yet; -1: none
  uint32_t byte_order;  // kStateByteOrder as the saving host wrote it
  // SequenceExtras' sampler
  uint32_t sampler_ready;  // 0 or 1
  float temperature;
  int32_t top_k;
  float top_p;
  uint64_t seed;
  uint64_t sampler_random;
  uint64_t reserved;  // 0
};
static_assert(sizeof(StateHeader) == 128, "the state header is part of the format");

// What identifies a model's weights: the XXH3 checksum kestrel-convert recorded, or, for files
// from before checksums, a hash of the file's size and shape. Costs nothing (no hashing of the
// weights).
uint64_t ModelIdentity(const Model& model);

// Writes `size` bytes to `path` whole or not at all: into a temporary file beside it, synced,
// then renamed over it; readable by its owner only (mkstemp's 0600: a state holds what was
// said). Installs no signal handlers (a library's caller owns those), so a
// process killed mid-write may leave the temporary ".NAME.XXXXXX.tmp" behind, never a cut file.
Status WriteFileAtomically(const std::string& path, const uint8_t* data, size_t size);
// The whole file; the error names the path.
Status ReadWholeFile(const std::string& path, std::vector<uint8_t>* out);

}  // namespace kestrel
