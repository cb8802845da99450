// `kestrel cpu`: what this machine is and which SIMD code Kestrel will run on it. Meant for
// boards: run it first to see that the binary matches the core (and under qemu, which target
// the emulated CPU gets).
#include <cstdio>
#include <fstream>
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

// The CPU's name from /proc/cpuinfo: "model name" on x86, "CPU part" (and implementer) on ARM,
// where the kernel names no model.
std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, implementer, part;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") return value;
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (!part.empty()) return "implementer " + implementer + ", part " + part;
  return "unknown";
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
