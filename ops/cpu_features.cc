// CPU features the Highway targets do not cover, read once from the kernel. Compiled for the
// baseline architecture: it decides whether code built for more may run.
#include "ops/matmul_quant_dotprod.h"
#include "ops/matmul_quant_i8mm.h"
#include "ops/targets.h"

#include <atomic>
#include <cstring>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kestrel::ops {

#if defined(__aarch64__)
bool CpuHasDotProd() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
}
bool CpuHasI8mm() {
  static const bool has = (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
  return has;
}
#else
// The sdot and smmla tiles are 64-bit ARM's alone.
bool CpuHasDotProd() { return false; }
bool CpuHasI8mm() { return false; }
#endif

namespace {

// AMD family 19h: Zen 3, which has no AVX-512 (so no AVX3_DL kernel runs there), and Zen 4,
// whose AVX-512 unit splits each 512-bit operation in two. Zen 5 (family 1Ah) runs them whole,
// and so do Intel's AVX-512 cores. Highway 1.1's AVX3_ZEN4 target tells Zen 4 apart the same
// way; Debian bookworm's Highway 1.0.3 has no such target.
bool DetectSplit512BitOps() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  char vendor[12];
  memcpy(vendor, &ebx, 4);
  memcpy(vendor + 4, &edx, 4);
  memcpy(vendor + 8, &ecx, 4);
  if (memcmp(vendor, "AuthenticAMD", 12) != 0) return false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const unsigned base_family = (eax >> 8) & 0xF, extended_family = (eax >> 20) & 0xFF;
  const unsigned family = base_family == 0xF ? base_family + extended_family : base_family;
  if (family != 0x19) return false;
  // AVX-512 Foundation: Zen 4 rather than Zen 3.
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx & (1u << 16)) != 0;
#else
  return false;
#endif
}

// -1: as the CPU says; 0 or 1: OverrideCpuSplits512BitOps's value.
std::atomic<int> split_override{-1};

}  // namespace

bool CpuSplits512BitOps() {
  const int forced = split_override.load(std::memory_order_relaxed);
  if (forced >= 0) return forced == 1;
  static const bool detected = DetectSplit512BitOps();
  return detected;
}

void OverrideCpuSplits512BitOps(std::optional<bool> splits) {
  split_override.store(splits.has_value() ? (*splits ? 1 : 0) : -1, std::memory_order_relaxed);
}

}  // namespace kestrel::ops
