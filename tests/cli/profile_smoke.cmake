# SPDX-License-Identifier: MIT
# txtune profile end to end on a tiny grid: it writes a table, `txtune show` finds it fits this
# machine, libtxattn follows it (`txtune explain` says the choice comes from the table, or, only
# where the table shows that the budget left the points around the shape out, that the estimate
# decides and which gap made it), and `txtune validate` and `txtune plot` read it. No timing is
# asserted: which kernel wins is the machine's business.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<table file> -DBUDGET=<seconds> -P profile_smoke.cmake
# run_status(<name> <exit status> <regex> <txtune arguments...>); run(<name> <regex> ...): status 0
function(run_status name expect match)
  execute_process(COMMAND ${TXTUNE} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT "${status}" STREQUAL "${expect}")
    message(FATAL_ERROR "${name}: exit status ${status}, not ${expect}: ${ARGN}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${match}")
    message(FATAL_ERROR "${name}: output does not match '${match}': ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${name}: ok\n${out}")
endfunction()
function(run name match)
  run_status(${name} 0 "${match}" ${ARGN})
endfunction()

# A profile with a kernel it must exclude (name.scalar): `show` says why (why_match, after the
# exclusion's place), and the table lists it in failed records only, never timed. The summary's
# counts match ARGV3 if given (else some inexact candidates and no other fault).
function(profile_excludes name plugin_path why_match)
  set(counts "[1-9][0-9]* candidates excluded as inexact, 0 kernels failed to plan, in")
  if(ARGC GREATER 3)
    set(counts "${ARGV3}")
  endif()
  run(profile "wrote .*: [1-9][0-9]* points.*, ${counts}"
      profile --quick --d 16 --n-max 64 --threads 1 --budget 20 --plugin-path "${plugin_path}"
      -o "${OUT}")
  run(show "excluded \\([1-9][0-9]*\\): [1-9][0-9]* failed the exactness check.*${name}.scalar in none d16/16 g1 t1 at n=193: ${why_match}"
      show --points --plugin-path "${plugin_path}" "${OUT}")
  file(READ "${OUT}" table)
  if(NOT table MATCHES "\"kernel\": \"${name}.scalar\"[^\n]*\"failed\": " OR
     table MATCHES "\"kernel\": \"${name}.scalar\"[^\n]*\"time_s\"")
    message(FATAL_ERROR "${name}.scalar should be in failed records only:\n${table}")
  endif()
endfunction()

# The points (n:r items, r 0 outside window classes) that the table's class (mask, d, threads; group
# 1, not decode) measured, in ${var}; ${var}_found: whether the table has that class.
function(class_points table mask d threads var)
  set(points "")
  set(found FALSE)
  string(JSON n_cls LENGTH "${table}" classes)
  if(n_cls GREATER 0)
    math(EXPR last "${n_cls} - 1")
    foreach(i RANGE ${last})
      string(JSON m GET "${table}" classes ${i} mask)
      string(JSON dq GET "${table}" classes ${i} d_qk)
      string(JSON t GET "${table}" classes ${i} threads)
      string(JSON g GET "${table}" classes ${i} group)
      string(JSON dec GET "${table}" classes ${i} decode)
      if(NOT m STREQUAL mask OR NOT dq EQUAL d OR NOT t EQUAL threads OR NOT g EQUAL 1 OR dec)
        continue()
      endif()
      set(found TRUE)
      string(JSON n_pts LENGTH "${table}" classes ${i} points)
      math(EXPR last_pt "${n_pts} - 1")
      foreach(j RANGE ${last_pt})
        string(JSON n GET "${table}" classes ${i} points ${j} n)
        string(JSON r ERROR_VARIABLE no_r GET "${table}" classes ${i} points ${j} r)
        if(no_r)
          set(r 0)
        endif()
        list(APPEND points "${n}:${r}")
      endforeach()
    endforeach()
  endif()
  set(${var} "${points}" PARENT_SCOPE)
  set(${var}_found ${found} PARENT_SCOPE)
