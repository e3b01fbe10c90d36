#!/usr/bin/env bash
# The README's quick start, in one command: installs the Debian packages (.ci/packages; as root or
# through sudo), builds into build/, lists the kernels, checks every one against the fp64 reference,
# benchmarks a representative shape, then profiles this machine (txtune profile --quick, about 30 s)
# and prints which kernel it chose for each class of shapes; libtxattn follows that table from then on.
set -euo pipefail
umask 022 # the plugin loader refuses plugin directories that group or others can write
cd "$(dirname "$0")"

bash .ci/install-deps
cmake -S . -B build
cmake --build build -j2
build/bin/txtune list
build/bin/txtune check
build/bin/txtune bench --n 4096 --d 64 --mask causal
build/bin/txtune profile --quick
