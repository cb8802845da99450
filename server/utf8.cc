#include "server/utf8.h"

namespace kestrel::server {
namespace {

// The range the second byte of a sequence led by `lead` must be in (Unicode Table 3-7), and the
// sequence's length; length 0 for a byte that cannot lead.
void LeadRange(unsigned char lead, unsigned char* lo, unsigned char* hi, int* length) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    *length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    *length = 3;
    if (lead == 0xE0) *lo = 0xA0;
    if (lead == 0xED) *hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    *length = 4;
    if (lead == 0xF0) *lo = 0x90;
    if (lead == 0xF4) *hi = 0x8F;  // nothing past U+10FFFF
  } else {
    *length = 0;
  }
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      out += static_cast<char>(lead);
      ++i;
      continue;
    }
    unsigned char lo, hi;
    int length;
    LeadRange(lead, &lo, &hi, &length);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    size_t j = i + 1;
    int have = 1;
    while (have < length && j < text.size()) {
      const unsigned char c = static_cast<unsigned char>(text[j]);
      if (c < lo || c > hi) break;
      lo = 0x80;  // only the second byte has a narrower range
      hi = 0xBF;
      ++j;
      ++have;
    }
    if (have == length) {
      out.append(text.data() + i, j - i);
    } else {
      out += kReplacement;  // the maximal subpart i..j, then go on at the byte that broke it
    }
    i = j;
  }
  return out;
}

}  // namespace kestrel::server
