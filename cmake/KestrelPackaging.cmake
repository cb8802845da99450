# Kestrel as a library for other programs (docs/install.md): the static libkestrel.a beside the
# shared libkestrel.so, the Kestrel:: targets (the same names after add_subdirectory, FetchContent
# and find_package), and what `cmake --install` puts under the prefix: the two programs, both
# libraries, include/kestrel/*.h and *.hpp, KestrelConfig.cmake with its version file, kestrel.pc.
# Included from the top CMakeLists.txt once the C API's targets exist.

# The shared library's SOVERSION is the C ABI version, read from the header so the two cannot
# drift: a program linked against libkestrel.so.1 keeps working until KES_ABI_VERSION changes.
# (An edit of the header re-runs CMake, so a raised version reaches the SONAME.)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/include/kestrel/kestrel.h)
file(STRINGS ${PROJECT_SOURCE_DIR}/include/kestrel/kestrel.h kestrel_abi_line
     REGEX "^#define KES_ABI_VERSION [0-9]+$")
string(REGEX REPLACE "^#define KES_ABI_VERSION ([0-9]+)$" "\\1" KESTREL_ABI_VERSION
       "${kestrel_abi_line}")
if(NOT KESTREL_ABI_VERSION MATCHES "^[0-9]+$")
  message(FATAL_ERROR "include/kestrel/kestrel.h: expected one line '#define KES_ABI_VERSION <n>', "
                      "found '${kestrel_abi_line}'")
endif()

# libkestrel.a: the C API and everything under it in one archive, so that a program links it
# alone (plus the system libraries below). Built from the object files the in-tree static
# libraries were already compiled into ($<TARGET_OBJECTS> of a static library, CMake 3.15+):
# nothing is compiled twice, and no archiver script (ar -M) ties it to GNU ar. Code Kestrel
# builds from source goes in (Highway's runtime, kissfft and libsamplerate in KESTREL_STATIC
# builds); libraries found on the system stay link dependencies. Without audio
# (KESTREL_WITH_AUDIO=OFF) there is no kestrel_audio, and the transcriber's objects are the
# refusals (KESTREL_C_TRANSCRIBE).
set(kestrel_static_parts kestrel_c_objects ${KESTREL_C_TRANSCRIBE} kestrel_converter
    ${KESTREL_AUDIO_TARGETS} kestrel_runtime kestrel_ops)
foreach(part kestrel_hwy kestrel_kissfft kestrel_samplerate)
  if(TARGET ${part})
    list(APPEND kestrel_static_parts ${part})
  endif()
endforeach()
set(kestrel_static_objects)
foreach(part ${kestrel_static_parts})
  list(APPEND kestrel_static_objects $<TARGET_OBJECTS:${part}>)
endforeach()
add_library(kestrel_static STATIC ${kestrel_static_objects})
set_target_properties(kestrel_static PROPERTIES OUTPUT_NAME kestrel EXPORT_NAME kestrel_static
                      LINKER_LANGUAGE CXX)
# Sanitizer and fuzz builds are for testing, never installed: their archive (about 160 MB under
# ASan) is built only when a target asks for it, which saves CI's disk and a minute of archiving.
set(kestrel_testing_build OFF)
if(KESTREL_SANITIZE OR KESTREL_TSAN OR KESTREL_FUZZ)
  set(kestrel_testing_build ON)
  set_target_properties(kestrel_static PROPERTIES EXCLUDE_FROM_ALL ON)
