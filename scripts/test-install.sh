#!/usr/bin/env bash
# Kestrel as a library, the way a user's program gets it (docs/install.md):
#   native:    `cmake --install` of the native build into a temporary prefix; its libkestrel.so
#              exports kes_* alone; examples/ (C and C++, each on the shared and the static
#              library) built against the prefix with find_package(Kestrel), and with
#              pkg-config (examples/Makefile); every one's greedy output equal to the installed
#              `kestrel run --temp 0 -t 1`'s on the same prompt and token count;
#   aarch64:   the same with the aarch64 cross build (scripts/build.sh aarch64; not in CI, which
#              tests the board build), the examples cross-compiled with
#              cmake/toolchains/aarch64-linux-gnu.cmake and run under qemu-aarch64;
#   board:     the static board build (KESTREL_STATIC: no shared library) installs too, and the
#              examples link it into fully static aarch64 programs that run under qemu-aarch64
#              with no ARM libraries at all;
#   consumers: a project that takes Kestrel's source tree with add_subdirectory, and one with
#              FetchContent (SOURCE_DIR: no network), configure; the consumer's own C and C++
#              files compile with the include paths Kestrel::kestrel gives them, and nothing Kestrel
#              sets reaches the parent (compile options and definitions, link options, CMAKE_*
#              variables). Building all of Kestrel a second time costs minutes on 2 cores, so
#              only --full also links and runs them (and checks the build graph otherwise with
#              ninja -n).
# Usage: scripts/test-install.sh [--full] [native] [aarch64] [board] [consumers]   (none: all)
# Reuses the builds CI already has (scripts/build.sh release and aarch64, scripts/build-board.sh
# aarch64: the last one only needs the C API's files compiled); other folders with
#   KESTREL_INSTALL_BUILD=build/x KESTREL_INSTALL_CROSS_BUILD=build/y KESTREL_INSTALL_BOARD_BUILD=z
# Models, converted by the installed kestrel-convert: SmolLM2-135M (scripts/fetch-model.sh;
# natively only) and the tiny random Gemma 3 GGUF the native Release tests leave in
# build/release/test-tmp/reference (the only one under qemu: a real model takes minutes there).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
full=0
stages=()
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    native|aarch64|board|consumers) stages+=("$arg") ;;
    *) echo "usage: scripts/test-install.sh [--full] [native] [aarch64] [board] [consumers]" >&2
       exit 2 ;;
  esac
