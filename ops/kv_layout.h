// How a KV ring stores its rows, shared by the op that writes the cache (KvStore) and the
// attention kernel that reads it.
//
// A ring of one layer holds `capacity` slots of row_elems = n_kv_heads * head_dim values each,
// keys and values in separate rings, stored head-major: [n_kv_heads][capacity][head_dim], so the
// slots one kv head reads are one contiguous run. Attention walks the keys of one kv head at a
// time, and a decode step finds the ring out of the caches (the layer's weights streamed past
// it); slot-major rows put a head's slots a whole row apart, a stride the hardware prefetchers do
// not follow. At SmolLM2-1.7B's shape (32 kv heads of 64) head-major took decode attention from
// 2.96 to 1.89 ms per token (tg128, one Zen 4 core, `kestrel bench --profile`). Element types:
//   f32   4 bytes per value.
//   f16   2 bytes (IEEE half): half the memory, values rounded to 11 significant bits.
//   int8  1 byte plus one f32 scale per 32 values (row_elems / 32 scales per slot, in a separate
//         array, head-major as the values, so the quants of a row stay contiguous): value = q *
//         scale, scale = absmax / 127 of the 32 values, q rounded to nearest. 9 bits per value. Per
//         32 values rather than per head row because rotated keys carry a few large channels that a
//         per-row scale would spread over every other channel's resolution (ggml's q8_0 KV cache
//         uses the same blocks).
//
// Slots: the first `sinks` positions (attention sinks, global layers only) keep slots
// 0..sinks-1 for good; every later position p lives in slot sinks + (p - sinks) % (capacity -
// sinks), so the ring overwrites the oldest non-sink position when it wraps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel::ops {

enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kInt8 = 2 };

// Values per int8 scale.
inline constexpr size_t kKvInt8Block = 32;

inline const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF16: return "f16";
    case KvType::kInt8: return "int8";
    default: return "f32";
  }
}

// "f32", "f16" or "int8"; false for anything else.
inline bool ParseKvType(const std::string& name, KvType* type) {
  if (name == "f32")
    *type = KvType::kF32;
  else if (name == "f16")
    *type = KvType::kF16;
  else if (name == "int8")
    *type = KvType::kInt8;
  else
    return false;
  return true;
}

// Bytes of one slot's values (without int8 scales).
inline size_t KvRowBytes(KvType type, size_t row_elems) {
  switch (type) {
    case KvType::kF16: return row_elems * 2;
    case KvType::kInt8: return row_elems;
    default: return row_elems * 4;
  }
}

// Bytes of one slot's scales: int8 only.
inline size_t KvRowScaleBytes(KvType type, size_t row_elems) {
  return type == KvType::kInt8 ? row_elems / kKvInt8Block * sizeof(float) : 0;
}

// The first of the head_dim values that kv head `kv_head` holds in `slot`, counted in values from
// the ring's start (divide by kKvInt8Block for its first int8 scale).
inline size_t KvHeadSlot(size_t kv_head, size_t slot, size_t capacity, size_t head_dim) {
  return (kv_head * capacity + slot) * head_dim;
}

inline size_t KvSlot(int64_t pos, size_t capacity, size_t sinks) {
  const size_t p = static_cast<size_t>(pos);
  return p < sinks ? p : sinks + (p - sinks) % (capacity - sinks);
}

}  // namespace kestrel::ops
