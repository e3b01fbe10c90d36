# SPDX-License-Identifier: MIT
# A dispatch table with classes per type combination (a made-up machine's, so stale here): `txtune
# show` names each class by its types, with a legend and its exclusions; `show --json` prints the
# library's dump of it, which is the file itself (a round trip); `txtune plot`
# draws a panel per class.
#   cmake -DTXTUNE="<emulator;exe>" -DTABLE=<typed_classes.json> -DOUT=<file prefix>
#         -P typed_table.cmake
function(run name match)
  execute_process(COMMAND ${TXTUNE} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0 OR NOT "${out}${err}" MATCHES "${match}")
    message(FATAL_ERROR "${name}: exit status ${status}, or no match for '${match}': ${ARGN}\n${out}${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run(show "class causal d64/64 g1 t2 \\(.*class causal d64/64 g1 t2 kv=f16 \\(measured with batch 1, 8 query heads\\): 4 points, 3 regions.*class causal d64/64 g1 t2 bf16 \\(.*class names are MASK dQK/DV gGROUP tTHREADS \\[decode\\] \\[TYPES\\].*\n  kv=f16 +element types q f32, k f16, v f16, o f32.*\n  bf16 +element types q bf16, k bf16, v bf16, o bf16.*bad.scalar in causal d64/64 g1 t2 kv=f16 at n=256"
    show "${TABLE}")
run(show_json "\"format_version\": 5," show --json "${TABLE}")
file(READ "${TABLE}" file_text)
if(NOT output STREQUAL file_text)
  file(WRITE "${OUT}.json" "${output}")
  message(FATAL_ERROR "show --json (the library's dump) differs from ${TABLE}: see ${OUT}.json")
endif()
run(plot "wrote .*\\.svg" plot --table "${TABLE}" -o "${OUT}.svg")
file(READ "${OUT}.svg" svg)
foreach(panel "causal d64/64 g1 t2 kv=f16" "causal d64/64 g1 t2 bf16" "window-left d64/64 g1 t2")
  string(FIND "${svg}" "${panel}" at)
  if(at LESS 0)
    message(FATAL_ERROR "plot: no panel ${panel} in ${OUT}.svg")
  endif()
endforeach()
