# SPDX-License-Identifier: MIT
# The hostile test plugins (issue 19): hostile_plugin.c built once per fault mode, each into a
# directory of its own (mode 0755, as an installed plugin's), never installed. Included from
# tests/cli/CMakeLists.txt, so they exist wherever txtune's tests are built; the variables are
# cache entries so that tests/ (added after tests/cli) sees them too:
#   TXATTN_HOSTILE_MODES        the fault modes (below) the plugin scanner quarantines; not the
#                               cheats, exact on their first calls, which pass the scanner (only
#                               txtune profile's checks of later calls catch them)
#   TXATTN_HOSTILE_PLUGIN_ROOT  the directory holding one directory per mode
#   TXATTN_HOSTILE_DIR_<mode>   that mode's directory, holding txattn_hostile_<mode>.so alone
# Plugin <mode> is named "h<mode>" and has one kernel, "h<mode>.scalar" (speed_hint 1e6); its
# target is txattn_plugin_hostile_<mode>, and the target txattn_hostile_plugins builds them all.
set(_hostile_modes
  entry_data           # txattn_plugin_entry is a data object, not a function
  ctor_segv            # a constructor raises SIGSEGV (at dlopen)
  ctor_exit            # a constructor calls exit(42) (at dlopen)
  app_segv             # applicable() raises SIGSEGV
  app_loop             # applicable() spins forever
  run_segv             # run() raises SIGSEGV
  run_sigill           # run() raises SIGILL
  run_abort            # run() calls abort()
  run_loop             # run() spins forever
  run_exit             # run() calls exit(3)
  run_past_o           # run() is exact, then writes 64 floats (1e30) just past the end of o
  run_past_ws          # asks for a 4096-byte workspace, writes 64 floats past its end
  run_wrong            # every output element off by 1e-3
  run_nan              # exact but a NaN in column 0 of every row
  run_wrong_above_300  # off by 1e-3 only when n_kv > 300
  run_prints           # exact, but prints a line on stdout every call
  run_hang_once        # blocks forever on its first call: the first in the process, or with
                       # TXATTN_TEST_HANG_ONCE_FILE=<path>, the first of whichever process creates it
  run_segv_above_300   # raises SIGSEGV only when n_kv > 300 (beyond the check shapes)
  run_loop_above_300   # spins forever only when n_kv > 300
  run_fork_hang        # forks a child (comm "hfork_hang_kid", ends itself after 60 s) and both block
)
set(_cheat_modes
  run_sleeper          # exact on its first 3 calls of each shape, then returns TXATTN_OK unwritten
  run_stale            # exact on its first 3 calls of each shape, then copies its last exact output
)
set(_hostile_root "${PROJECT_BINARY_DIR}/tests/hostile-plugins")
set(TXATTN_HOSTILE_MODES "${_hostile_modes}" CACHE INTERNAL "hostile plugin fault modes")
set(TXATTN_HOSTILE_PLUGIN_ROOT "${_hostile_root}" CACHE INTERNAL "hostile plugins' directories")
add_custom_target(txattn_hostile_plugins)
foreach(mode IN LISTS _hostile_modes _cheat_modes)
  string(TOUPPER "${mode}" _upper)
  set(_dir "${_hostile_root}/${mode}")
  set(TXATTN_HOSTILE_DIR_${mode} "${_dir}" CACHE INTERNAL "hostile plugin ${mode}'s directory")
  txattn_add_plugin(hostile_${mode}
    SOURCES "${PROJECT_SOURCE_DIR}/tests/plugins/hostile/hostile_plugin.c"
            "${PROJECT_SOURCE_DIR}/tests/plugins/exact_kernel.c"
            "${PROJECT_SOURCE_DIR}/tests/support/oracle.c"
    LIBS m OUTPUT_DIR "${_dir}" NO_INSTALL)
  target_include_directories(txattn_plugin_hostile_${mode} PRIVATE
    "${PROJECT_SOURCE_DIR}/tests/plugins" "${PROJECT_SOURCE_DIR}/tests/support")
  target_compile_definitions(txattn_plugin_hostile_${mode} PRIVATE
    HOSTILE_${_upper} HOSTILE_NAME="h${mode}")
  # the loader refuses a plugin below a directory others can write: the root too
  add_custom_command(TARGET txattn_plugin_hostile_${mode} POST_BUILD
    COMMAND chmod 0755 "${_hostile_root}" "${_dir}" VERBATIM)
  add_dependencies(txattn_hostile_plugins txattn_plugin_hostile_${mode})
endforeach()
