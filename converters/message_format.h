// How the converters' messages write a name and a shape: one spelling for every reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel {

// 'name'
inline std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// "[2, 3]". Int defaults so that a braced list of sizes reads too: ShapeString({rows, cols}).
template <class Int = uint64_t>
std::string ShapeString(const std::vector<Int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace kestrel
