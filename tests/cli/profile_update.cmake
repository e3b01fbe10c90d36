# SPDX-License-Identifier: MIT
# A new plugin does not throw the tuning away. A table of the shipped kernels, then a directory with
# two more (plugins/plan_fail_plugin.c: bigbroken.scalar and steady.scalar): `txtune show` gives
# its verdict first, partly valid, naming them; libtxattn still follows it; `txtune profile
# --update` measures only them, at the table's points, keeps every time the table had and leaves a
# valid table. Nothing here is timed.
#   cmake -DTXTUNE=<txtune> -DOUT=<dir> -DSHIPPED=<dir> -DEXTRA=<dir> -P profile_update.cmake
cmake_policy(SET CMP0057 NEW) # if(IN_LIST)
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(table "${OUT}/dispatch.json")
set(both "${SHIPPED}:${EXTRA}")

function(run expect)
  execute_process(COMMAND ${TXTUNE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL expect)
    message(FATAL_ERROR "txtune ${ARGN}: exit ${rc}, expected ${expect}\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

# every timed record of the first class: "n kernel tunables=time;..."
function(candidates json var)
  string(JSON n_recs LENGTH "${json}" classes 0 points)
  math(EXPR last "${n_recs} - 1")
  set(list "")
  foreach(p RANGE ${last})
    string(JSON t ERROR_VARIABLE failed GET "${json}" classes 0 points ${p} time_s)
    if(failed)
      continue()
    endif()
    string(JSON n GET "${json}" classes 0 points ${p} n)
    string(JSON k GET "${json}" classes 0 points ${p} kernel)
    string(JSON tun GET "${json}" classes 0 points ${p} tunables)
    string(REGEX REPLACE "[ \n]" "" tun "${tun}")
    list(APPEND list "${n} ${k} ${tun}=${t}")
  endforeach()
  set(${var} "${list}" PARENT_SCOPE)
endfunction()

run(0 profile --quick --threads 1 --d 16 --n-max 256 --dtype f32 --budget 20
    --plugin-path "${SHIPPED}" -o "${table}")
file(READ "${table}" before)
candidates("${before}" old)

# the verdict comes first, before the header's settings
run(0 show "${table}" --plugin-path "${both}")
expect_match("${out}" "^dispatch table [^\n]*\n  here: PARTLY VALID: libtxattn follows it for the kernels it measured[^\n]*\n    plugin planfail 1.0.0 [^\n]* is loaded here, not in the table \\(its kernels bigbroken.scalar, steady.scalar are not measured\\)\n[^\n]*txtune profile --update[^\n]*\n  format " "show")
run(0 explain --n 100 --d 16 --mask causal --threads 1 --table "${table}" --plugin-path "${both}")
expect_match("${out}" "table: partly valid table [^\n]*steady.scalar are not measured.*\nwhy: table: " "explain")

run(0 profile --update --quick -o "${table}" --plugin-path "${both}")
expect_match("${out}" "measuring bigbroken.scalar, steady.scalar at the table's [0-9]+ points\n" "update")
file(READ "${table}" after)
string(JSON measured GET "${after}" profile updates 0 measured)
if(NOT measured STREQUAL "bigbroken.scalar, steady.scalar")
  message(FATAL_ERROR "the update says it measured '${measured}'")
endif()
candidates("${after}" new)
foreach(c IN LISTS old)
  if(NOT c IN_LIST new)
    message(FATAL_ERROR "the update changed the table's candidate '${c}':\nbefore ${old}\nafter ${new}")
  endif()
endforeach()
if(NOT new MATCHES "steady.scalar")
  message(FATAL_ERROR "the update did not add steady.scalar: ${new}")
endif()
run(0 show "${table}" --plugin-path "${both}")
expect_match("${out}" "^dispatch table [^\n]*\n  here: VALID: " "show after the update")
# nothing left to measure: said, and the table stays as it is
run(0 profile --update -o "${table}" --plugin-path "${both}")
expect_match("${out}" "every kernel loaded here is measured as it is: nothing to update" "again")
