# SPDX-License-Identifier: MIT
# Installs libtxattn, its headers and the files that let other projects find it: a CMake package
# (find_package(txattn) -> txattn::txattn) and a pkg-config file. Plugins and txtune install themselves
# (cmake/TxattnPlugin.cmake, tuner/). Both package files are relocatable: they locate the install from
# their own path, so `cmake --install build --prefix DIR` gives a working package in any DIR.
include(CMakePackageConfigHelpers)

set(TXATTN_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/txattn")

install(TARGETS txattn EXPORT txattnTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
# the plugin scanner, found beside the library (core/scan/scan_spawn.c)
install(TARGETS txattn_scan RUNTIME DESTINATION "${CMAKE_INSTALL_LIBDIR}/txattn")
# plugin.h is the plugin ABI's documentation as well as its definition; table.h is txtune's, not
# installed (docs/architecture.md)
install(FILES "${PROJECT_SOURCE_DIR}/include/txattn/txattn.h" "${PROJECT_SOURCE_DIR}/include/txattn/plugin.h"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/txattn")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DOCDIR}")

install(EXPORT txattnTargets NAMESPACE txattn:: DESTINATION "${TXATTN_CMAKE_INSTALL_DIR}")
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/txattnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/txattnConfig.cmake"
  INSTALL_DESTINATION "${TXATTN_CMAKE_INSTALL_DIR}"
  PATH_VARS TXATTN_PLUGIN_INSTALL_DIR)
# 0.x: a minor release may change the API, so only the same minor version is compatible
write_basic_package_version_file("${PROJECT_BINARY_DIR}/txattnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/txattnConfig.cmake" "${PROJECT_BINARY_DIR}/txattnConfigVersion.cmake"
  DESTINATION "${TXATTN_CMAKE_INSTALL_DIR}")

# pkg-config: paths relative to ${pcfiledir} unless the install dirs were given as absolute paths
set(TXATTN_PC_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(TXATTN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(TXATTN_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(TXATTN_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _txattn_pc_up "/p/${TXATTN_PC_INSTALL_DIR}" "/p") # "../.." for lib/pkgconfig
  string(REGEX REPLACE "/$" "" _txattn_pc_up "${_txattn_pc_up}")
  set(TXATTN_PC_PREFIX "\${pcfiledir}/${_txattn_pc_up}")
  set(TXATTN_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(TXATTN_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/txattn.pc.in" "${PROJECT_BINARY_DIR}/txattn.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/txattn.pc" DESTINATION "${TXATTN_PC_INSTALL_DIR}")

# Installs this build into a temporary prefix and builds examples/ against it both ways. Not in a cross
# build: the script builds and runs the example and txtune natively, without the emulator.
if(BUILD_TESTING AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME install_consumer
    COMMAND bash "${PROJECT_SOURCE_DIR}/examples/install_test.sh" "${PROJECT_BINARY_DIR}")
  set(_txattn_install_test_env
    "CMAKE=${CMAKE_COMMAND}" "CC=${CMAKE_C_COMPILER}"
    "TXATTN_LIBDIR=${CMAKE_INSTALL_LIBDIR}" "TXATTN_TEST_SANITIZE=$<BOOL:${TXATTN_SANITIZE}>")
  set_tests_properties(install_consumer PROPERTIES ENVIRONMENT "${_txattn_install_test_env}" TIMEOUT 600)
endif()
