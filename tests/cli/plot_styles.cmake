# SPDX-License-Identifier: MIT
# txtune plot of fixtures (no timing): each kernel's colour and marker, its labels, its slopes and
# where its line stops.
#   other_machine.json (TABLE): 3 panels, tiled.scalar in each, bad.scalar excluded at causal
#     n=256; DROPPED: the same table without naive.scalar past causal n=256; SWEEP
#     (plot_sweep_stops.json): a bench sweep of n = 64..512 where naive.scalar fails past 128 (time
#     limit), vendor.fast does not run past 128, masked.scalar runs from 256 and banded.scalar never
# Checked: a kernel has one colour and one marker in every panel and in each plot (another kernel
# never both), the same where the plots' kernel sets differ; each line is labelled where it ends;
# no slope from fewer than 3 points; a line that stops says why there, and what the source
# recorded is below the panel.
#   cmake -DTXTUNE="<emulator;exe>" -DTABLE=<table.json> -DDROPPED=<table.json> -DSWEEP=<json>
#         -DOUT=<dir> -P plot_styles.cmake

# plot(<option> <input> <svg out var>): runs txtune plot, reads the SVG
function(plot option input var)
  get_filename_component(name "${input}" NAME_WE)
  set(svg "${OUT}/test-plot-styles-${name}.svg")
  file(REMOVE "${svg}")
  execute_process(COMMAND ${TXTUNE} plot ${option} "${input}" -o "${svg}"
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status STREQUAL "0" OR NOT out MATCHES "wrote ")
    message(FATAL_ERROR "plot ${name}: exit status ${status}\n${out}${err}")
  endif()
  file(READ "${svg}" text)
  string(REPLACE ";" "," text "${text}") # no ';' in what becomes a list
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

function(expect svg what regex)
  if(NOT svg MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}'")
  endif()
endfunction()

# styles(<svg> <prefix>): for each kernel with a time, <prefix>_<kernel> = "colour marker" of
# every marker of its lines in every panel, failing if one kernel has two, or two kernels one;
# <prefix>_kernels lists the kernels
function(styles svg prefix)
  # one group per match: cut the text at each group's end first
  string(REPLACE "</g>" "</g>|" cut "${svg}")
  string(REGEX MATCHALL "<g class='series' data-kernel='[^']+'>[^|]*</g>" groups "${cut}")
  set(kernels "")
  foreach(g IN LISTS groups)
    string(REGEX MATCH "data-kernel='([^']+)'" _ "${g}")
    set(k "${CMAKE_MATCH_1}")
    string(REGEX MATCHALL "<use href='#txm[0-9]+' [^>]* fill='#[0-9a-f]+'" uses "${g}")
    if(NOT uses) # failed wherever it was tried: only x marks
      continue()
    endif()
    foreach(u IN LISTS uses)
      string(REGEX MATCH "#txm([0-9]+)' [^>]* fill='(#[0-9a-f]+)'" _ "${u}")
      set(style "${CMAKE_MATCH_2} ${CMAKE_MATCH_1}")
      if(DEFINED seen_${k} AND NOT seen_${k} STREQUAL style)
        message(FATAL_ERROR "${prefix}: ${k} drawn as ${seen_${k}} and as ${style}")
      endif()
      set(seen_${k} "${style}")
    endforeach()
    list(APPEND kernels "${k}")
  endforeach()
  list(REMOVE_DUPLICATES kernels)
  foreach(a IN LISTS kernels)
    foreach(b IN LISTS kernels)
      if(NOT a STREQUAL b AND seen_${a} STREQUAL seen_${b})
        message(FATAL_ERROR "${prefix}: ${a} and ${b} share colour and marker ${seen_${a}}")
      endif()
    endforeach()
    set(${prefix}_${a} "${seen_${a}}" PARENT_SCOPE)
  endforeach()
  set(${prefix}_kernels "${kernels}" PARENT_SCOPE)
endfunction()

