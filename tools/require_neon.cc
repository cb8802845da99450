// The armv7 build refuses to start, with a clear error, on a 32-bit ARM CPU without what it was
// compiled for: NEON and VFPv4 (-mfpu=neon-vfpv4, cmake/toolchains/arm-linux-gnueabihf.cmake;
// Highway 1.0.3 chooses NEON at compile time there). Without this check such a CPU (an ARMv7 core
// without NEON, such as NVIDIA Tegra 2's Cortex-A9, or Cortex-A8/A9 cores, whose NEON comes with
// VFPv3 only) would die on an illegal instruction somewhere in our code.
//
// Code compiled for NEON may use it anywhere, static constructors included, so the check is a
// constructor of the highest priority an application may use (101: it runs before every other
// static initializer of the executable, after only the C and C++ libraries' own, which Debian
// builds for the armhf baseline), in this file, which CMakeLists.txt compiles for that baseline
// (-mfpu=vfpv3-d16, no NEON) and links into both kestrel and kestrel-convert. It reads the
// kernel's HWCAP bits and writes with write(2) only. Other architectures compile nothing here.
// tests/armv7_without_neon_test.sh runs both programs under qemu-arm CPUs lacking each feature
// (and says why an ARMv6 CPU such as the Raspberry Pi 1's never gets this far: Debian's armhf C
// library and loader are Thumb-2 code, so such a CPU fails before any code of ours runs; the
// static board binaries therefore make the same check earlier, in tools/armv7_entry.S).
#if defined(__arm__) && !defined(__aarch64__)

#include <asm/hwcap.h>  // HWCAP_NEON, HWCAP_VFPv4: glibc's <sys/auxv.h> names them HWCAP_ARM_*
#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>  // program_invocation_short_name
#include <cstring>

namespace {

void Say(const char* text) {
  const ssize_t written = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)written;  // nothing to do about a closed stderr: the exit status still tells
}

__attribute__((constructor(101))) void RequireNeonAndVfpv4() {
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const bool neon = (hwcap & HWCAP_NEON) != 0, vfpv4 = (hwcap & HWCAP_VFPv4) != 0;
  if (neon && vfpv4) return;
  Say(program_invocation_short_name);
  Say(": error: this build needs a CPU with NEON and VFPv4 (an ARMv7 core such as Cortex-A7, "
      "A15 or A17, or a 64-bit ARM core running a 32-bit OS); this CPU has ");
  Say(!neon && !vfpv4 ? "neither NEON nor VFPv4"
      : !neon         ? "no NEON"
                      : "NEON but no VFPv4 (a Cortex-A8 or A9 class core)");
  Say("\n");
  _exit(1);
}

}  // namespace

#endif  // __arm__
