# Cross-compiles Kestrel for 64-bit ARM Linux (Debian multiarch: g++-aarch64-linux-gnu and the
# :arm64 library packages, see scripts/install-cross.sh). ctest runs the tests under qemu-user;
# set QEMU_CPU to pick the emulated CPU (e.g. "max,sve-default-vector-length=32" for SVE_256,
# "cortex-a72" for NEON only).
#
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# For a specific board, add e.g. -DKESTREL_CPU_FLAGS="-mcpu=cortex-a76" (see the README).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
