// `kestrel cpu`: what this machine is and which SIMD code Kestrel will run on it. Meant for
// boards: run it first to see that the binary matches the core (and under qemu, which target
// the emulated CPU gets).
#include <cstdio>
#include <string>
#include <thread>

#include "ops/matmul_quant_dotprod.h"
#include "ops/matmul_quant_i8mm.h"
#include "ops/targets.h"
#include "tools/cli.h"
#include "tools/version.h"

namespace kestrel::cli {
namespace {

const char kUsage[] = "usage: kestrel cpu\n";

// Whether the quantized matmuls (q8, q4 and the kept GGUF types) run the sdot tiles of
// ops/matmul_quant_dotprod.cc and ops/matmul_blocks_dotprod.cc, which is decided apart from the
// Highway target: by the CPU's dotprod feature (HWCAP_ASIMDDP), on aarch64 only.
const char* DotProdUse() {
#if defined(__aarch64__)
  return ops::CpuHasDotProd() ? "yes (the quantized matmuls use sdot)"
                              : "no (this CPU has none: the quantized matmuls use the portable "
                                "kernels)";
#else
  return "no (an aarch64 feature)";
#endif
}

// Whether prompts (two tokens or more) run the smmla tiles of ops/matmul_quant_i8mm.cc and
// ops/matmul_blocks_i8mm.cc, decided by the CPU's i8mm feature (HWCAP2_I8MM), on aarch64 only.
const char* I8mmUse() {
#if defined(__aarch64__)
  return ops::CpuHasI8mm() ? "yes (the quantized matmuls use smmla for two tokens or more)"
                           : "no (this CPU has none: prompts use the same kernels as decode)";
#else
  return "no (an aarch64 feature)";
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
  std::printf("dotprod:           %s\n", DotProdUse());
  std::printf("i8mm:              %s\n", I8mmUse());
  return 0;
}

}  // namespace kestrel::cli
