# SPDX-License-Identifier: MIT
# txtune bench sweep -> JSON document -> txtune plot --from -> SVG, end to end on tiny shapes: the
# sweep reports slopes, its document has the documented header and one point per problem, and the
# chart names every kernel that was measured. No timing is asserted.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<sweep.json> -P bench_sweep_smoke.cmake
file(REMOVE "${OUT}" "${OUT}.svg")
execute_process(
  COMMAND ${TXTUNE} bench --n 64..256 --d 16 --mask none,causal,window --left 8 --right 8 --reps 1
          --min-time 1 -o "${OUT}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0" OR NOT out MATCHES "\\[9/9\\] n=256 d=16 window\\(8,8\\).*SLOPE.*wrote ")
  message(FATAL_ERROR "bench sweep: exit status ${status}\n${out}${err}")
endif()

file(READ "${OUT}" doc)
string(JSON format GET "${doc}" format)
string(JSON version GET "${doc}" format_version)
string(JSON n_points LENGTH "${doc}" points)
string(JSON vendor GET "${doc}" machine vendor)
if(NOT format STREQUAL "txtune-bench-sweep" OR NOT version STREQUAL "1" OR NOT n_points EQUAL 9)
  message(FATAL_ERROR "${OUT}: format '${format}' version '${version}', ${n_points} points")
endif()
string(JSON n_kernels LENGTH "${doc}" points 0 kernels)
set(measured "")
math(EXPR last "${n_kernels} - 1")
foreach(k RANGE ${last})
  string(JSON state GET "${doc}" points 0 kernels ${k} status)
  string(JSON name GET "${doc}" points 0 kernels ${k} name)
  if(state STREQUAL "ok") # the documented per-kernel numbers: GET fails if one is missing
    foreach(field median_s gflops max_rel_error)
      string(JSON value GET "${doc}" points 0 kernels ${k} ${field})
    endforeach()
    list(APPEND measured "${name}")
  endif()
endforeach()
if(NOT measured)
  message(FATAL_ERROR "${OUT}: no kernel was measured at the first point")
endif()

execute_process(COMMAND ${TXTUNE} plot --from "${OUT}" -o "${OUT}.svg"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0" OR NOT out MATCHES "wrote .*, 3 panels")
  message(FATAL_ERROR "plot --from: exit status ${status}\n${out}${err}")
endif()
file(READ "${OUT}.svg" svg)
if(NOT svg MATCHES "^<\\?xml.*<svg .*d=16 window\\(8,8\\), [0-9]+ threads?.*<g class='series' .*slope [0-9.]+.*</svg>")
  message(FATAL_ERROR "plot --from: ${OUT}.svg is not the expected SVG")
endif()
foreach(name IN LISTS measured)
  string(FIND "${svg}" ">${name}  slope" at)
  if(at LESS 0)
    message(FATAL_ERROR "plot --from: ${OUT}.svg does not name ${name} (machine: ${vendor})")
  endif()
endforeach()
message(STATUS "sweep of ${n_points} points, plotted: ${measured}")
