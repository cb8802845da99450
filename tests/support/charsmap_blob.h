// Precompiled charsmaps (runtime/spm_normalizer.h) built by hand for the tests: darts-clone
// units and the blob layout around them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::test {

// darts-clone units: a node's (offset << 10 | has_leaf << 8 | label), a value unit's
// (1 << 31 | value). Offsets below 2^21 need no extension bit.
inline uint32_t Node(uint32_t offset, bool leaf, uint8_t label) {
  return offset << 10 | uint32_t{leaf} << 8 | label;
}
inline uint32_t ValueUnit(uint32_t value) { return 0x80000000u | value; }

// One 256-unit block with the rules "A" -> "a" and "AB" -> "x y": the root's base is 0, node
// "A" sits at 0x41 with base 0x80 (its value there), node "AB" at 0x80 ^ 'B' = 0xC2 with base
// 0x10 (its value there).
inline std::vector<uint32_t> TwoRuleUnits() {
  std::vector<uint32_t> units(256, 0);
  units[0] = Node(0, false, 0);
  units[0x41] = Node(0x41 ^ 0x80, true, 'A');
  units[0x80] = ValueUnit(0);  // "a"
  units[0xC2] = Node(0xC2 ^ 0x10, true, 'B');
  units[0x10] = ValueUnit(2);  // "x y"
  return units;
}

inline std::string Blob(const std::vector<uint32_t>& units, const std::string& strings) {
  std::string blob;
  const auto put = [&blob](uint32_t v) {
    for (int k = 0; k < 4; ++k) blob += static_cast<char>(v >> (8 * k) & 0xFF);
  };
  put(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) put(u);
  return blob + strings;
}

inline const std::string kTwoRuleStrings("a\0x y\0", 6);

}  // namespace kestrel::test