done
if [ ${#stages[@]} -eq 0 ]; then stages=(native aarch64 board consumers); fi
jobs=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

native_build=${KESTREL_INSTALL_BUILD:-build/release}
cross_build=${KESTREL_INSTALL_CROSS_BUILD:-build/aarch64}
board_build=${KESTREL_INSTALL_BOARD_BUILD:-build/board-aarch64}
tiny_gguf=build/release/test-tmp/reference/tiny.gguf
smollm2_gguf=models/SmolLM2-135M-Instruct.Q4_1.gguf
prompt="The capital of France is"
n_tokens=12

fail() {
  echo "test-install: error: $*" >&2
  exit 1
}

# Installs BUILD into PREFIX (building first whatever install needs that is not built yet) and
# checks what is there.
install_into() {
  local build=$1 prefix=$2
  [ -f "$build/CMakeCache.txt" ] || fail "$build is not a configured build (scripts/build.sh)"
  # Static board builds (KESTREL_STATIC) make no shared library.
  local shared=1
  if grep -q '^KESTREL_STATIC:BOOL=ON$' "$build/CMakeCache.txt"; then shared=0; fi
  cmake --build "$build" -j "$jobs" --target kestrel kestrel-convert kestrel_static \
    $([ "$shared" = 1 ] && echo kestrel_shared)
  cmake --install "$build" --prefix "$prefix" > /dev/null
  local f
  for f in bin/kestrel bin/kestrel-convert include/kestrel/kestrel.h lib/libkestrel.a \
           lib/cmake/Kestrel/KestrelConfig.cmake lib/cmake/Kestrel/KestrelConfigVersion.cmake \
           lib/pkgconfig/kestrel.pc; do
    [ -e "$prefix/$f" ] || fail "the install has no $f"
  done
  if [ "$shared" = 0 ]; then
    [ ! -e "$prefix/lib/libkestrel.so" ] || fail "a KESTREL_STATIC build installed libkestrel.so"
    return 0
  fi
  # The shared library's SONAME is the C ABI version of the header it was built from.
  local abi soname
  abi=$(sed -n 's/^#define KES_ABI_VERSION \([0-9]*\)$/\1/p' include/kestrel/kestrel.h)
  soname=$(readelf -d "$prefix/lib/libkestrel.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libkestrel.so.$abi" ] || fail "SONAME '$soname', expected libkestrel.so.$abi"
  # Exactly the C API's calls are exported (nm -D reads any ELF, the ARM ones too).
  bash tests/c_api_exports_test.sh "$prefix/lib/libkestrel.so" "$prefix/include/kestrel/kestrel.h"
}

# Builds examples/ against PREFIX into OUT, with find_package (OUT/cmake) and pkg-config
# (OUT/pc). Extra arguments go to the examples' CMake configure (the toolchain file).
build_examples() {
  local prefix=$1 out=$2
  shift 2
  cmake -S examples -B "$out/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_PREFIX_PATH=$prefix" "$@" > /dev/null
  cmake --build "$out/cmake" -j "$jobs" > /dev/null
  mkdir -p "$out/pc"
  PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" PKG_CONFIG_PATH="" \
    make -s -C examples "O=$out/pc" ${examples_make_args:-} > /dev/null
}

# Runs every example on MODEL (through EMULATOR..., none natively) and compares its output with
# the installed `kestrel run`'s.
compare_outputs() {
  local prefix=$1 out=$2 model=$3
  shift 3
  local expected=$work/expected.txt program
  "$@" "$prefix/bin/kestrel" run "$model" -p "$prompt" -n "$n_tokens" --temp 0 -t 1 \
    > "$expected" 2> /dev/null
  [ -s "$expected" ] || fail "kestrel run printed nothing on $model"
  for program in cmake/generate_c cmake/generate_cpp cmake/generate_c_static \
                 cmake/generate_cpp_static pc/generate_c pc/generate_cpp; do
    "$@" "$out/$program" "$model" "$prompt" "$n_tokens" > "$work/got.txt"
    if ! cmp -s "$expected" "$work/got.txt"; then
      echo "kestrel run:" >&2; cat "$expected" >&2
      echo "$program:" >&2; cat "$work/got.txt" >&2
      fail "$program's output on $model differs from kestrel run --temp 0's"
    fi
  done
  local shown
  shown=$(head -c 80 "$expected" | tr "\n" " " | tr -cd "[:print:]")
  echo "== $model: the 6 examples print what kestrel run prints: $shown"
}

stage_native() {
  local prefix=$work/native out=$work/examples-native
  install_into "$native_build" "$prefix"
  build_examples "$prefix" "$out"
  [ -f "$tiny_gguf" ] || fail "$tiny_gguf is missing: run the native Release tests first"
  [ -f "$smollm2_gguf" ] || fail "$smollm2_gguf is missing: run scripts/fetch-model.sh"
  "$prefix/bin/kestrel-convert" "$tiny_gguf" "$out/tiny.kes" > /dev/null
  "$prefix/bin/kestrel-convert" "$smollm2_gguf" "$out/smollm2.kes" > /dev/null
  compare_outputs "$prefix" "$out" "$out/tiny.kes"
  compare_outputs "$prefix" "$out" "$out/smollm2.kes"
}

stage_aarch64() {
  local prefix=$work/aarch64 out=$work/examples-aarch64
  install_into "$cross_build" "$prefix"
  file -L "$prefix/lib/libkestrel.so" | grep -q "ARM aarch64" || fail "not an aarch64 library"
  CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ build_examples "$prefix" "$out" \
    "-DCMAKE_TOOLCHAIN_FILE=$root/cmake/toolchains/aarch64-linux-gnu.cmake"
  file -L "$out/pc/generate_cpp" | grep -q "ARM aarch64" || fail "pkg-config build is not aarch64"
  [ -f "$tiny_gguf" ] || fail "$tiny_gguf is missing: run the native Release tests first"
  qemu-aarch64 "$prefix/bin/kestrel-convert" "$tiny_gguf" "$out/tiny.kes" > /dev/null
  compare_outputs "$prefix" "$out" "$out/tiny.kes" qemu-aarch64
}

# The static board build (scripts/build-board.sh aarch64, KESTREL_STATIC): no shared library, and
# Kestrel::kestrel is the static one; the examples linked fully static (-static) and run under
# qemu-aarch64 with no ARM libraries at all, as on a board.
stage_board() {
  local prefix=$work/board out=$work/examples-board
  install_into "$board_build" "$prefix"
  CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ examples_make_args=STATIC=1 \
    build_examples "$prefix" "$out" \
    "-DCMAKE_TOOLCHAIN_FILE=$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DCMAKE_EXE_LINKER_FLAGS=-static
  file -L "$out/cmake/generate_cpp" | grep -q "statically linked" || fail "not statically linked"
  file -L "$out/pc/generate_c" | grep -q "statically linked" || fail "not statically linked"
  [ -f "$tiny_gguf" ] || fail "$tiny_gguf is missing: run the native Release tests first"
  QEMU_LD_PREFIX=/nonexistent qemu-aarch64 "$prefix/bin/kestrel-convert" "$tiny_gguf" \
    "$out/tiny.kes" > /dev/null
  QEMU_LD_PREFIX=/nonexistent compare_outputs "$prefix" "$out" "$out/tiny.kes" qemu-aarch64
}

# A parent project taking Kestrel with HOW (add_subdirectory or fetchcontent).
stage_consumer() {
  local how=$1
  local dir=$work/consumer-$how
  mkdir -p "$dir"
  cp examples/c/generate.c "$dir/generate.c"
  cp examples/cpp/generate.cc "$dir/generate.cc"
  if [ "$how" = add_subdirectory ]; then
    local take="add_subdirectory(\"$root\" kestrel)"
  else
    local take="include(FetchContent)
FetchContent_Declare(kestrel SOURCE_DIR \"$root\")
FetchContent_MakeAvailable(kestrel)"
  fi
  cat > "$dir/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(consumer VERSION 2.0.0 LANGUAGES C CXX)
set(CMAKE_BUILD_TYPE Debug)
add_compile_options(-DCONSUMER_OPTION)
get_directory_property(before_compile_options COMPILE_OPTIONS)
get_directory_property(before_compile_definitions COMPILE_DEFINITIONS)
get_directory_property(before_link_options LINK_OPTIONS)
get_cmake_property(before_variables VARIABLES)
foreach(v \${before_variables})
  set("before_value_\${v}" "\${\${v}}")
endforeach()
$take
foreach(property COMPILE_OPTIONS COMPILE_DEFINITIONS LINK_OPTIONS)
  get_directory_property(after \${property})
  string(TOLOWER "before_\${property}" name)
  if(NOT "\${after}" STREQUAL "\${\${name}}")
    message(FATAL_ERROR "Kestrel changed the parent's \${property}: '\${\${name}}' -> '\${after}'")
  endif()
endforeach()
get_cmake_property(after_variables VARIABLES)
foreach(v \${after_variables})
  # New ones allowed: CMAKE_HAVE_*, find_package(Threads)'s cached checks, and CMAKE_INSTALL_*,
  # GNUInstallDirs' cache entries (the parent's own choice when it sets them first).
  if(v MATCHES "^CMAKE_" AND NOT v MATCHES "^CMAKE_MATCH_")
    if(DEFINED "before_value_\${v}")
      if(NOT "\${\${v}}" STREQUAL "\${before_value_\${v}}")
        message(FATAL_ERROR "Kestrel changed the parent's \${v} to '\${\${v}}'")
      endif()
    elseif(NOT v MATCHES "^CMAKE_(HAVE|INSTALL)_")
      message(FATAL_ERROR "Kestrel set the parent's \${v} to '\${\${v}}'")
    endif()
  endif()
endforeach()
foreach(target c_api_test kestrel_test_support kestrel_fuzz_support)
  if(TARGET \${target})
    message(FATAL_ERROR "a parent project got Kestrel's \${target}: tests are for Kestrel alone")
  endif()
endforeach()
add_executable(consumer_c generate.c)
target_link_libraries(consumer_c PRIVATE Kestrel::kestrel)
add_executable(consumer_cpp generate.cc)
set_target_properties(consumer_cpp PROPERTIES CXX_STANDARD 17)
target_link_libraries(consumer_cpp PRIVATE Kestrel::kestrel_static)
EOF
  local build=$dir/build
  cmake -S "$dir" -B "$build" -G Ninja > "$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log" >&2
    fail "the $how consumer does not configure"
  }
  # The schema header flatc generates goes into Kestrel's own binary folder, not the parent's.
  local kestrel_build=kestrel
  if [ "$how" = fetchcontent ]; then kestrel_build=_deps/kestrel-build; fi
  grep -q "build $kestrel_build/generated/kestrel_generated.h" "$build/build.ninja" ||
    fail "$how: the generated schema header is not under Kestrel's binary folder"
  if [ "$full" = 1 ]; then
    cmake --build "$build" -j "$jobs" --target consumer_c consumer_cpp kestrel-convert
    [ -f "$tiny_gguf" ] || fail "$tiny_gguf is missing: run the native Release tests first"
    "$build/$kestrel_build/kestrel-convert" "$tiny_gguf" "$dir/tiny.kes" > /dev/null
    "$build/consumer_c" "$dir/tiny.kes" "$prompt" "$n_tokens" > "$work/c.txt"
    "$build/consumer_cpp" "$dir/tiny.kes" "$prompt" "$n_tokens" > "$work/cpp.txt"
    cmp "$work/c.txt" "$work/cpp.txt" || fail "$how: the C and C++ consumers differ"
  else
    ninja -C "$build" -n consumer_c consumer_cpp > /dev/null
    ninja -C "$build" CMakeFiles/consumer_c.dir/generate.c.o \
      CMakeFiles/consumer_cpp.dir/generate.cc.o > /dev/null
  fi
  echo "== $how consumer: configured$([ "$full" = 1 ] && echo ", built and ran" || echo \
    " and compiled"); nothing leaked into the parent"
}

for stage in "${stages[@]}"; do
  start=$(date +%s)
  case "$stage" in
    native) stage_native ;;
    aarch64) stage_aarch64 ;;
    board) stage_board ;;
    consumers)
      for how in ${KESTREL_INSTALL_CONSUMERS:-add_subdirectory fetchcontent}; do
        stage_consumer "$how"
      done ;;
  esac
  echo "== test-install $stage: $(( $(date +%s) - start )) s"
done
