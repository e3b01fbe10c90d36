# SPDX-License-Identifier: MIT
# Cross build for arm64 with Debian's gcc-aarch64-linux-gnu; ctest runs the arm64 binaries under qemu-user.
# .ci/cross-arm64 does all of this (packages: .ci/packages-arm64):
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install gcc-aarch64-linux-gnu qemu-user libopenblas-openmp-dev:arm64 libhwloc-dev:arm64
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DTXATTN_BUILD_TESTS=OFF
#   cmake --build build-arm64 -j2 && ctest --test-dir build-arm64 --output-on-failure
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# cmake/TxattnDeps.cmake finds the arm64 OpenBLAS and pins its run-time path through this
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

# The compiler brings its own sysroot (libc, libgomp); the libraries we use (OpenBLAS, hwloc) are
# Debian's multiarch arm64 packages under /usr/lib/aarch64-linux-gnu, so searches look in both.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config must read the arm64 .pc files, not the host's
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# At run time every library, the dynamic loader and libc included, comes from the multiarch arm64
# packages (libc6:arm64, pulled in by libopenblas-openmp-dev:arm64), so `-L /`. Not
# `-L /usr/aarch64-linux-gnu`: that takes the cross toolchain's ld-linux-aarch64.so.1, which then
# loads the multiarch libc.so.6 of another Debian revision, and that mix hangs in the first
# pthread_create (every OpenMP region, OpenBLAS's threads). `-L /` also overrides Debian qemu's
# default prefix /etc/qemu-binfmt/aarch64, which may point at the cross toolchain's sysroot.
# qemu's default CPU ("max") has Advanced SIMD, so the NEON kernels run.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/)
