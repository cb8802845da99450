// GPT-2's byte alphabet, written from its definition (bytes_to_unicode) for the byte-level BPE
// test and fuzzer to build vocabularies and expectations with, apart from the tokenizer's own
// table (runtime/tokenizer_bpe.cc) that they check.
#pragma once

#include <string>

namespace kestrel::test {

// Byte b's character, UTF-8 encoded: printable Latin-1 ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) as
// itself, the other bytes as U+0100 onwards in byte order (a space is "Ġ").
inline std::string ByteLevelCharacter(unsigned char b) {
  const auto printable = [](unsigned x) {
    return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
  };
  unsigned code = b;
  if (!printable(b)) {
    code = 0x100;
    for (unsigned x = 0; x < b; ++x) code += printable(x) ? 0 : 1;
  }
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {  // the alphabet stays below U+0800
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

}  // namespace kestrel::test