endfunction()

# In sorted ${values}, the nearest at or below x and at or above it (lo, hi); both empty when x is
# outside them.
function(bracket values x lo hi)
  set(l "")
  set(h "")
  foreach(v IN LISTS values)
    if(v LESS_EQUAL x)
      set(l ${v})
    endif()
    if(v GREATER_EQUAL x AND h STREQUAL "")
      set(h ${v})
    endif()
  endforeach()
  if(l STREQUAL "" OR h STREQUAL "")
    set(l "")
    set(h "")
  endif()
  set(${lo} "${l}" PARENT_SCOPE)
  set(${hi} "${h}" PARENT_SCOPE)
endfunction()

# `txtune explain` on a shape of the class cls (its description, as the table has it) at (n, r):
# where the table has every measured point around the shape the choice comes from the table. A
# profile that ran out of its budget (a loaded machine) can leave points out; only where the table
# JSON shows that gap may the choice be the estimate's, and then with the reason that names it (the
# rule of docs/dispatch_table.md, "How the dispatcher uses it", step 2).
function(explain_from_table name table cls mask d threads n r)
  class_points("${table}" ${mask} ${d} ${threads} pts)
  set(reason "")
  if(NOT pts_found)
    set(reason "the table has no class ${cls}")
  else()
    set(ns "")
    set(rs "")
    foreach(p IN LISTS pts)
      string(REPLACE ":" ";" nr "${p}")
      list(GET nr 0 pn)
      list(GET nr 1 pr)
      list(APPEND ns ${pn})
      list(APPEND rs ${pr})
    endforeach()
    list(REMOVE_DUPLICATES ns)
    list(REMOVE_DUPLICATES rs)
    list(SORT ns COMPARE NATURAL)
    list(SORT rs COMPARE NATURAL)
    bracket("${ns}" ${n} n_lo n_hi)
    bracket("${rs}" ${r} r_lo r_hi)
    list(GET ns 0 n_min)
    list(GET ns -1 n_max)
    list(GET rs 0 r_min)
    list(GET rs -1 r_max)
    if(n_lo STREQUAL "")
      set(reason "n = ${n} is outside the measured n ${n_min}\\.\\.${n_max} \\(class ${cls}\\)")
    elseif(r_lo STREQUAL "")
      set(reason "r = ${r} is outside the measured r ${r_min}\\.\\.${r_max} \\(class ${cls}\\)")
    else()
      set(r_around ${r_lo} ${r_hi})
      set(n_around ${n_lo} ${n_hi})
      list(REMOVE_DUPLICATES r_around)
      list(REMOVE_DUPLICATES n_around)
      foreach(cr IN LISTS r_around)
        foreach(cn IN LISTS n_around)
          list(FIND pts "${cn}:${cr}" at)
          if(reason STREQUAL "" AND at LESS 0)
            set(reason "no point was measured at n = ${cn}, r = ${cr} next to this shape \\(class ${cls}\\)")
          endif()
        endforeach()
      endforeach()
    endif()
  endif()
  if(reason STREQUAL "")
    run(${name} "why: table: (region|interpolated|measured point|same winner)" ${ARGN})
  else()
    message(STATUS "${name}: the table lacks points around n = ${n}, r = ${r} of ${cls} (measured: ${pts}): the estimate must decide, saying why")
    run(${name} "why: estimate \\(no table entry: ${reason}" ${ARGN})
  endif()
endfunction()

