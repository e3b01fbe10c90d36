# SPDX-License-Identifier: MIT
# txtune list and txtune check --quick with every hostile plugin (tests/plugins/hostile) on the
# plugin path at once: both end normally (exit 0), list names each file as quarantined by the
# plugin scanner, check passes the build's own naive kernel, and nothing a plugin prints reaches
# txtune's output.
#   cmake -DTXTUNE=<txtune> -DHOSTILE_ROOT=<dir> -DMODES="<mode;...>" -DPLUGINS=<build plugin dir>
#         -DWORK=<scratch dir> -P scan_cli.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
# a registry of its own, scanned from empty (list scans, check reads the verdicts); the hung modes
# give up after 2 s
set(ENV{TXATTN_SCAN_REGISTRY} "${WORK}/registry")
set(ENV{TXATTN_SCAN_TIMEOUT} 2)
unset(ENV{TXATTN_TRUSTED_PLUGIN_DIRS})
set(path "")
foreach(mode IN LISTS MODES)
  string(APPEND path "${HOSTILE_ROOT}/${mode}:")
endforeach()
string(APPEND path "${PLUGINS}")
set(failures "")
execute_process(COMMAND "${TXTUNE}" list --plugin-path "${path}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0" OR out MATCHES "(^|\n)hrun_prints")
  string(APPEND failures "list: exit ${status}\n")
endif()
foreach(mode IN LISTS MODES)
  if(NOT out MATCHES "txattn_hostile_${mode}\\.so\n +quarantined by the plugin scanner: ")
    string(APPEND failures "list: txattn_hostile_${mode}.so is not listed as quarantined\n")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}${out}${err}")
endif()
execute_process(COMMAND "${TXTUNE}" check --quick --kernel naive.scalar --plugin-path "${path}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0" OR NOT out MATCHES "PASS: 1 kernel exact" OR out MATCHES "(^|\n)hrun_prints")
  message(FATAL_ERROR "check --quick: exit ${status}\n${out}${err}")
endif()
