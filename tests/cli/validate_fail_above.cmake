# SPDX-License-Identifier: MIT
# txtune validate --fail-above on a table whose pick is provably slow (tests/cli/CMakeLists.txt): the
# pick waits 50 ms a call and the fastest candidate is the same kernel without the wait, so the
# regret is far above 2 and far below 1e6 on any machine, under any load or emulator.
#   cmake -DTXTUNE="<emulator;exe>" -DSPIN_TABLE="<emulator;exe>" -DSPIN_PLUGIN_PATH=<dir>
#         -DOUT=<table file> -P validate_fail_above.cmake
function(run name expect match)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT "${status}" STREQUAL "${expect}")
    message(FATAL_ERROR "${name}: exit status ${status}, expected ${expect}: ${ARGN}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${match}")
    message(FATAL_ERROR "${name}: output does not match '${match}': ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${name}: ok\n${out}")
endfunction()

file(REMOVE "${OUT}")
run(table 0 "" ${SPIN_TABLE} "${SPIN_PLUGIN_PATH}" "${OUT}" 50000)
set(_validate ${TXTUNE} validate --table "${OUT}" --plugin-path "${SPIN_PLUGIN_PATH}" --samples 1)
run(fail 1 "spin.scalar spin_us=50000.*spin.scalar spin_us=0.*geometric mean [0-9.]+.*FAIL: the geometric mean of the regret, [0-9.]+, exceeds 2 \\(--fail-above\\)\nFAIL: the worst regret, [0-9.]+, exceeds 2 \\(--fail-above\\)"
    ${_validate} --fail-above 2,2)
run(pass 0 "PASS: geometric mean [0-9.]+ <= 1e\\+06 and worst [0-9.]+ <= 1e\\+06 \\(--fail-above\\)"
    ${_validate} --fail-above 1e6,1e6)
# without the option the regret is printed, not judged
run(unjudged 0 "regret over 1 shapes off the grid.*worst [0-9.]+ \\(target <= 1.25\\)\n$"
    ${_validate})
