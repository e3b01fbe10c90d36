# SPDX-License-Identifier: MIT
# Initial cache for the ThreadSanitizer build: cmake -S . -B build-tsan -C cmake/TxattnTsan.cmake.
# clang, because gcc's libgomp is not instrumented (TSan reported races inside its workers that say
# nothing about our code): here the OpenMP plugins use LLVM's libomp, and .ci/run loads Archer
# (libomp-14-dev's libarcher.so), which tells TSan what OpenMP's barriers and tasks order.
# -O0: clang spent minutes of CPU per kernel file at -O1 under the sanitizers.
# TXATTN_WERROR is off: a clang-only warning in code gcc builds cleanly must not stop the check.
find_program(TXATTN_CLANG NAMES clang-14 clang REQUIRED) # Debian 12's clang-14 has no `clang`
set(CMAKE_C_COMPILER "${TXATTN_CLANG}" CACHE STRING "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(CMAKE_C_FLAGS "-fsanitize=thread -fno-omit-frame-pointer" CACHE STRING "")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O0 -g1 -DNDEBUG" CACHE STRING "")
set(TXATTN_WERROR OFF CACHE BOOL "")
set(TXATTN_TSAN ON CACHE BOOL "")
