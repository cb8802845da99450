#!/usr/bin/env bash
# Installs everything Kestrel needs on a fresh Debian bookworm machine (as root):
# the C++ toolchain and libraries from Debian, and a project virtualenv (.venv) with
# the Python tools used by tests, oracles and model downloads.
#
#   scripts/install-deps.sh           native build, tests and the demo
#   scripts/install-deps.sh --cross   also the ARM cross compilers (aarch64, armv7), qemu-user
#                                     and the arm64/armhf libraries (Debian multiarch)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

debian_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  python3 python3-venv python3-pip python3-dev  # python3-dev: Python.h for python/'s extension
  libhwy-dev libflatbuffers-dev flatbuffers-compiler
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libutf8proc-dev
  libkissfft-dev libsamplerate0-dev dpkg-dev
  libxxhash-dev  # the weights checksum, header-only (runtime/weights_checksum.cc)
  libxsimd-dev   # bench/xsimd_bench only (docs/simd-layer.md), header-only; skipped if absent
  espeak-ng sox  # test speech for the Whisper tests, made offline
  libcpp-httplib-dev  # `kestrel serve` (server/); the programs build without it, minus the server
  mold  # the sanitizer builds' linker (scripts/build.sh), 3x faster than GNU ld on their tests
  clang-format-14  # scripts/check-format.sh: the layout .clang-format gives, as CI checks it
)
cross=0
case "${1:-}" in
  "") ;;
  --cross) cross=1 ;;
  *) echo "install-deps.sh: error: unknown argument '$1' (expected --cross or nothing)" >&2; exit 2 ;;
esac
if [ $cross = 1 ]; then
  debian_packages+=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user xz-utils file)
  for arch in arm64 armhf; do
    debian_packages+=("libhwy-dev:$arch" "libgtest-dev:$arch" "libgmock-dev:$arch"
                      "libbenchmark-dev:$arch" "libflatbuffers-dev:$arch" "libutf8proc-dev:$arch"
                      "libkissfft-dev:$arch" "libsamplerate0-dev:$arch" "libxxhash-dev:$arch")
  done
  # Never flatbuffers-compiler:<arch>: it would replace the host flatc the build runs.
  for arch in arm64 armhf; do
    dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch"
  done
fi

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # One mirror index may be mid-sync (apt-get update exits 100); the installs that follow still
  # work, so that exit code is tolerated.
  $SUDO apt-get update || echo "apt-get update exited non-zero; continuing" >&2
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -r scripts/requirements.txt

# ARMv7 builds (and static board builds) compile Highway's runtime, kissfft and libsamplerate
# from Debian's sources.
if [ $cross = 1 ]; then
  bash scripts/fetch-debian-sources.sh
fi
