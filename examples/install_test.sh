#!/usr/bin/env bash
# Installs a txattn build into a temporary prefix and uses it the ways a user would: builds and runs
# attention_example.c with find_package and with pkg-config, runs the installed txtune with no variable
# set, and drops the third-party plugin of examples/plugin into the installed plugin directory.
# Usage: install_test.sh BUILD_DIR. Environment (set by ctest, see cmake/TxattnInstall.cmake): CMAKE, CC,
# TXATTN_LIBDIR (CMAKE_INSTALL_LIBDIR), TXATTN_TEST_SANITIZE (1 when the build uses sanitizers).
set -euo pipefail
umask 022 # the loader refuses plugin directories that group or others can write

build=$(cd "$1" && pwd)
examples=$(cd "$(dirname "$0")" && pwd)
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
libdir=${TXATTN_LIBDIR:-lib}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
# An installed libtxattn must find its own plugins, so nothing may point it elsewhere
unset TXATTN_PLUGIN_PATH TXATTN_FORCE_KERNEL TXATTN_MAX_ISA

step() { printf '\n== %s\n' "$*"; }
fail() {
  printf 'install_test: FAILED: %s\n' "$*" >&2
  exit 1
}

# The consumer must compile cleanly against the installed headers
cflags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror)
if [[ ${TXATTN_TEST_SANITIZE:-0} == 1 ]]; then
  cflags+=("-fsanitize=address,undefined" -fno-sanitize-recover=all)
fi

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || {
  cat "$tmp/install.log"
  fail "cmake --install"
}

step "find_package(txattn): configure, build and run examples/"
"$cmake" -S "$examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="${cflags[*]}" -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" || {
  cat "$tmp/configure.log"
  fail "configuring examples/ against the install"
}
"$cmake" --build "$tmp/cmake-build" || fail "building examples/ with find_package"
"$tmp/cmake-build/attention_example" || fail "attention_example (find_package build)"

step "pkg-config: build and run attention_example.c"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
pc_libdir=$(pkg-config --variable=libdir txattn) || fail "pkg-config does not find txattn"
read -ra pc_flags <<<"$(pkg-config --cflags --libs txattn)"
"$cc" "${cflags[@]}" -o "$tmp/pc_example" "$examples/attention_example.c" "${pc_flags[@]}" -lm \
  -Wl,-rpath,"$pc_libdir" || fail "building attention_example.c with pkg-config"
"$tmp/pc_example" || fail "attention_example (pkg-config build)"

step "the installed txtune finds the installed plugins with no variable set"
plugindir=$(pkg-config --variable=plugindir txattn)
[[ $(cd "$plugindir" && pwd -P) == $(cd "$prefix/$libdir/txattn/plugins" && pwd -P) ]] ||
  fail "pkg-config's plugindir $plugindir is not the installed plugin directory"
"$prefix/bin/txtune" list | tee "$tmp/list.txt" || fail "txtune list"
shopt -s nullglob
installed=("$plugindir"/*.so)
((${#installed[@]} > 0)) || fail "no plugin installed in $plugindir"
for so in "${installed[@]}"; do
  grep -qF "${so##*/}" "$tmp/list.txt" || fail "txtune list does not show the installed ${so##*/}"
done

step "a third-party plugin built with pkg-config and installed into plugindir"
cp -R "$examples/plugin" "$tmp/plugin"
{ cmake -S "$tmp/plugin" -B "$tmp/plugin/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
  cmake --build "$tmp/plugin/build" >/dev/null && cmake --install "$tmp/plugin/build" >/dev/null; } ||
  fail "building and installing examples/plugin"
"$prefix/bin/txtune" list | tee "$tmp/list.txt" || fail "txtune list"
grep -q 'example_online\.scalar  *yes' "$tmp/list.txt" || fail "example_online.scalar is not usable"
"$prefix/bin/txtune" check --quick --kernel example_online.scalar || fail "example_online.scalar is not exact"
printf '\ninstall_test: all passed\n'
