#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs a build into a temporary prefix and imports txattn from there, as a user would with
# PYTHONPATH=PREFIX/PYDIR: the installed package must load the installed libtxattn (through its
# $ORIGIN-relative run path, with no variable set) and that library the installed plugins.
# Usage: install_test.sh BUILD_DIR PYTHON PYDIR (PYDIR relative to the prefix); CMAKE from ctest.
set -euo pipefail
umask 022 # the loader refuses plugin directories that group or others can write

build=$(cd "$1" && pwd)
python=$2
pydir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
unset TXATTN_PLUGIN_PATH TXATTN_FORCE_KERNEL TXATTN_MAX_ISA LD_LIBRARY_PATH PYTHONPATH

"${CMAKE:-cmake}" --install "$build" --prefix "$prefix" >"$tmp/install.log" || {
  cat "$tmp/install.log"
  exit 1
}
ext=$(find "$prefix/$pydir/txattn" -name '_txattn*.so')
[[ -n $ext ]] || {
  echo "install_test: no extension under $prefix/$pydir/txattn" >&2
  exit 1
}
if readelf -d "$ext" | grep -E 'R(UN)?PATH' | grep -qF "$build"; then
  echo "install_test: the installed extension's run path names the build tree:" >&2
  readelf -d "$ext" | grep -E 'R(UN)?PATH' >&2
  exit 1
fi
cd "$tmp" # nothing of the build or source tree on the way
PYTHONPATH="$prefix/$pydir" PREFIX="$prefix" "$python" - <<'PY'
import os
import numpy as np
import txattn

prefix = os.path.realpath(os.environ["PREFIX"])
assert os.path.realpath(txattn.__file__).startswith(prefix), txattn.__file__
with open("/proc/self/maps") as f:
    libs = {line.split()[-1] for line in f if "libtxattn.so" in line}
assert libs and all(os.path.realpath(p).startswith(prefix) for p in libs), libs
kernels = txattn.kernels()
assert kernels, "the installed package found no kernel"
for k in kernels:
    assert os.path.realpath(k["path"]).startswith(prefix), k["path"]
rng = np.random.default_rng(0)
q = rng.standard_normal((1, 4, 64, 32)).astype(np.float32)
o = txattn.attention(q, q, q, causal=True)
err = np.max(np.abs(o - txattn.reference(q, q, q, causal=True)))
assert err <= txattn.error_bound(q, q, q, causal=True), err
print(f"install_test: txattn from {os.path.dirname(txattn.__file__)}, {len(kernels)} kernels, "
      f"libtxattn {sorted(libs)[0]}")
PY
