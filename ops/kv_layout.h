// How a KV ring stores its rows. (Declarations the CLI needs; the full layout comes with the
// runtime's f16/int8 KV cache on main.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel::ops {

enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kInt8 = 2 };

inline const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF16: return "f16";
    case KvType::kInt8: return "int8";
    default: return "f32";
  }
}

// "f32", "f16" or "int8"; false for anything else.
inline bool ParseKvType(const std::string& name, KvType* type) {
  if (name == "f32") *type = KvType::kF32;
  else if (name == "f16") *type = KvType::kF16;
  else if (name == "int8") *type = KvType::kInt8;
  else return false;
  return true;
}

}  // namespace kestrel::ops
