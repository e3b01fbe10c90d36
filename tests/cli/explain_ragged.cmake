# SPDX-License-Identifier: MIT
# txtune explain --kv-lens: a ragged batch follows the table's ragged class where it has one (its
# winner, tiled.scalar, is picked), else the dense decode class of its capacity, as if padded (its
# winner, naive.scalar). The tables are written for this machine by ragged_table.
#   cmake -DTXTUNE="<emulator;exe>" -DRAGGED_TABLE="<emulator;exe>" -DPLUGIN_PATH=<dir>
#         -DOUT=<table file prefix> -P explain_ragged.cmake
function(run name match)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0 OR NOT "${out}${err}" MATCHES "${match}")
    message(FATAL_ERROR "${name}: exit status ${status}, or no match for '${match}': ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${name}: ok\n${out}")
endfunction()

set(_explain ${TXTUNE} explain --n 1 --d 16 --mask causal --threads 1 --plugin-path "${PLUGIN_PATH}"
             --kv-lens 100,2000,0,700,1500,3000,1,900)
foreach(with 1 0)
  file(REMOVE "${OUT}-${with}.json")
  run(table_${with} "" ${RAGGED_TABLE} "${PLUGIN_PATH}" "${OUT}-${with}.json" ${with})
endforeach()
run(ragged_class
    "problem: b=8 n_q=1 n_kv=3000 d=16 causal kv_lens=100,2000,0,700,1500,3000,1,900, 1 thread\ntable: loaded [^\n]*\nchoice: tiled\\.scalar [^\n]*ragged[^\n]*\nwhy: table: [^\n]*\\(class causal d16/16 g1 t1 decode ragged\\)[^\n]*\nclass: causal d16/16 g1 t1 decode ragged, at n=3000\nmeasured around it[^\n]*\n  n=1024: tiled\\.scalar [^\n]*\n  n=4096: tiled\\.scalar "
    ${_explain} --table "${OUT}-1.json")
run(as_if_padded
    "choice: naive\\.scalar [^\n]*ragged[^\n]*\nwhy: table: [^\n]*\\(class causal d16/16 g1 t1 decode, no ragged class: as if padded\\)[^\n]*\nclass: causal d16/16 g1 t1 decode ragged, which the table does not have\nclass: causal d16/16 g1 t1 decode, as if padded, at n=3000\nmeasured around it[^\n]*\n  n=1024: naive\\.scalar [^\n]*\n  n=4096: naive\\.scalar "
    ${_explain} --table "${OUT}-0.json")
# the same shape without --kv-lens is a dense decode of batch 8, which the dense class answers
run(dense "choice: naive\\.scalar [^\n]*\nwhy: table: [^\n]*\\(class causal d16/16 g1 t1 decode\\)"
    ${TXTUNE} explain --n 1 --n-kv 3000 --batch 8 --d 16 --mask causal --threads 1
    --plugin-path "${PLUGIN_PATH}" --table "${OUT}-1.json")
