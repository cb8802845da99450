#include "tools/version.h"

#include "ops/targets.h"
#include "runtime/format.h"

// CMakeLists.txt defines both for this file only: project() VERSION and the commit it was
// configured from (empty outside a git checkout).
#ifndef KESTREL_VERSION
#define KESTREL_VERSION "unknown"
#endif
#ifndef KESTREL_GIT_SHA
#define KESTREL_GIT_SHA ""
#endif

namespace kestrel {
namespace {

const char* Compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "an unknown compiler";
#endif
}

}  // namespace

const char* BuildArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "arm (32-bit)";
#else
  return "other";
#endif
}

std::string VersionText(const char* program) {
  std::string text = std::string(program) + " " + KESTREL_VERSION;
  const std::string sha = KESTREL_GIT_SHA;
  if (!sha.empty()) text += " (git " + sha + ")";
  text += ", .kes format " + std::to_string(kKesFormatVersion);
  text += std::string(", built with ") + Compiler() + " for " + BuildArchitecture();
  text += ", SIMD targets " + ops::CompiledTargetNames();
  return text;
}

}  // namespace kestrel