file(REMOVE "${OUT}")
if(DEFINED DTYPE_RUN)
  # 16-bit classes (issue 18): the decode class of each --dtype (f32 adds none), measured where a
  # kernel takes its types (naive.scalar takes every one), named by them in the profile's summary,
  # the table, show, plot and explain; a problem of other types has no class and says so
  run(profile "wrote .*: [1-9][0-9]* points.*who wins where.*causal d16/16 g4 t1 decode bf16 .*causal d16/16 g4 t1 decode kv=f16 "
      profile --quick --d 16 --n-max 64 --threads 1 --dtype bf16 --dtype f32,f16,f16,f32
      --dtype f32 --budget ${BUDGET} -o "${OUT}")
  file(READ "${OUT}" table)
  string(JSON combos GET "${table}" profile dtypes combinations)
  string(JSON n_cls LENGTH "${table}" classes)
  set(typed "")
  math(EXPR last "${n_cls} - 1")
  foreach(i RANGE ${last})
    string(JSON k ERROR_VARIABLE none GET "${table}" classes ${i} k_type)
    if(none)
      continue()
    endif()
    string(JSON q ERROR_VARIABLE q_none GET "${table}" classes ${i} q_type)
    string(JSON decode GET "${table}" classes ${i} decode)
    string(JSON kernels GET "${table}" classes ${i} points)
    if(NOT decode OR NOT kernels MATCHES "\"naive\\.scalar\"")
      message(FATAL_ERROR "classes[${i}] (k ${k}) should be decode with naive.scalar measured:\n${table}")
    endif()
    if(q_none)
      set(q f32)
    endif()
    string(JSON page ERROR_VARIABLE contiguous GET "${table}" classes ${i} page_size)
    if(contiguous)
      set(page "")
    endif()
    list(APPEND typed "${q}/${k}${page}")
  endforeach()
  # the --dtype classes, then the paged q8_0 decode class, whatever --dtype says
  if(NOT typed STREQUAL "bf16/bf16;f32/f16;f32/q8_016" OR NOT combos MATCHES "^\\[ *\"bf16\", *\"kv=f16\" *\\]$")
    message(FATAL_ERROR "typed classes bf16, kv=f16 and the paged kv=q8_0 one, in the grid's order (${typed}; ${combos}):\n${table}")
  endif()
  run(show "class causal d16/16 g4 t1 decode bf16 .*class causal d16/16 g4 t1 decode kv=f16 .*\n  kv=f16 +element types q f32, k f16, v f16, o f32"
      show "${OUT}")
  set(_decode explain --n 1 --n-kv 64 --d 16 --heads 4 --heads-kv 1 --mask causal --threads 1
                  --table "${OUT}")
  run(explain "problem: h=4/1 n_q=1 n_kv=64 d=16 causal kv=f16.*why: table: [^\n]*\\(class causal d16/16 g4 t1 decode kv=f16\\)"
      ${_decode} --dtype kv=f16)
  run(explain_no_class "why: estimate \\(no table entry: the table has no class causal d16/16 g4 t1 decode f16\\)"
      ${_decode} --dtype f16)
  run(plot "wrote .*\\.svg" plot --table "${OUT}" -o "${OUT}.svg")
  file(READ "${OUT}.svg" svg)
  if(NOT svg MATCHES "causal d16/16 g4 t1 decode kv=f16")
    message(FATAL_ERROR "plot: no panel of the kv=f16 class in ${OUT}.svg")
  endif()
  return()
endif()
if(DEFINED SLOPPY_PLUGIN_PATH)
  # a deliberately inexact kernel: excluded with its error
  profile_excludes(sloppy "${SLOPPY_PLUGIN_PATH}" "not exact, max error [0-9.e-]+: ")
  return()
