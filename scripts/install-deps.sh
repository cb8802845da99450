#!/usr/bin/env bash
# Installs everything Kestrel needs on a fresh Debian bookworm machine (as root):
# the C++ toolchain and libraries from Debian, and a project virtualenv (.venv) with
# the Python tools used by tests, oracles and model downloads.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

debian_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  python3 python3-venv python3-pip
  libhwy-dev libflatbuffers-dev flatbuffers-compiler
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
)
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # One mirror index may be mid-sync; the installs that follow still work.
  $SUDO apt-get update || echo "apt-get update exited non-zero; continuing" >&2
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -r scripts/requirements.txt
