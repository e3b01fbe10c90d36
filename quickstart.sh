#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's quick start, in one command: installs the Debian packages (.ci/packages; as root or
# through sudo), builds into build/, lists the kernels, checks every one against the fp64 reference,
# benchmarks a representative shape, then profiles this machine (txtune profile --quick, about 30 s)
# and prints which kernel it chose for each class of shapes; libtxattn follows that table from then on.
# Last, it imports the Python package from the build tree (PYTHONPATH=build/python).
#
# Installing and building run quietly, their output in build/quickstart-install.log and
# build/quickstart-build.log; txtune's own output is shown. Installing and building must succeed:
# without them there is nothing to run, so a failure there prints the end of its log and stops the
# script. A later step that fails is said (which step, its exit status) and the script goes on, so
# the profile still runs; the script then exits 1 naming every step that failed.
set -uo pipefail
umask 022 # the plugin loader refuses plugin directories that group or others can write
cd "$(dirname "$0")" || exit 1

failed=()
install_log=build/quickstart-install.log
build_log=build/quickstart-build.log

# quiet WHAT LOG COMMAND...: a step the others need, its output appended to LOG; its failure prints
# the end of LOG and ends the script.
quiet() {
  local what=$1 log=$2
  shift 2
  "$@" >>"$log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "quickstart: $what FAILED with exit status $rc: $*" >&2
    echo "quickstart: the last lines of $log:" >&2
    tail -n 25 "$log" >&2
    echo "quickstart: stopping: nothing can run without it (the whole log: $log)" >&2
    exit "$rc"
  fi
}

# step NAME COMMAND...: runs a step that may fail without stopping the others.
step() {
  local name=$1
  shift
  echo "==> quickstart: $name: $*"
  "$@"
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "quickstart: step '$name' FAILED with exit status $rc: $*; going on" >&2
    failed+=("$name (exit status $rc)")
  fi
}

mkdir -p build || exit 1
: >"$install_log" && : >"$build_log" || exit 1
echo "==> quickstart: installing Debian packages (log: $install_log)"
quiet "installing Debian packages" "$install_log" bash .ci/install-deps
echo "==> quickstart: building (log: $build_log)"
quiet "configuring" "$build_log" cmake -S . -B build
quiet "building" "$build_log" cmake --build build -j2
step list build/bin/txtune list
step check build/bin/txtune check
step bench build/bin/txtune bench --n 4096 --d 64 --mask causal
step profile build/bin/txtune profile --quick
# The Python package, from the build tree (docs/python.md), where the build made it
if [ -d build/python/txattn ]; then
  step python env PYTHONPATH=build/python /usr/bin/python3 -c \
    'import txattn; print("import txattn:", txattn.__file__, "-", len(txattn.kernels()), "kernels")'
fi

if [ "${#failed[@]}" -gt 0 ]; then
  summary=$(printf '%s, ' "${failed[@]}")
  echo "quickstart: ${#failed[@]} step(s) failed: ${summary%, } (see their output above)" >&2
  exit 1
fi
echo "quickstart: every step succeeded"
if [ -d build/python/txattn ]; then
  echo "quickstart: to import txattn from any directory: export PYTHONPATH=\"$PWD/build/python\""
fi
