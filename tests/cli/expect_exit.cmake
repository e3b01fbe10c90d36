# SPDX-License-Identifier: MIT
# Runs a command and requires an exact exit status (ctest's WILL_FAIL cannot tell a usage error, 2,
# from a failed check, 1, or a crash). Optionally requires a regular expression in stdout + stderr.
#   cmake -DCMD="<exe>;<args...>" -DEXPECT=<status> [-DMATCH=<regex>] [-DNOMATCH=<regex>]
#         -P expect_exit.cmake
# NOMATCH: a regular expression that stdout + stderr must not match.
execute_process(COMMAND ${CMD} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT "${status}" STREQUAL "${EXPECT}")
  message(FATAL_ERROR "exit status ${status}, expected ${EXPECT}: ${CMD}\n${out}${err}")
endif()
if(DEFINED MATCH AND NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}': ${CMD}\n${out}${err}")
endif()
if(DEFINED NOMATCH AND "${out}${err}" MATCHES "${NOMATCH}")
  message(FATAL_ERROR "output matches '${NOMATCH}', which it must not: ${CMD}\n${out}${err}")
endif()
