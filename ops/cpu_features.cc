// CPU features the Highway targets do not cover, read once from the kernel. Compiled for the
// baseline architecture: it decides whether code built for more may run.
#include "ops/matmul_quant_dotprod.h"
#include "ops/matmul_quant_i8mm.h"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace kestrel::ops {

bool CpuHasDotProd() {
#if defined(__aarch64__)
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
#else
  return false;
#endif
}

bool CpuHasI8mm() {
#if defined(__aarch64__)
  static const bool has = (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
  return has;
#else
  return false;
#endif
}

}  // namespace kestrel::ops
