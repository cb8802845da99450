// `kestrel cpu`: what this machine is and which SIMD code Kestrel will run on it. Meant for
// boards: run it first to see that the binary matches the core (and under qemu, which target
// the emulated CPU gets).
#include <cstdio>
#include <string>
#include <thread>

#include "ops/targets.h"
#include "tools/cli.h"

namespace kestrel::cli {
namespace {

const char kUsage[] = "usage: kestrel cpu\n";

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

}  // namespace

int CpuCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    if (args[0] == "-h" || args[0] == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return Fail("unexpected argument '" + args[0] + "'\n" + kUsage);
  }
  std::printf("architecture:      %s\n", BuildArchitecture());
  std::printf("cpu:               %s\n", CpuName().c_str());
  std::printf("cores:             %u\n", std::thread::hardware_concurrency());
  std::printf("targets compiled:  %s\n", ops::CompiledTargetNames().c_str());
  std::printf("targets supported: %s\n", ops::SupportedTargetNames().c_str());
  std::printf("target chosen:     %s\n", ops::ChosenTargetName().c_str());
  return 0;
}

}  // namespace kestrel::cli
