// The tiny Gemma 3's .kes path (test_support.h MakeTinyModel), for tests that use only the
// public C++ header: kestrel.hpp's classes and test_support.h's runtime declarations share names
// (Model), so such a test cannot include both.
#pragma once

#include <string>

namespace kestrel::test {

// Makes the model once per process; "" and `error` set when it could not be made.
std::string TinyGemma3KesPath(std::string* error);

}  // namespace kestrel::test