endif()
if(DEFINED PLANFAIL_PLUGIN_PATH)
  # bigbroken.scalar cannot plan from n = 256 on (a default tile outside its declaration), and it
  # is the estimate's pick: the profile excludes it from those points with the reason, says so on
  # stderr, names it in its summary, and measures steady.scalar there
  # (stdout, then stderr)
  run(profile "wrote .*: [1-9][0-9]* points.*, 0 candidates excluded as inexact, 1 kernel failed to plan.*bigbroken.scalar: [1-9][0-9]* points, the first none d16/16 g1 t1 n=256: TXATTN_E_PLUGIN: .*txtune profile: bigbroken.scalar failed to plan none d16/16 g1 t1 n=256: TXATTN_E_PLUGIN: .*block_k = 2000.*the profile goes on"
      profile --quick --d 16 --n-max 256 --threads 1 --budget 20
      --plugin-path "${PLANFAIL_PLUGIN_PATH}" -o "${OUT}")
  run(show "excluded \\([1-9][0-9]*\\): 0 failed the exactness check .*, [1-9][0-9]* failed to plan a point\n  bigbroken.scalar in none d16/16 g1 t1 at n=256: failed to plan: TXATTN_E_PLUGIN: kernel bigbroken.scalar"
      show --points --plugin-path "${PLANFAIL_PLUGIN_PATH}" "${OUT}")
  file(READ "${OUT}" table)
  if(NOT table MATCHES "{\"n\": 256, \"kernel\": \"bigbroken.scalar\"[^\n]*\"failed\": \"failed to plan" OR
     NOT table MATCHES "{\"n\": 256, \"kernel\": \"steady.scalar\"[^\n]*\"time_s\"" OR
     NOT table MATCHES "\"plan_failures\": {[ \n]*\"kernels\": 1,[ \n]*\"kernel_points\": [1-9]")
    message(FATAL_ERROR "bigbroken.scalar should be excluded at n = 256 and steady.scalar measured there:\n${table}")
  endif()
  return()
endif()
if(DEFINED NODECODE_PLUGIN_PATH)
  # the decode classes, dense and ragged, and the softcap and document-mask classes have no
  # candidate to time (the planfail kernels of this build decline them, sloppy.scalar is inexact):
  # the profile leaves them out of the table and says why, the table reads back (a class needs a
  # timed record), and the dispatcher leaves decode to the estimate, saying so
  set(cls "causal d16/16 g1 t1 decode")
  run(profile "wrote .*: [1-9][0-9]* points, 4 classes of 8 left out, [1-9][0-9]* candidates excluded as inexact, 0 kernels failed to plan.*classes left out of the table[^\n]*\n  ${cls}: 1 point with no candidate left to time \\(1 inexact, 0 failed to plan; every other kernel declined\\)\n  ${cls} ragged: 1 point with no candidate left to time \\(1 inexact, 0 failed to plan; every other kernel declined\\)\n.*who wins where.*none d16/16 g1 t1 .*causal d16/16 g4 t1"
      profile --quick --d 16 --n-max 64 --threads 1 --budget 20
      --plugin-path "${NODECODE_PLUGIN_PATH}" -o "${OUT}")
  run(show "here: VALID: fits this machine.*class none d16/16 g1 t1.*sloppy.scalar in ${cls} at n=193: not exact"
      show --points --plugin-path "${NODECODE_PLUGIN_PATH}" "${OUT}")
  file(READ "${OUT}" table)
  # the classes left out hold only their failed records (the exclusions), which are no class to
  # the library
  string(JSON n_objects LENGTH "${table}" classes)
  math(EXPR last "${n_objects} - 1")
  set(n_cls 0)
  foreach(i RANGE ${last})
    string(JSON decode GET "${table}" classes ${i} decode)
    string(JSON n_recs LENGTH "${table}" classes ${i} points)
    string(JSON recs GET "${table}" classes ${i} points)
    if(recs MATCHES "\"time_s\"")
      math(EXPR n_cls "${n_cls} + 1")
    endif()
    if(n_recs EQUAL 0 OR (decode AND recs MATCHES "\"time_s\""))
      message(FATAL_ERROR "classes[${i}]: no decode class timed and no class without a record:\n${table}")
    endif()
  endforeach()
  string(JSON n_out LENGTH "${table}" profile classes_left_out)
  string(JSON left_out GET "${table}" profile classes_left_out 0)
  string(JSON left_out_ragged GET "${table}" profile classes_left_out 1)
  if(NOT n_cls EQUAL 4 OR NOT n_out EQUAL 4 OR NOT left_out STREQUAL "${cls}" OR
     NOT left_out_ragged STREQUAL "${cls} ragged")
    message(FATAL_ERROR "4 classes, and ${cls} and ${cls} ragged named as left out in the header:\n${table}")
  endif()
  run(explain "why: estimate \\(no table entry: the table has no class ${cls}\\)"
      explain --n 1 --n-kv 64 --d 16 --mask causal --threads 1
      --plugin-path "${NODECODE_PLUGIN_PATH}" --table "${OUT}")
  # no kernel here takes 16-bit K and V: the grid's kv=f16 class is not measured, and says why
  string(JSON skipped GET "${table}" profile dtypes not_measured 0 class)
  string(JSON why GET "${table}" profile dtypes not_measured 0 why)
  if(NOT skipped STREQUAL "causal d16/16 g4 t1 decode kv=f16" OR
     NOT why STREQUAL "no usable kernel takes q f32, k f16, v f16, o f32")
    message(FATAL_ERROR "the kv=f16 decode class should be named as not measured, and why:\n${table}")
  endif()
  return()