plot(--table "${TABLE}" table)
styles("${table}" table)
string(REGEX MATCHALL "<g class='series' data-kernel='tiled\\.scalar'>" tiled_lines "${table}")
list(LENGTH tiled_lines n)
if(NOT n EQUAL 3 OR NOT table_kernels MATCHES "banded\\.scalar")
  message(FATAL_ERROR "table: ${n} tiled.scalar lines (3 panels), kernels ${table_kernels}")
endif()
# every line reaching the panel's largest n labelled there, with a slope from 3 points up
foreach(k tiled masked naive)
  expect("${table}" "${k}.scalar's end label"
         "<text class='end' data-kernel='${k}\\.scalar' [^>]*>${k}\\.scalar  slope [0-9.]+</text>")
endforeach()
expect("${table}" "the window panels' end labels"
       "data-kernel='banded\\.scalar' [^>]*>banded\\.scalar  slope 1\\.00</text>")
# bad.scalar: no time anywhere, excluded at n=256: an x there, a note, and the reason below
expect("${table}" "bad.scalar's x"
       "<path class='failed' d='M[-0-9.,]+ l8,8 m0,-8 l-8,8' stroke='#[0-9a-f]+' [^>]*><title>bad\\.scalar failed at n=256: max error 0\\.035")
expect("${table}" "bad.scalar's stop note" "<text class='stop' data-kernel='bad\\.scalar' [^>]*>failed at n=256</text>")
expect("${table}" "bad.scalar's reason below the panel"
       "<text class='note' [^>]*><title>[^<]*</title>bad\\.scalar, n=256: max error 0\\.035 &gt, 1e-05 on n=256 causal</text>")

plot(--table "${DROPPED}" dropped)
expect("${dropped}" "naive.scalar, dropped after n=256 (320 us against masked's 190 us)"
       "<text class='stop' data-kernel='naive\\.scalar' [^>]*>dropped: 1\\.7x slower</text>")
if(dropped MATCHES "<text class='stop' data-kernel='(tiled|masked)")
  message(FATAL_ERROR "dropped: a stop note for a line that reaches the panel's end")
endif()

plot(--from "${SWEEP}" sweep)
styles("${sweep}" sweep)
if(NOT sweep_kernels STREQUAL "tiled.scalar,naive.scalar,vendor.fast,masked.scalar"
   AND NOT sweep_kernels STREQUAL "tiled.scalar;naive.scalar;vendor.fast;masked.scalar")
  message(FATAL_ERROR "sweep: lines of ${sweep_kernels} (banded.scalar never ran: none)")
endif()
# the same kernel looks the same in plots of other kernels
foreach(k IN LISTS sweep_kernels)
  if(DEFINED table_${k} AND NOT table_${k} STREQUAL sweep_${k})
    message(FATAL_ERROR "${k}: ${table_${k}} in the table's plot, ${sweep_${k}} in the sweep's")
  endif()
endforeach()
if(NOT DEFINED table_tiled.scalar OR NOT DEFINED table_naive.scalar)
  message(FATAL_ERROR "no kernel in both plots: nothing compared")
endif()
expect("${sweep}" "4 points: a slope" ">tiled\\.scalar  slope 2\\.00</text>")
expect("${sweep}" "2 points: a label, no slope" "data-kernel='masked\\.scalar' [^>]*>masked\\.scalar</text>")
expect("${sweep}" "naive.scalar's stop note" "data-kernel='naive\\.scalar' [^>]*>failed at n=256</text>")
expect("${sweep}" "naive.scalar's reason"
       "<text class='note' [^>]*><title>[^<]*</title>naive\\.scalar, n=256: one call would take about 0\\.3 s, over the time limit of 1 s</text>")
expect("${sweep}" "vendor.fast's stop note" "data-kernel='vendor\\.fast' [^>]*>did not run at n=256</text>")
expect("${sweep}" "vendor.fast's reason, once for both n"
       ">vendor\\.fast, n=256\\.\\.512: not applicable: n_q above 128: the kernel takes n_q &lt,= 128</text>")
message(STATUS "tiled.scalar ${table_tiled.scalar}, naive.scalar ${table_naive.scalar} in both plots")
