# SPDX-License-Identifier: MIT
# Initial cache for the libFuzzer build (tests/fuzz): cmake -S . -B build-fuzz -C cmake/TxattnFuzz.cmake
# then cmake --build build-fuzz --target txattn_fuzz. clang (Debian: clang-14, libclang-rt-14-dev
# for libFuzzer, libomp-14-dev for clang's OpenMP); every target is compiled for libFuzzer's
# coverage and under ASan + UBSan (aborting on the first report), at -O0: clang took minutes of CPU per
# kernel file at -O1 with these instrumentations, a few seconds at -O0, and the harnesses spend
# their time in the reference more than in the kernels.
# TXATTN_WERROR is off: a clang-only warning in code gcc builds cleanly must not stop the fuzzing.
find_program(TXATTN_CLANG NAMES clang-14 clang REQUIRED) # Debian 12's clang-14 has no `clang`
set(CMAKE_C_COMPILER "${TXATTN_CLANG}" CACHE STRING "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(CMAKE_C_FLAGS "-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    CACHE STRING "")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O0 -g1 -DNDEBUG" CACHE STRING "")
set(TXATTN_WERROR OFF CACHE BOOL "")
set(TXATTN_FUZZ ON CACHE BOOL "")
