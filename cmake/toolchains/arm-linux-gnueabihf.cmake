# Cross-compiles Kestrel for 32-bit ARMv7 Linux with NEON and hard float (Debian multiarch:
# g++-arm-linux-gnueabihf and the :armhf library packages, see scripts/install-deps.sh --cross).
# ctest runs the tests under qemu-arm.
#
#   cmake -S . -B build/armv7 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake
#
# Highway 1.0.3 cannot detect NEON at run time on armv7, so NEON is chosen at compile time: the
# binary needs a core with NEON and VFPv4 (Cortex-A7/A15/A17 and every ARMv8 core running a
# 32-bit OS; not Cortex-A9). -mfp16-format=ieee gives the __fp16 type Highway uses for f16.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(CMAKE_CXX_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfp16-format=ieee -mfloat-abi=hard -Wno-psabi")
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfp16-format=ieee -mfloat-abi=hard")
# The emulated programs load the multiarch libraries (libc6:armhf and the others that the :armhf -dev
# packages pull in, under /lib/<triple>), not the cross toolchain's copy in /usr/<triple> (qemu's
# -L): with that glibc (2.36-8) pthread_create spins forever under qemu 7.2 on this kernel,
# while the multiarch glibc (2.36-9+deb12u*) works.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm)
# pkg-config looks for the target's .pc files only (Debian multiarch), never the host's: a library
# installed for the host alone (cpp-httplib for `kestrel serve`) is then not found, rather than
# found and compiled against the host's headers and configuration.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/arm-linux-gnueabihf/pkgconfig:/usr/share/pkgconfig")
