# SPDX-License-Identifier: MIT
# txtune list on plugin directories it refuses or cannot print as they are (issue 19, item 10):
# a directory others can write is named itself as refused, with the reason, and its parent is not
# listed as a place plugin files were found; a directory whose name holds an escape sequence is
# printed with the byte as \x1b everywhere (the path line, "plugin files found in:" and the
# refused file), never raw.
#   cmake -DTXTUNE="<emulator;exe>" -DPLUGIN=<a plugin file the scanner quarantines>
#         -DWORK=<scratch dir> -P list_refused_dir.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/registry")
file(CHMOD "${WORK}" "${WORK}/registry" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
     GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(ENV{TXATTN_SCAN_REGISTRY} "${WORK}/registry")
unset(ENV{TXATTN_TRUSTED_PLUGIN_DIRS})

function(list_dir dir)
  execute_process(COMMAND ${TXTUNE} list --plugin-path "${dir}" RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status STREQUAL "1")
    message(FATAL_ERROR "list --plugin-path ${dir}: exit ${status}, not 1 (no kernel)\n${out}${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

# mode 0777: refused as a whole, by its own name
set(open_dir "${WORK}/open-to-all")
file(MAKE_DIRECTORY "${open_dir}")
file(COPY "${PLUGIN}" DESTINATION "${open_dir}")
file(CHMOD "${open_dir}" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
     GROUP_WRITE GROUP_EXECUTE WORLD_READ WORLD_WRITE WORLD_EXECUTE)
list_dir("${open_dir}")
if(NOT out MATCHES "refused plugin files \\(1\\):\n  [^\n]*/open-to-all\n      the directory is writable by others \\(mode 0777\\)")
  message(FATAL_ERROR "the directory is not named as refused:\n${out}")
endif()
if(out MATCHES "plugin files found in")
  message(FATAL_ERROR "a refused directory's parent is listed as holding plugin files:\n${out}")
endif()

# a name with ESC [31m in it: the plugin in it is found (and quarantined), its directory listed
string(ASCII 27 esc)
set(odd_dir "${WORK}/odd${esc}[31mname")
file(MAKE_DIRECTORY "${odd_dir}")
file(COPY "${PLUGIN}" DESTINATION "${odd_dir}")
list_dir("${odd_dir}")
string(FIND "${out}" "${esc}" raw)
if(NOT raw EQUAL -1)
  message(FATAL_ERROR "the escape byte reached the output raw:\n${out}")
endif()
foreach(line "plugin path \\(--plugin-path\\): [^\n]*/odd\\\\x1b\\[31mname\n"
             "plugin files found in: [^\n]*/odd\\\\x1b\\[31mname\n"
             "\n  [^\n]*/odd\\\\x1b\\[31mname/[^\n]*\\.so\n      quarantined by the plugin scanner")
  if(NOT out MATCHES "${line}")
    message(FATAL_ERROR "output does not match '${line}':\n${out}")
  endif()
endforeach()