endif()
if(DEFINED CRASHY_PLUGIN_PATH)
  # a kernel that crashes: its checks run in a child process, so the profile survives it and
  # excludes it with what happened (a signal; under AddressSanitizer, its report's exit status),
  # counted as a crash, not as inexact (issue 19)
  profile_excludes(crashy "${CRASHY_PLUGIN_PATH}"
    ".*crashed on its check \\(n = 193\\): (signal 11|exit status [1-9])"
    "0 candidates excluded as inexact, 0 kernels failed to plan, 1 kernel crashed, in")
  return()
endif()
run(profile "wrote .*: [1-9][0-9]* points.*who wins where.*none d16/16 g1 t1 .*causal d16/16 g1 t1 decode"
    profile --quick --d 16 --n-max 256 --threads 1,2 --budget ${BUDGET} -o "${OUT}")
run(show "here: VALID: fits this machine.*class none d16/16 g1 t1" show "${OUT}")
file(READ "${OUT}" table)
# the grid has the kv=f16 decode class on the most threads (naive.scalar takes it)
string(JSON combos GET "${table}" profile dtypes combinations)
string(JSON n_not LENGTH "${table}" profile dtypes not_measured)
if(NOT combos MATCHES "^\\[ *\"kv=f16\" *\\]$" OR NOT n_not EQUAL 0)
  message(FATAL_ERROR "the quick grid's 16-bit class: kv=f16, measured:\n${table}")
endif()
# and the ragged-decode class (issue 20) on the most threads: a batch of 8 at the largest n, every
# candidate's time that of the ragged call, checked against the reference with the lengths
set(ragged "")
string(JSON n_cls LENGTH "${table}" classes)
math(EXPR last "${n_cls} - 1")
foreach(i RANGE ${last})
  string(JSON rg ERROR_VARIABLE dense GET "${table}" classes ${i} ragged)
  if(dense)
    continue()
  endif()
  string(JSON decode GET "${table}" classes ${i} decode)
  string(JSON batch GET "${table}" classes ${i} batch)
  string(JSON t GET "${table}" classes ${i} threads)
  string(JSON n GET "${table}" classes ${i} points 0 n)
  list(APPEND ragged "${rg}/${decode}/${batch}/${t}/${n}")
endforeach()
string(JSON left_out ERROR_VARIABLE none_out GET "${table}" profile classes_left_out)
if(ragged STREQUAL "" AND left_out MATCHES "\"causal d16/16 g1 t2 decode ragged\"")
  # only a loaded machine's budget leaves its one point (the largest n) out, and the header says so
  message(STATUS "the ragged class's point did not fit the budget: ${left_out}")
