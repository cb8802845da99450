# Cross-compiles Kestrel for 64-bit ARM Linux (Debian multiarch: g++-aarch64-linux-gnu and the
# :arm64 library packages, see scripts/install-deps.sh --cross). ctest runs the tests under
# qemu-user; set QEMU_CPU to pick the emulated CPU (e.g. "max,sve-default-vector-length=32" for
# SVE_256, "cortex-a72" for NEON only).
#
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# For a specific board, add e.g. -DKESTREL_CPU_FLAGS="-mcpu=cortex-a76" (see the README).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The emulated programs load the multiarch libraries (libc6:arm64 and the others that the :arm64 -dev
# packages pull in, under /lib/<triple>), not the cross toolchain's copy in /usr/<triple> (qemu's
# -L): with that glibc (2.36-8) pthread_create spins forever under qemu 7.2 on this kernel,
# while the multiarch glibc (2.36-9+deb12u*) works.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# pkg-config looks for the target's .pc files only (Debian multiarch), never the host's: a library
# installed for the host alone (cpp-httplib for `kestrel serve`) is then not found, rather than
# found and compiled against the host's headers and configuration.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