endif()
target_include_directories(kestrel_static PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# Its link dependencies, for CMake consumers (here and in the installed KestrelTargets.cmake) and
# for pkg-config (Libs.private). In the build tree the libraries found above, by path; installed,
# by name, so that the installed files name no path of this machine.
set(kestrel_static_links Threads::Threads)
set(kestrel_pc_libs_private)
if(NOT KESTREL_HWY_FROM_SOURCE)
  list(APPEND kestrel_static_links ${KESTREL_HWY_LIBS})
  list(APPEND kestrel_pc_libs_private -lhwy -lhwy_contrib)
endif()
list(APPEND kestrel_static_links $<BUILD_INTERFACE:${KESTREL_UTF8PROC_LIB}>
     $<INSTALL_INTERFACE:utf8proc>)
list(APPEND kestrel_pc_libs_private -lutf8proc)
if(NOT KESTREL_WITH_AUDIO)
  # A text-only library links neither kissfft nor libsamplerate.
elseif(TARGET kestrel_kissfft)
  list(APPEND kestrel_static_links m)
else()
  list(APPEND kestrel_static_links $<BUILD_INTERFACE:${KESTREL_KISSFFT_LIB}>
       $<INSTALL_INTERFACE:kissfft-float> $<BUILD_INTERFACE:${KESTREL_SAMPLERATE_LIB}>
       $<INSTALL_INTERFACE:samplerate>)
  list(APPEND kestrel_pc_libs_private -lkissfft-float -lsamplerate)
endif()
target_link_libraries(kestrel_static PUBLIC ${kestrel_static_links})
list(APPEND kestrel_pc_libs_private -lstdc++ -lm -pthread)
string(REPLACE ";" " " kestrel_pc_libs_private "${kestrel_pc_libs_private}")

# The names a consumer uses, whichever way it gets Kestrel. Static board builds (KESTREL_STATIC)
# make no shared library: there Kestrel::kestrel is the static one.
if(TARGET kestrel_shared)
  set_target_properties(kestrel_shared PROPERTIES VERSION ${PROJECT_VERSION}
                        SOVERSION ${KESTREL_ABI_VERSION} EXPORT_NAME kestrel)
  add_library(Kestrel::kestrel ALIAS kestrel_shared)
else()
  add_library(Kestrel::kestrel ALIAS kestrel_static)
endif()
add_library(Kestrel::kestrel_static ALIAS kestrel_static)

# ---- cmake --install ------------------------------------------------------------------------
# On by default inside a parent project too: a parent that links Kestrel::kestrel and installs
# its program needs libkestrel.so installed beside it.
set(kestrel_install_default ON)
if(kestrel_testing_build)
  set(kestrel_install_default OFF)
endif()
option(KESTREL_INSTALL
       "Install the libraries, headers, programs, CMake and pkg-config files (cmake --install)"
       ${kestrel_install_default})
if(NOT KESTREL_INSTALL)
  return()
endif()
include(CMakePackageConfigHelpers)
set(KESTREL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kestrel)
install(TARGETS kestrel kestrel-convert RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(kestrel_installed_libraries kestrel_static)
if(TARGET kestrel_shared)
  list(APPEND kestrel_installed_libraries kestrel_shared)
endif()
install(TARGETS ${kestrel_installed_libraries} EXPORT KestrelTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kestrel/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kestrel
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(EXPORT KestrelTargets NAMESPACE Kestrel:: DESTINATION ${KESTREL_CMAKE_DIR})

set(KESTREL_CONFIG_NEEDS_HWY OFF)
if(NOT KESTREL_HWY_FROM_SOURCE)
  set(KESTREL_CONFIG_NEEDS_HWY ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KestrelConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/KestrelConfig.cmake
                              INSTALL_DESTINATION ${KESTREL_CMAKE_DIR})
# 0.x releases count as one major version here; KES_ABI_VERSION is the C ABI's promise.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KestrelConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KestrelConfig.cmake
              ${PROJECT_BINARY_DIR}/KestrelConfigVersion.cmake
        DESTINATION ${KESTREL_CMAKE_DIR})

# kestrel.pc, relocatable: its prefix is found from where the file lies (${pcfiledir}), so
# `cmake --install --prefix ANYWHERE` gives a working file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KESTREL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
  set(KESTREL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH kestrel_pc_up /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
  string(REGEX REPLACE "/$" "" kestrel_pc_up "${kestrel_pc_up}")
  set(KESTREL_PC_PREFIX "\${pcfiledir}/${kestrel_pc_up}")
  set(KESTREL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(KESTREL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(KESTREL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(KESTREL_PC_LIBS_PRIVATE "${kestrel_pc_libs_private}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kestrel.pc.in ${PROJECT_BINARY_DIR}/kestrel.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kestrel.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
