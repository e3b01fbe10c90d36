# txtune plot of a fixture table (other_machine.json: 3 panels, tiled.scalar in each, bad.scalar
# excluded at causal n=256): a kernel has one colour in every panel (legend and crossover label),
# other kernels another, and the failure is marked with an x and named in the legend.
#   cmake -DTXTUNE="<emulator;exe>" -DTABLE=<table.json> -DOUT=<file.svg> -P plot_colours.cmake
file(REMOVE "${OUT}")
execute_process(COMMAND ${TXTUNE} plot --table "${TABLE}" -o "${OUT}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "0" OR NOT out MATCHES "wrote .*, 3 panels")
  message(FATAL_ERROR "plot: exit status ${status}\n${out}${err}")
endif()
file(READ "${OUT}" svg)
string(REPLACE "&#8594;" "->" arrows "${svg}") # no ';' in what becomes a list

# colours_of(<kernel regex> <out var>): the distinct fills of texts naming the kernel (legend rows,
# "-> kernel" crossover labels), failing unless there are at least `min` such texts
function(colours_of kernel min var)
  string(REGEX MATCHALL "fill='#[0-9a-f]+'>(-> )?${kernel}[ <]" texts "${arrows}")
  list(LENGTH texts n)
  if(n LESS min)
    message(FATAL_ERROR "${OUT}: ${n} texts name ${kernel}, expected at least ${min}")
  endif()
  set(colours "")
  foreach(t IN LISTS texts)
    string(REGEX REPLACE "^fill='(#[0-9a-f]+)'.*" "\\1" c "${t}")
    list(APPEND colours "${c}")
  endforeach()
  list(REMOVE_DUPLICATES colours)
  set(${var} "${colours}" PARENT_SCOPE)
endfunction()

colours_of("tiled\\.scalar" 4 tiled) # 3 legends and a crossover label
colours_of("banded\\.scalar" 2 banded)
colours_of("masked\\.scalar" 1 masked)
foreach(kernel tiled banded masked)
  list(LENGTH ${kernel} n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${OUT}: ${kernel}.scalar has ${n} colours (${${kernel}}), expected one")
  endif()
endforeach()
if(tiled STREQUAL banded OR tiled STREQUAL masked OR banded STREQUAL masked)
  message(FATAL_ERROR
          "${OUT}: kernels share a colour: tiled ${tiled}, banded ${banded}, masked ${masked}")
endif()
set(mark "<path d='M[-0-9.,]+ l8,8 m0,-8 l-8,8' stroke='#[0-9a-f]+' [^>]*><title>failed at n=256<")
if(NOT svg MATCHES "${mark}" OR NOT svg MATCHES ">bad\\.scalar \\(x: failed at n=256\\)</text>")
  message(FATAL_ERROR "${OUT}: bad.scalar's failure at n=256 is not marked")
endif()
message(STATUS "tiled.scalar ${tiled}, banded.scalar ${banded}, masked.scalar ${masked} everywhere")
