#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs a txattn build into a temporary prefix and uses it with the README's commands for a prefix
# other than /usr/local: builds and runs attention_example.c with find_package (CMAKE_PREFIX_PATH) and
# with pkg-config (PKG_CONFIG_PATH, -Wl,-rpath,PREFIX/lib), runs the installed txtune with no variable
# set, and builds examples/plugin with `cmake -S examples/plugin -DCMAKE_PREFIX_PATH=PREFIX` into the
# installed plugin directory.
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
# An installed libtxattn must find its own plugins, so nothing may point it elsewhere; and the
# programs built here must find libtxattn through the README's means alone
unset TXATTN_PLUGIN_PATH TXATTN_FORCE_KERNEL TXATTN_MAX_ISA LD_LIBRARY_PATH PKG_CONFIG_PATH

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

step "the installed headers are the API and the plugin ABI, nothing of txtune's"
headers=$(cd "$prefix/include" && find . -type f | LC_ALL=C sort | tr '\n' ' ')
[[ $headers == "./txattn/plugin.h ./txattn/txattn.h " ]] ||
  fail "installed headers: $headers (want txattn/plugin.h and txattn/txattn.h)"

step "the licence is installed with the docs"
grep -q '^MIT License' "$prefix/share/doc/txattn/LICENSE" 2>/dev/null ||
  fail "LICENSE is not installed in PREFIX/share/doc/txattn"

step "find_package(txattn): configure, build and run examples/"
"$cmake" -S "$examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="${cflags[*]}" -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" || {
  cat "$tmp/configure.log"
  fail "configuring examples/ against the install"
}
"$cmake" --build "$tmp/cmake-build" || fail "building examples/ with find_package"
"$tmp/cmake-build/attention_example" || fail "attention_example (find_package build)"

step "pkg-config with PKG_CONFIG_PATH and -Wl,-rpath,PREFIX/lib: build and run attention_example.c"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
pc_libdir=$(pkg-config --variable=libdir txattn) || fail "pkg-config does not find txattn"
[[ $(cd "$pc_libdir" && pwd -P) == $(cd "$prefix/$libdir" && pwd -P) ]] ||
  fail "pkg-config's libdir $pc_libdir is not PREFIX/$libdir"
# shellcheck disable=SC2046 # the README's command: pkg-config's output split into words
"$cc" "${cflags[@]}" -o "$tmp/pc_example" "$examples/attention_example.c" \
  $(pkg-config --cflags --libs txattn) -lm -Wl,-rpath,"$prefix/$libdir" ||
  fail "building attention_example.c with pkg-config"
"$tmp/pc_example" || fail "attention_example (pkg-config build, rpath $prefix/$libdir)"

step "attention_example.c's own build comment, as written: build and run"
# The lines of the comment from "cc " to the first without a trailing backslash, " * " cut off
comment_cmd=$(sed -n '/^ \*   cc /,/[^\\]$/p' "$examples/attention_example.c" | sed 's/^ \* *//')
[[ $comment_cmd == cc* ]] || fail "attention_example.c has no cc command in its comment"
comment_cc=$cc
if [[ ${TXATTN_TEST_SANITIZE:-0} == 1 ]]; then comment_cc+=" -fsanitize=address,undefined"; fi
(cd "$tmp" && cp "$examples/attention_example.c" . && CC=$comment_cc bash -c "${comment_cmd/#cc /\$CC }") ||
  fail "the build command in attention_example.c's comment: $comment_cmd"
"$tmp/attention_example" || fail "attention_example built by its comment's command"

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

step "cmake -S examples/plugin -DCMAKE_PREFIX_PATH=PREFIX: a third-party plugin into plugindir"
unset PKG_CONFIG_PATH # find_package alone must find the install
{ "$cmake" -S "$examples/plugin" -B "$tmp/plugin-build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/plugin.log" && "$cmake" --build "$tmp/plugin-build" >>"$tmp/plugin.log" &&
  "$cmake" --install "$tmp/plugin-build" >>"$tmp/plugin.log"; } || {
  cat "$tmp/plugin.log"
  fail "building and installing examples/plugin"
}
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$tmp/plugin-build/CMakeCache.txt" ||
  fail "examples/plugin does not default to a Release build"
[[ -f $plugindir/txattn_example_online.so ]] ||
  fail "examples/plugin did not install into $plugindir"
"$prefix/bin/txtune" list | tee "$tmp/list.txt" || fail "txtune list"
grep -q 'example_online\.scalar  *yes' "$tmp/list.txt" || fail "example_online.scalar is not usable"
"$prefix/bin/txtune" check --quick --kernel example_online.scalar || fail "example_online.scalar is not exact"
printf '\ninstall_test: all passed\n'
