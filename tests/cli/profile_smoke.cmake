# txtune profile end to end on a tiny grid: it writes a table, `txtune show` finds it fits this
# machine, libtxattn follows it (`txtune explain` says the choice comes from the table), and
# `txtune validate` and `txtune plot` read it. No timing is asserted: which kernel wins is the
# machine's business.
#   cmake -DTXTUNE="<emulator;exe>" -DOUT=<table file> -DBUDGET=<seconds> -P profile_smoke.cmake
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

# A profile with a kernel it must exclude (name.scalar): `show` says why (why_match, after the
# exclusion's place), and the table lists it in excluded[] only, never in a point.
function(profile_excludes name plugin_path why_match)
  run(profile "wrote .*: [1-9][0-9]* points.*, [1-9][0-9]* candidates excluded as inexact, 0 kernels failed to plan"
      profile --quick --d 16 --n-max 64 --threads 1 --budget 20 --plugin-path "${plugin_path}"
      -o "${OUT}")
  run(show "excluded \\([1-9][0-9]*\\): [1-9][0-9]* failed the exactness check.*${name}.scalar in none d16/16 g1 t1 at n=193: ${why_match}"
      show --points --plugin-path "${plugin_path}" "${OUT}")
  file(READ "${OUT}" table)
  if(NOT table MATCHES "\"excluded\".*\"kernel\": \"${name}" OR
     table MATCHES "\"points\"[^]]*${name}")
    message(FATAL_ERROR "${name}.scalar should be in excluded[] only:\n${table}")
  endif()
endfunction()

file(REMOVE "${OUT}")
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
  run(profile "wrote .*: [1-9][0-9]* points.*, 0 candidates excluded as inexact, 1 kernel failed to plan.*bigbroken.scalar: [1-9][0-9]* points, the first none d16/16 g1 t1 n=256: TXATTN_E_PLUGIN: .*at [1-9][0-9]* points the estimate's pick was one of them.*txtune profile: bigbroken.scalar failed to plan none d16/16 g1 t1 n=256: TXATTN_E_PLUGIN: .*block_k = 2000.*the profile goes on.*txtune profile: none d16/16 g1 t1 n=256: the estimate's pick, bigbroken.scalar, failed to plan; without a table libtxattn (cannot plan|falls back)"
      profile --quick --d 16 --n-max 256 --threads 1 --budget 20
      --plugin-path "${PLANFAIL_PLUGIN_PATH}" -o "${OUT}")
  run(show "excluded \\([1-9][0-9]*\\): 0 failed the exactness check .*, [1-9][0-9]* failed to plan a point\n  bigbroken.scalar in none d16/16 g1 t1 at n=256: failed to plan \\(the estimate's pick here; .*\\): TXATTN_E_PLUGIN: kernel bigbroken.scalar"
      show --points --plugin-path "${PLANFAIL_PLUGIN_PATH}" "${OUT}")
  file(READ "${OUT}" table)
  if(NOT table MATCHES "\"excluded\": \\[.*\"kernel\": \"bigbroken.scalar\".*\"n\": 256,.*\"reason\": \"failed to plan" OR
     NOT table MATCHES "\"n\": 256,[ \n]*\"candidates\": \\[[ \n]*{\"kernel\": \"steady.scalar\"" OR
     NOT table MATCHES "\"plan_failures\": {[ \n]*\"kernels\": 1,[ \n]*\"kernel_points\": [1-9]")
    message(FATAL_ERROR "bigbroken.scalar should be excluded at n = 256 and steady.scalar measured there:\n${table}")
  endif()
  return()
endif()
if(DEFINED CRASHY_PLUGIN_PATH)
  # a kernel that crashes: its checks run in a child process, so the profile survives it and
  # excludes it with what happened (a signal; under AddressSanitizer, its report's exit status)
  profile_excludes(crashy "${CRASHY_PLUGIN_PATH}"
    ".*(crashed on its check \\(n = 193\\): signal 11|ended the check process on its check \\(n = 193\\), exit status [1-9])")
  return()
endif()
run(profile "wrote .*: [1-9][0-9]* points.*who wins where.*none d16/16 g1 t1 .*causal d16/16 g1 t1 decode"
    profile --quick --d 16 --n-max 256 --threads 1,2 --budget ${BUDGET} -o "${OUT}")
run(show "here: fits this machine.*class none d16/16 g1 t1" show "${OUT}")
file(READ "${OUT}" table)
if(NOT table MATCHES "\"levels\": \\[[^]]*\"n\": 64,[^}]*\"core_round_trip_ns\": [0-9]+")
  message(FATAL_ERROR "the header should record the core round trip measured at n = 64:\n${table}")
endif()
set(ENV{TXATTN_TABLE} "${OUT}")
run(explain "why: table: (region|interpolated|measured point)" explain --n 128 --d 16 --threads 1)
run(explain_window "why: table: (region|interpolated|measured point)"
    explain --n 100 --d 16 --threads 2 --mask window --left 40 --right 40)
# the regret on shapes off the grid is printed, never judged here: only that it runs and reports
run(validate "regret over [1-9][0-9]* shapes off the grid.*geometric mean [0-9.]+.*worst [0-9.]+"
    validate --table "${OUT}" --samples 3 --max-n 256)
run(plot "wrote .*\\.svg" plot --table "${OUT}" -o "${OUT}.svg")
file(READ "${OUT}.svg" svg)
if(NOT svg MATCHES "^<\\?xml.*<svg .*none d16/16 g1 t1.*<polyline .*</svg>")
  message(FATAL_ERROR "plot: ${OUT}.svg is not the expected SVG")
endif()
