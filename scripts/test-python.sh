#!/usr/bin/env bash
# The Python package's tests (python/tests, docs/python.md): installs ./python into the project
# virtualenv (.venv, scripts/install-deps.sh) and runs pytest, comparing its results with the
# kestrel programs of the same build.
#
#   scripts/test-python.sh [BUILD_DIR]    default build/release, already built
#                                         (scripts/build.sh release)
#
# Cheap in CI: the library is not compiled again. BUILD_DIR is installed into a prefix
# (cmake --install copies files) and the package links that prefix's libkestrel.a
# (python/CMakeLists.txt with KESTREL_PREFIX), so pip compiles the extension alone, in a build
# folder kept between runs (build/python-wheel), with no network: the build requirements
# (scikit-build-core, nanobind) come from .venv (scripts/requirements.txt). The documented
# `pip install ./python` builds the library from this source tree instead.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
py=.venv/bin/python
for need in "$py" "$build/kestrel" "$build/kestrel-convert" "$build/cmake_install.cmake"; do
  if [ ! -e "$need" ]; then
    echo "test-python.sh: error: $need is missing (scripts/install-deps.sh, then" \
         "scripts/build.sh release)" >&2
    exit 1
  fi
done
build=$(cd "$build" && pwd)
start=$(date +%s)
prefix=$PWD/build/python-prefix
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$py" -m pip install --quiet \
  --no-build-isolation --no-deps --force-reinstall ./python \
  -Ccmake.define.KESTREL_PREFIX="$prefix" -Cbuild-dir="$PWD/build/python-wheel" "${launcher[@]}"
built=$(date +%s)
KESTREL_BIN_DIR="$build" "$py" -m pytest -q -p no:cacheprovider python/tests
echo "== python: package built in $(( built - start )) s, tests ran in $(( $(date +%s) - built )) s"
