// tools/require_neon.cc's constructor in a dynamically linked program, as `scripts/build.sh armv7`
// links kestrel and kestrel-convert: the static board build, where the CI runs the armv7 tests,
// refuses a CPU without NEON or VFPv4 before this constructor runs (tools/armv7_entry.S), so
// tests/armv7_without_neon_test.sh --probe runs this program to keep the constructor's refusal
// tested. It prints one word once it has started.
#include <cstdio>

int main() {
  std::puts("started");
  return 0;
}
