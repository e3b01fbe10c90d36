# SPDX-License-Identifier: MIT
# txtune bench --roofline pairs a decode's timed runs with read-bandwidth runs: on a tiny sweep of a
# decode (n 1) and a prefill (n 4), every measured kernel of the decode (one timed alone on 1
# thread, two settings of one timed interleaved on 2) has a "paired" object with at least one pair
# and positive, ordered fractions, the prefill has none, and the text shows the column and says how
# it is computed. No timing is asserted.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<file.json> -P bench_roofline_paired.cmake
set(args bench --roofline --n 1,4 --n-kv 256 --d 16 --heads 4 --heads-kv 2 --threads 2 --reps 3
         --min-time 1 --gemm-n 64 --stream-mib 2 --kernel naive.scalar,tiled_omp.scalar
         --tunable block_k=32,block_k=64)
file(REMOVE "${OUT}")
execute_process(COMMAND ${TXTUNE} ${args} -o "${OUT}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0")
  message(FATAL_ERROR "bench --roofline: exit status ${status}\n${out}${err}")
endif()
if(NOT out MATCHES "n_q=1 [^\n]*\n.*PAIRED % READ \\(RANGE, PAIRS\\)\n[^\n]*naive\\.scalar [^\n]* [0-9.]+% \\([0-9.]+-[0-9.]+, [1-9][0-9]*\\)\n.*PAIRED % READ: each timed run of the kernel came right after a read run")
  message(FATAL_ERROR "bench --roofline: no paired column or legend for the decode\n${out}${err}")
endif()

file(READ "${OUT}" doc)
set(fields fraction_min fraction_q1 fraction_median fraction_q3 fraction_max)
foreach(point 0 1)
  string(JSON n_q GET "${doc}" points ${point} problem n_q)
  string(JSON n_kernels LENGTH "${doc}" points ${point} kernels)
  set(checked 0)
  math(EXPR last "${n_kernels} - 1")
  foreach(k RANGE ${last})
    string(JSON state GET "${doc}" points ${point} kernels ${k} status)
    string(JSON name GET "${doc}" points ${point} kernels ${k} name)
    if(NOT state STREQUAL "ok")
      message(FATAL_ERROR "${OUT}: ${name} at n_q ${n_q} is '${state}'")
    endif()
    string(JSON type TYPE "${doc}" points ${point} kernels ${k} roofline paired)
    if(NOT n_q EQUAL 1)
      if(NOT type STREQUAL "NULL")
        message(FATAL_ERROR "${OUT}: ${name} at n_q ${n_q} (not a decode) has paired runs")
      endif()
      math(EXPR checked "${checked} + 1")
      continue()
    endif()
    if(NOT type STREQUAL "OBJECT")
      message(FATAL_ERROR "${OUT}: ${name} at n_q 1 has no paired object (${type})")
    endif()
    string(JSON pairs GET "${doc}" points ${point} kernels ${k} roofline paired pairs)
    string(JSON gbs GET "${doc}" points ${point} kernels ${k} roofline paired read_gbs_median)
    if(NOT pairs MATCHES "^[0-9]+$" OR pairs LESS 1 OR pairs GREATER 2 OR NOT gbs GREATER 0)
      message(FATAL_ERROR "${OUT}: ${name}: ${pairs} pairs (3 runs: 1 or 2), read ${gbs} GB/s")
    endif()
    set(previous 0)
    foreach(field IN LISTS fields) # positive, and min <= q1 <= median <= q3 <= max
      string(JSON v GET "${doc}" points ${point} kernels ${k} roofline paired ${field})
      if(NOT v GREATER 0 OR v LESS previous)
        message(FATAL_ERROR "${OUT}: ${name}: ${field} ${v} (after ${previous})")
      endif()
      set(previous "${v}")
    endforeach()
    math(EXPR checked "${checked} + 1")
  endforeach()
  if(NOT checked EQUAL 3)
    message(FATAL_ERROR "${OUT}: ${checked} entries checked at n_q ${n_q}, expected 3")
  endif()
endforeach()
message(STATUS "paired read runs checked at n_q 1, none at n_q 4")
