# txtune profile end to end on a tiny grid: it writes a table, `txtune show` finds it fits this
# machine, and libtxattn follows it (`txtune explain` says the choice comes from the table). No
# timing is asserted: which kernel wins is the machine's business.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<table file> -P profile_smoke.cmake
function(run name match)
  execute_process(COMMAND ${TXTUNE} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT "${status}" STREQUAL "0")
    message(FATAL_ERROR "${name}: exit status ${status}: ${ARGN}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${match}")
    message(FATAL_ERROR "${name}: output does not match '${match}': ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${name}: ok\n${out}")
endfunction()

file(REMOVE "${OUT}")
run(profile "wrote .*: [1-9][0-9]* points.*who wins where.*none d16/16 g1 t1 .*causal d16/16 g1 t1 decode"
    profile --quick --d 16 --n-max 256 --threads 1,2 --budget 20 -o "${OUT}")
run(show "here: fits this machine.*class none d16/16 g1 t1" show "${OUT}")
set(ENV{TXATTN_TABLE} "${OUT}")
run(explain "why: table: (region|interpolated|measured point)" explain --n 128 --d 16 --threads 1)
run(explain_window "why: table: (region|interpolated|measured point)"
    explain --n 100 --d 16 --threads 2 --mask window --left 40 --right 40)
