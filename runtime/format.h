// Constants of the .kes container shared by the converter (writer) and the runtime (reader).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel_generated.h"
#include "runtime/dtype_table.h"  // each dtype's sizes and name, for the container's readers

namespace kestrel {

// The 16-byte preamble before the FlatBuffer: "KESTREL\0", u32 format version, u32 FlatBuffer size.
inline constexpr char kKesMagic[8] = {'K', 'E', 'S', 'T', 'R', 'E', 'L', '\0'};
inline constexpr size_t kKesPreambleBytes = 16;
// 2: typed op parameters (OpParams union) and named plan inputs and outputs.
// 3: kept GGUF types store each block's scale records beside its quants (ops/block_layout.h).
inline constexpr uint32_t kKesFormatVersion = 3;
// Weight blob start, every tensor in it and every arena buffer are aligned to this.
inline constexpr size_t kKesAlignment = 64;

inline constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace kestrel
