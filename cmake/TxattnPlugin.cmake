# SPDX-License-Identifier: MIT
# txattn_add_plugin(<name> SOURCES <files...> [LIBS <libs...>] [OUTPUT_DIR <dir>] [NO_INSTALL])
# Builds plugins/<name> as lib<...> "txattn_<name>.so" with hidden visibility into the plugin directory.
# Per-ISA sources are added afterwards with txattn_isa_sources() (below): it gives them their flags.
function(txattn_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  set(target "txattn_plugin_${name}")
  add_library(${target} MODULE ${ARG_SOURCES})
  target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/include")
  if(ARG_LIBS)
    target_link_libraries(${target} PRIVATE ${ARG_LIBS})
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${TXATTN_PLUGIN_BUILD_DIR}")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME "txattn_${name}"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIR}")
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  # The loader refuses plugin files and directories that group or others can write; a umask of 002
  # would make them so in the build tree.
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w "$<TARGET_FILE:${target}>" "$<TARGET_FILE_DIR:${target}>" VERBATIM)
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${TXATTN_PLUGIN_INSTALL_DIR}")
  endif()
endfunction()

# txattn_add_team_test_plugin(<name> DEFINE <macro> SOURCES <files...> [LIBS <libs...>])
# For a threaded plugin: a test build <name>_test_team of it, compiled with <macro> defined (the
# plugin then starts a team for any work and splits it as finely as it can), into a directory of
# its own, and the ctests <name>_test_team_check_2 and _3: `txtune check` over it runs every
# battery shape through the parallel paths, with 2 threads and oversubscribed; and
# <name>_test_team_check_alone: the same plans on 2 threads run by a team of one
# (OMP_THREAD_LIMIT=1), as the team watch (plugins/common/team_watch.h) runs them when it caps
# the team. Under the sanitizers (TXATTN_SANITIZE) they run the battery's quick part: the test
# builds split any work as finely as they can, so its small shapes still take every parallel path.
function(txattn_add_team_test_plugin name)
  cmake_parse_arguments(ARG "" "DEFINE" "SOURCES;LIBS" ${ARGN})
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/test-team-plugins")
  txattn_add_plugin(${name}_test_team SOURCES ${ARG_SOURCES} LIBS ${ARG_LIBS} OUTPUT_DIR "${dir}"
                    NO_INSTALL)
  target_compile_definitions(txattn_plugin_${name}_test_team PRIVATE ${ARG_DEFINE})
  set(battery)
  if(TXATTN_SANITIZE)
    set(battery --quick)
  endif()
  foreach(threads 2 3)
    add_test(NAME ${name}_test_team_check_${threads}
             COMMAND txtune check ${battery} --plugin-path "${dir}" --threads ${threads})
  endforeach()
  add_test(NAME ${name}_test_team_check_alone
           COMMAND txtune check ${battery} --plugin-path "${dir}" --threads 2)
  set_tests_properties(${name}_test_team_check_alone PROPERTIES ENVIRONMENT OMP_THREAD_LIMIT=1)
endfunction()

# txattn_isa_sources(<target> [SCALAR <files...>] [AVX2 <files...>] [AVX512 <files...>]
#                    [NEON <files...>])
# Adds each ISA's sources to <target> with the flags that ISA's code is compiled with, and only when
# the target architecture has that ISA: SCALAR everywhere (no flags), AVX2 and AVX512 on x86-64,
# NEON on arm64 (Advanced SIMD is baseline there: no flags). The sources' C code guards the matching
# declarations with __x86_64__ / __aarch64__. Flags are set on the source files, not the target, so
# the rest of the target stays runnable on any CPU of the architecture; a file listed for two
# targets of one directory must be listed under the same ISA for both.
function(txattn_isa_sources target)
  set(isas SCALAR AVX2 AVX512 NEON)
  cmake_parse_arguments(ARG "" "" "${isas}" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "txattn_isa_sources(${target}): expected SCALAR, AVX2, AVX512 or NEON "
                        "before ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(flags_SCALAR "")
  set(flags_AVX2 -mavx2 -mfma -mf16c)
  # DQ/BW/VL as well: the kernels' ISA check (TXATTN_ISA_AVX512) requires all four
  set(flags_AVX512 -mavx512f -mavx512dq -mavx512bw -mavx512vl -mavx2 -mfma -mf16c)
  set(flags_NEON "")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(have SCALAR AVX2 AVX512)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(have SCALAR NEON)
  else()
    set(have SCALAR)
  endif()
  foreach(isa IN LISTS have)
    if(NOT ARG_${isa})
      continue()
    endif()
    target_sources(${target} PRIVATE ${ARG_${isa}})
    if(flags_${isa})
      set_property(SOURCE ${ARG_${isa}} TARGET_DIRECTORY ${target}
                   PROPERTY COMPILE_OPTIONS ${flags_${isa}})
    endif()
  endforeach()
endfunction()
