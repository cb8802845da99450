// A text as one printable line: `kestrel tokenize` shows each token's piece with it, and the
// tokenizer tests name a failing case's text with it.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace kestrel::cli {

// `text` with the bytes that would break the line escaped: \n, \t, and \xNN for the other
// control bytes; everything else (UTF-8 included) as it is.
inline std::string Printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace kestrel::cli
