# SPDX-License-Identifier: MIT
# txtune plot's first panel, "the price of attention", from fixture tables (no timing): per mask kind
# one line (a <path data-mask=KIND>) of the chosen kernel against n, labelled with its slope at
# large n, a dot per point in that kernel's colour, and the kinds it cannot draw named in the panel.
#   other_machine.json: causal (4 points) and window-left (3 points at r = 32 and at r = 128)
#   plot_one_window_point.json: the same, its window class cut to the point n = 256, r = 32
#   long_profile.json: causal, and a window class that decodes
#   cmake -DTXTUNE="<emulator;exe>" -DTABLES=<tests/data/tables> -DONE_POINT=<json> -DOUT=<dir>
#         -P plot_price.cmake

# plot(<table> <svg out var>): runs txtune plot, checks it says it drew the first panel, reads the SVG
function(plot table var)
  get_filename_component(name "${table}" NAME_WE)
  set(svg "${OUT}/test-plot-price-${name}.svg")
  file(REMOVE "${svg}")
  execute_process(COMMAND ${TXTUNE} plot --table "${table}" -o "${svg}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status STREQUAL "0" OR NOT out MATCHES "wrote .* \\(the price of attention, [0-9]+ panels? ")
    message(FATAL_ERROR "plot ${name}: exit status ${status}\n${out}${err}")
  endif()
  file(READ "${svg}" text)
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# expect(<svg> <what> <regex>): fails naming what is missing
function(expect svg what regex)
  if(NOT svg MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}'")
  endif()
endfunction()

# lines(<svg> <kinds...>): exactly one line per kind listed, and none for the others
function(lines svg)
  string(REGEX MATCHALL "<path class='price' data-mask='[a-z]+'" all "${svg}")
  list(LENGTH all n)
  list(LENGTH ARGN want)
  if(NOT n EQUAL want)
    message(FATAL_ERROR "${n} lines in the first panel, expected ${want} (${ARGN}): ${all}")
  endif()
  foreach(kind IN LISTS ARGN)
    string(REGEX MATCHALL "data-mask='${kind}'" one "${svg}")
    list(LENGTH one n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "${n} lines for mask ${kind} in the first panel, expected 1")
    endif()
  endforeach()
endfunction()

plot("${TABLES}/other_machine.json" svg)
string(FIND "${svg}" ">the price of attention: " first)
string(FIND "${svg}" ">causal d64/64 g1 t2</text>" class_panel)
if(first LESS 0 OR class_panel LESS first)
  message(FATAL_ERROR "other_machine: the price of attention is not the first panel")
endif()
lines("${svg}" causal window)
# the fixture's times: causal 190 us, 1.5 ms, 19 ms at n = 256..4096; the window's grow 4x per 4x
expect("${svg}" "causal's line" ">causal d64/64 g1 t2 \\(dense\\): slope 1\\.66 over n = 256\\.\\.4096<")
expect("${svg}" "the window's line"
       ">window-left d64/64 g1 t2, r = 32 \\(windowed\\): slope 1\\.00 over n = 256\\.\\.4096<")
expect("${svg}" "the slope labels" ">causal: slope 1\\.66</text>.*>window: slope 1\\.00</text>")
expect("${svg}" "the kinds not in the table" ">mask none: not measured<")
# the marker of the kernel chosen at causal n = 4096 has its colour and shape in the class panel
string(REGEX MATCH "href='#(txm[0-9]+)'[^>]* fill='(#[0-9a-f]+)'[^>]*><title>causal, n=4096: tiled\\.scalar, "
       dot "${svg}")
set(dot_style "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
string(REGEX MATCH "href='#(txm[0-9]+)'[^>]* fill='(#[0-9a-f]+)'[^>]*><title>tiled\\.scalar, n=4096: "
       line "${svg}")
if(NOT dot OR NOT dot_style STREQUAL "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
  message(FATAL_ERROR "tiled.scalar: '${dot_style}' in the first panel, "
                      "'${CMAKE_MATCH_1} ${CMAKE_MATCH_2}' in its class panel")
endif()

plot("${ONE_POINT}" svg)
lines("${svg}" causal)
expect("${svg}" "the window's single point"
       ">window-left d64/64 g1 t2, r = 32: one point \\(n = 256\\), too few for a line and a slope<")
expect("${svg}" "the window's dot" "<title>window, n=256: banded\\.scalar, ")

plot("${TABLES}/long_profile.json" svg)
lines("${svg}" causal)
expect("${svg}" "the decode-only window" ">window: only decode classes [^<]*: not drawn<")
message(STATUS "the price of attention: a line per mask kind drawn, the others named")
