# SPDX-License-Identifier: MIT
# Third-party dependencies, all from Debian packages (see .ci/run for the package names).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
# jansson parses and writes the dispatch table (docs/dispatch_table.md): strict JSON with line:column
# in its errors. libjansson-dev.
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)

# OpenBLAS: we use Debian's OpenMP build (libopenblas-openmp-dev) and link it by its own directory, not
# through the libopenblas.so alternative. Reason: it runs its threads on the same libgomp runtime as our
# OpenMP kernels, so a BLAS call inside our parallel region runs single-threaded instead of starting a
# second spinning pool, and its thread count follows omp_set_num_threads() of the calling thread, which
# lets the masked kernel honour the context's thread count without a process-wide setting. The pthreads
# build would oversubscribe the cores under our OpenMP threads; the serial build could not use the cores
# that a single dense call is given.
set(_txattn_blas_hint "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp")
find_library(TXATTN_OPENBLAS_LIBRARY NAMES openblas HINTS "${_txattn_blas_hint}" NO_DEFAULT_PATH)
find_path(TXATTN_OPENBLAS_INCLUDE cblas.h
  HINTS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp" NO_DEFAULT_PATH)
if(NOT TXATTN_OPENBLAS_LIBRARY OR NOT TXATTN_OPENBLAS_INCLUDE)
  message(FATAL_ERROR "OpenBLAS (OpenMP build) not found: apt-get install libopenblas-openmp-dev")
endif()
add_library(txattn_openblas INTERFACE)
target_link_libraries(txattn_openblas INTERFACE "${TXATTN_OPENBLAS_LIBRARY}" OpenMP::OpenMP_C)
target_include_directories(txattn_openblas SYSTEM INTERFACE "${TXATTN_OPENBLAS_INCLUDE}")
# Pin the OpenMP build at run time too: the soname libopenblas.so.0 is otherwise resolved through
# Debian's alternatives, which prefer the pthreads build when both are installed.
set(TXATTN_OPENBLAS_RPATH "${_txattn_blas_hint}")

if(TXATTN_BUILD_TESTS AND BUILD_TESTING)
  pkg_check_modules(CRITERION IMPORTED_TARGET criterion)
  if(NOT CRITERION_FOUND)
    message(WARNING "Criterion not found (apt-get install libcriterion-dev): tests are not built")
  endif()
endif()
