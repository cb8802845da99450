// Generated text made valid UTF-8 for JSON: a reply of random or byte-level tokens can hold
// bytes that are no character.
#pragma once

#include <string>
#include <string_view>

namespace kestrel::server {

// `text` with each maximal ill-formed subsequence replaced by U+FFFD, as Unicode recommends
// (section 3.9, "U+FFFD Substitution of Maximal Subparts") and as Python's
// bytes.decode("utf-8", "replace") does, so a client that decodes `kestrel run`'s bytes that way
// gets the same text.
std::string ValidUtf8(std::string_view text);

}  // namespace kestrel::server
