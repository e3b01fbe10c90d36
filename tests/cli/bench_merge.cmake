# SPDX-License-Identifier: MIT
# txtune bench --merge P (issue 20) on small shapes: every kernel measured reports a `merge` object
# whose parts are the keys split as evenly as possible, whose times were measured, and whose merged
# result is exact (o and lse each within its bound); the run passes. No timing is asserted.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<dir> -P bench_merge.cmake
function(check_merge parts n_kv min max)
  set(json "${OUT}/bench_merge_${parts}.json")
  execute_process(
    COMMAND ${TXTUNE} bench ${ARGN} --n-kv ${n_kv} --merge ${parts} --threads 2 --reps 1
            --min-time 1 --json
    RESULT_VARIABLE status OUTPUT_FILE "${json}" ERROR_VARIABLE err)
  file(READ "${json}" doc)
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "bench --merge ${parts}: exit status ${status}\n${doc}${err}")
  endif()
  string(JSON shape GET "${doc}" shape)
  string(JSON pass GET "${doc}" pass)
  if(NOT shape MATCHES " lse merge=${parts}$" OR NOT pass STREQUAL "ON")
    message(FATAL_ERROR "bench --merge ${parts}: shape '${shape}', pass ${pass}")
  endif()
  string(JSON n LENGTH "${doc}" kernels)
  math(EXPR last "${n} - 1")
  set(merged "")
  foreach(k RANGE ${last})
    string(JSON name GET "${doc}" kernels ${k} name)
    string(JSON state GET "${doc}" kernels ${k} status)
    if(NOT state STREQUAL "ok")
      continue()
    endif()
    # GET fails (and so the test) where a documented field is missing
    foreach(f parts part_keys_min part_keys_max call_s partials_s merge_s merge_share x_partials
              max_rel_error error_of_bound max_lse_error lse_error_of_bound exact)
      string(JSON ${f} GET "${doc}" kernels ${k} merge ${f})
    endforeach()
    if(NOT parts EQUAL ${parts} OR NOT part_keys_min EQUAL ${min} OR NOT part_keys_max EQUAL ${max})
      message(FATAL_ERROR "${name}: ${parts} parts of ${part_keys_min}..${part_keys_max} keys")
    endif()
    if(NOT exact STREQUAL "ON" OR NOT error_of_bound LESS_EQUAL 1
       OR NOT lse_error_of_bound LESS_EQUAL 1 OR NOT max_rel_error GREATER_EQUAL 0)
      message(FATAL_ERROR "${name}: merged result exact ${exact}, error ${error_of_bound} and "
                          "lse error ${lse_error_of_bound} of their bounds")
    endif()
    if(NOT call_s GREATER 0 OR NOT partials_s GREATER 0 OR NOT merge_s GREATER 0
       OR NOT merge_share GREATER 0 OR merge_share GREATER 1)
      message(FATAL_ERROR "${name}: call ${call_s} s, partials ${partials_s} s, merge ${merge_s} s, "
                          "share ${merge_share}")
    endif()
    list(APPEND merged "${name}")
  endforeach()
  if(NOT merged)
    message(FATAL_ERROR "bench --merge ${parts}: no kernel was merged\n${doc}")
  endif()
  message(STATUS "merge of ${parts}: ${merged}")
endfunction()

check_merge(3 700 233 234 --n 1 --d 32 --heads 4 --heads-kv 2)
check_merge(2 301 150 151 --n 17 --d 16 --heads 2 --heads-kv 1)
