#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each `mpiexec` command of README.md as it is written (from the build directory, whose layout
# the commands assume), with the problem sizes made small, whoever runs it: as root Open MPI refuses
# to start unless the command says otherwise, so the README's commands must say so.
# Usage: readme_mpi.sh README.md BUILD_DIR
set -euo pipefail
readme=$1
build=$2
# The test must see what a user's shell would: no permission from the environment
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
mapfile -t commands < <(grep -E '^mpiexec ' "$readme")
((${#commands[@]} > 0)) || {
  echo "readme_mpi: README.md has no mpiexec command" >&2
  exit 1
}
# The README's commands are run from the top of the repository, where build/ is the build tree
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$build" "$work/build"
cd "$work"
for cmd in "${commands[@]}"; do
  # Smaller sizes, the flags themselves unchanged; one rank per core may be more than this machine
  # has, which the README says --oversubscribe is for.
  small=$(sed -E -e 's/--n-kv [0-9]+/--n-kv 4096/' -e 's/--n [0-9]+/--n 512/' \
    -e 's/^mpiexec /mpiexec --oversubscribe /' <<<"$cmd")
  echo "readme_mpi: $small"
  # shellcheck disable=SC2086 # the README's command, split into words as a shell would
  bash -c "$small" || {
    echo "readme_mpi: FAILED: $cmd (run as $(id -un), sizes made small)" >&2
    exit 1
  }
done
echo "readme_mpi: ${#commands[@]} README commands ran"