elseif(NOT ragged STREQUAL "ON/ON/8/2/256" OR NOT table MATCHES "\"format_version\": 5")
  message(FATAL_ERROR "the quick grid's ragged-decode class: one, batch 8 on 2 threads at n = 256 (${ragged}):\n${table}")
else()
  run(show_ragged "class causal d16/16 g1 t2 decode ragged .*\n  ragged +one call for a batch of decode sequences"
      show "${OUT}")
endif()
# and the paged decode class (pages of 16 keys, q8_0 K and V, d 128, 32/8 heads) on the most
# threads, which `explain` names for a paged q8_0 call at a measured n, and a contiguous one not
set(paged "causal d128/128 g4 t2 decode paged16 kv=q8_0")
set(_paged explain --n 1 --n-kv 64 --d 128 --heads 32 --heads-kv 8 --mask causal --threads 2
           --dtype kv=q8_0)
if(NOT table MATCHES "\"page_size\": 16" AND left_out MATCHES "\"${paged}\"")
  message(STATUS "the paged class's points did not fit the budget: ${left_out}")
elseif(NOT table MATCHES "\"heads_q\": 32,[ \n]*\"k_type\": \"q8_0\",[ \n]*\"v_type\": \"q8_0\",[ \n]*\"page_size\": 16")
  message(FATAL_ERROR "the quick grid's paged decode class: 32 heads, q8_0 K and V, pages of 16:\n${table}")
else()
  run(explain_paged "why: table: [^\n]*\\(class ${paged}\\)" ${_paged} --page-size 16
      --table "${OUT}")
  run(explain_not_paged "why: estimate \\(no table entry: the table has no class causal d128/128 g4 t2 decode kv=q8_0\\)"
      ${_paged} --table "${OUT}")
endif()
if(NOT table MATCHES "\"levels\": \\[[^]]*\"n\": 64,[^}]*\"core_round_trip_ns\": [0-9]+")
  message(FATAL_ERROR "the header should record the core round trip measured at n = 64:\n${table}")
endif()
set(ENV{TXATTN_TABLE} "${OUT}")
explain_from_table(explain "${table}" "none d16/16 g1 t1" none 16 1 128 0
                   explain --n 128 --d 16 --threads 1)
explain_from_table(explain_window "${table}" "window-sym d16/16 g1 t2" window 16 2 100 40
                   explain --n 100 --d 16 --threads 2 --mask window --left 40 --right 40)
# the regret on shapes off the grid is printed, never judged here: only that it runs and reports.
# It draws shapes between the measured n of a class: a table that has no class with two (every
# n = 256 point over the budget) must say so and fail.
set(two_n FALSE)
string(JSON n_cls LENGTH "${table}" classes)
math(EXPR last "${n_cls} - 1")
foreach(i RANGE ${last})
  string(JSON n_pts LENGTH "${table}" classes ${i} points)
  math(EXPR last_pt "${n_pts} - 1")
  foreach(j RANGE ${last_pt})
    string(JSON n GET "${table}" classes ${i} points ${j} n)
    string(JSON n0 GET "${table}" classes ${i} points 0 n)
    if(NOT n EQUAL n0)
      set(two_n TRUE)
    endif()
  endforeach()
endforeach()
if(two_n)
  run(validate "regret over [1-9][0-9]* shapes off the grid.*geometric mean [0-9.]+.*worst [0-9.]+"
      validate --table "${OUT}" --samples 3 --max-n 256)
else()
  message(STATUS "validate: no class of the table has two measured n (the budget ran out)")
  run_status(validate 1 "the table has no class with two measured n to draw from"
             validate --table "${OUT}" --samples 3 --max-n 256)
endif()
run(plot "wrote .*\\.svg" plot --table "${OUT}" -o "${OUT}.svg")
file(READ "${OUT}.svg" svg)
if(NOT svg MATCHES "^<\\?xml.*<svg .*none d16/16 g1 t1.*<g class='series' .*</svg>")
  message(FATAL_ERROR "plot: ${OUT}.svg is not the expected SVG")
endif()
