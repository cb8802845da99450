// What `kestrel --version` and `kestrel-convert --version` print.
#pragma once

#include <string>

namespace kestrel {

// "kestrel 0.1.0 (git 1a2b3c4-dirty), .kes format 2, built with GCC 12.2.0 for x86_64, SIMD
// targets AVX3_DL AVX3 AVX2 SSE4 SSSE3 EMU128" for program "kestrel"; the commit part is left
// out when the build was not configured from a git checkout.
std::string VersionText(const char* program);

// The architecture this binary was compiled for: "x86_64", "aarch64", "arm (32-bit)" or "other".
const char* BuildArchitecture();

}  // namespace kestrel
