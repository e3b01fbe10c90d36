#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when the docs and the public headers disagree on what a user or plugin author reads first:
#  - the plugin ABI's minor version (include/txattn/plugin.h's TXATTN_PLUGIN_ABI_MINOR) against
#    the header's title and log and docs/plugins.md's version and log, and any "ABI 1.N" past it;
#  - the ISAs (enum txattn_isa) against plugin.h's list of their names, docs/plugins.md's `isa`
#    row and the README's TXATTN_MAX_ISA row;
#  - the kernel flags (TXATTN_KERNEL_* bits) against docs/plugins.md's `flags` row, and every
#    TXATTN_KERNEL_ name the docs use against the header's definitions;
#  - the kernels the build has (`txtune list --json`) against the README's kernel table;
#  - the version txattn.h's txattn_version_string comment gives against TXATTN_VERSION_STRING.
#
#   docs_drift.sh ROOT TXTUNE              check the tree at ROOT with the txtune built from it
#   docs_drift.sh --self-test ROOT TXTUNE  check that each kind of drift, planted in a copy, fails
set -eu

fail() {
  echo "docs drift: $*" >&2
  drift=1
}

# The words of a list (blanks or lines between them), one a line, sorted: "b a" -> "a\nb".
sorted() { printf '%s\n' "$1" | tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort -u; }
# The same list on one line, for messages.
words() { printf '%s' "$1" | tr '\n' ' '; }

check() {
  root=$1 txtune=$2
  plugin_h=$root/include/txattn/plugin.h txattn_h=$root/include/txattn/txattn.h
  plugins_md=$root/docs/plugins.md readme=$root/README.md
  drift=0

  # ---- the ABI's minor version ----
  minor=$(sed -n 's/^#define TXATTN_PLUGIN_ABI_MINOR *\([0-9]*\)u.*/\1/p' "$plugin_h")
  [ -n "$minor" ] || fail "no TXATTN_PLUGIN_ABI_MINOR in $plugin_h"
  grep -q "^/\* txattn plugin ABI, version 1\.$minor:" "$plugin_h" ||
    fail "$plugin_h: the title does not say version 1.$minor"
  want=$(i=0; while [ "$i" -le "$minor" ]; do echo "1.$i"; i=$((i + 1)); done)
  got=$(sed -n 's/^ \*   \(1\.[0-9]*\)  .*/\1/p' "$plugin_h")
  [ "$got" = "$want" ] || fail "$plugin_h: the log has versions $(words "$got"), want $(words "$want")"
  got=$(sed -n 's/^- \*\*Version \(1\.[0-9]*\)\*\*.*/\1/p' "$plugins_md")
  [ "$got" = "$want" ] || fail "$plugins_md: the log has versions $(words "$got"), want $(words "$want")"
  said=$(grep -o '`TXATTN_PLUGIN_ABI_MINOR` ([0-9]*)' "$plugins_md" | tr -dc '0-9\n' || true)
  [ -n "$said" ] || fail "$plugins_md does not give TXATTN_PLUGIN_ABI_MINOR"
  for n in $said; do
    [ "$n" = "$minor" ] || fail "$plugins_md: TXATTN_PLUGIN_ABI_MINOR ($n), the header's is $minor"
  done
  for n in $(cat "$readme" "$root"/docs/*.md | grep -o 'ABI 1\.[0-9]*' | sed 's/ABI 1\.//' | sort -u); do
    [ "$n" -le "$minor" ] || fail "the docs name ABI 1.$n; the header's newest is 1.$minor"
  done

  # ---- the ISAs ----
  isas=$(sed -n 's/^ *TXATTN_ISA_\([A-Z0-9]*\) = [0-9]*,.*/\1/p' "$plugin_h")
  [ -n "$isas" ] || fail "no txattn_isa values in $plugin_h"
  lower=$(echo "$isas" | tr 'A-Z' 'a-z')
  # txattn_isa_name's comment: the quoted names up to "unknown"
  named=$(awk '/^\/\* "scalar"/, /TXATTN_API const char \*txattn_isa_name/' "$plugin_h" |
    grep -o '"[a-z0-9]*"' | tr -d '"' | grep -v '^unknown$' || true)
  [ "$(sorted "$named")" = "$(sorted "$lower")" ] ||
    fail "$plugin_h: txattn_isa_name names $(words "$named"), the enum has $(words "$lower")"
  row=$(grep '^| `isa` |' "$plugins_md" || true)
  listed=$(echo "$row" | grep -o '`\(TXATTN_ISA\)\?_[A-Z0-9]*`' | tr -d '`' | sed 's/^TXATTN_ISA_//; s/^_//')
  [ "$(sorted "$listed")" = "$(sorted "$isas")" ] ||
    fail "$plugins_md: the isa row lists $(words "$listed"), the header has $(words "$isas")"
  row=$(grep '^| `TXATTN_MAX_ISA` |' "$readme" || true)
  listed=$(echo "$row" | grep -o '`[a-z0-9]*`' | tr -d '`')
  [ "$(sorted "$listed")" = "$(sorted "$lower")" ] ||
    fail "$readme: TXATTN_MAX_ISA lists $(words "$listed"), the header has $(words "$lower")"

  # ---- the kernel flags ----
  flags=$(sed -n 's/^#define TXATTN_KERNEL_\([A-Z_]*\) *(1u << [0-9]*).*/\1/p' "$plugin_h")
  [ -n "$flags" ] || fail "no TXATTN_KERNEL_ flags in $plugin_h"
  row=$(grep '^| `flags` |' "$plugins_md" || true)
  listed=$(echo "$row" | grep -o 'TXATTN_KERNEL_[A-Z_]*' | sed 's/^TXATTN_KERNEL_//')
  [ "$(sorted "$listed")" = "$(sorted "$flags")" ] ||
    fail "$plugins_md: the flags row lists $(words "$listed"), the header has $(words "$flags")"
  defined=$(sed -n 's/^#define \(TXATTN_KERNEL_[A-Z_]*\).*/\1/p' "$root"/include/txattn/*.h)
  for name in $(cat "$readme" "$root"/docs/*.md | grep -o 'TXATTN_KERNEL_[A-Z_]*' | sort -u); do
    echo "$defined" | grep -qx "$name" || fail "the docs name $name, which no public header defines"
  done

  # ---- the kernels: the README's table against the build's ----
  table=$(sed -n '/^| plugin | kernels | how |$/,/^$/p' "$readme" | sed -n 's/^| \([^|]*\)| \([^|]*\)|.*/\1|\2/p')
  [ -n "$table" ] || fail "$readme has no kernel table (| plugin | kernels | how |)"
  documented=$(echo "$table" | awk -F'|' '
    NR > 1 {
      n = split($2, items, /`, `|`/)
      for (i = 1; i <= n; i++) {
        it = items[i]; gsub(/^[ ,]+|[ ,]+$/, "", it)
        if (it ~ /^\*/) { print "abbreviated"; continue } # a pattern, not kernels: refused below
        if (it !~ /\./) continue
        algo = it; sub(/\..*/, "", algo); isas = it; sub(/^[^.]*\./, "", isas)
        gsub(/[{}]/, "", isas)
        k = split(isas, each, ",")
        for (j = 1; j <= k; j++) print algo "." each[j]
      }
    }' | LC_ALL=C sort -u)
  for k in $documented; do
    [ "$k" != abbreviated ] || { fail "$readme: the kernel table abbreviates kernels with *: write them out"; continue; }
    echo "$lower" | grep -qx "${k##*.}" || fail "$readme: kernel $k has an ISA the header lacks"
  done
  built=$(env -u TXATTN_PLUGIN_PATH -u TXATTN_MAX_ISA "$txtune" list --json |
    grep -o '"name": "[a-z0-9_]*\.[a-z0-9_]*"' | sed 's/.*: "\(.*\)"/\1/' | LC_ALL=C sort -u)
  [ -n "$built" ] || fail "$txtune list --json lists no kernel"
  for k in $built; do
    echo "$documented" | grep -qx "$k" || fail "$readme: the kernel table lacks $k"
  done
  built_isas=$(echo "$built" | sed 's/.*\.//' | sort -u)
  for k in $documented; do
    if echo "$built_isas" | grep -qx "${k##*.}" && ! echo "$built" | grep -qx "$k"; then
      fail "$readme: the kernel table names $k, which this build (with ${k##*.} kernels) lacks"
    fi
  done

  # ---- the version ----
  version=$(sed -n 's/^#define TXATTN_VERSION_STRING "\(.*\)"/\1/p' "$txattn_h")
  example=$(sed -n 's/.*txattn_version_string(void); \/\* "\(.*\)" \*\/.*/\1/p' "$txattn_h")
  [ "$example" = "$version" ] ||
    fail "$txattn_h: txattn_version_string's comment says \"$example\", the version is $version"
  return "$drift"
}

self_test() {
  src=$1 tool=$2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fails=0
  copy() {
    rm -rf "$tmp/tree"
    mkdir -p "$tmp/tree/include/txattn" "$tmp/tree/docs"
    cp "$src/README.md" "$tmp/tree/"
    cp "$src"/docs/*.md "$tmp/tree/docs/"
    cp "$src"/include/txattn/*.h "$tmp/tree/include/txattn/"
  }
  copy
  if ! check "$tmp/tree" "$tool" 2>"$tmp/log"; then
    echo "self-test: the unchanged copy fails:" >&2
    cat "$tmp/log" >&2
    fails=1
  fi
  # each: FILE, a sed script that plants one drift, what the message must name
  while IFS='|' read -r file edit needle; do
    copy
    sed -i "$edit" "$tmp/tree/$file"
    if cmp -s "$tmp/tree/$file" "$src/$file"; then
      echo "self-test: \"$edit\" changed nothing in $file" >&2
      fails=1
    elif check "$tmp/tree" "$tool" 2>"$tmp/log" || ! grep -q -- "$needle" "$tmp/log"; then
      echo "self-test: \"$edit\" in $file was not found (want \"$needle\"):" >&2
      cat "$tmp/log" >&2
      fails=1
    fi
  done <<'EDITS'
docs/plugins.md|s/`TXATTN_PLUGIN_ABI_MINOR` (9)/`TXATTN_PLUGIN_ABI_MINOR` (3)/|TXATTN_PLUGIN_ABI_MINOR (3)
docs/plugins.md|/^- \*\*Version 1\.9\*\*/d|the log has versions
include/txattn/plugin.h|s/ABI, version 1\.9:/ABI, version 1.4:/|the title
docs/architecture.md|s/plugin ABI 1\.1/plugin ABI 1.12/|ABI 1.12
docs/plugins.md|s/, `_AVX512BF16` ([^)]*)//|the isa row
include/txattn/plugin.h|s/, "avx512bf16"//|txattn_isa_name names
README.md|s/`avx512bf16` or `neon`/or `neon`/|TXATTN_MAX_ISA lists
docs/plugins.md|s/, `TXATTN_KERNEL_RAGGED` ([^)]*)//|the flags row
docs/architecture.md|s/TXATTN_KERNEL_SPARSE/TXATTN_KERNEL_DENSE/|TXATTN_KERNEL_DENSE
README.md|s/tiled\.{scalar,avx2,avx512,avx512bf16,neon}/tiled.{scalar,avx2,avx512,neon}/|lacks tiled.avx512bf16
README.md|s/banded\.{scalar,avx2,avx512,neon}/banded.{scalar,avx2,avx512,avx512bf16,neon}/|names banded.avx512bf16
README.md|s/banded\.{scalar,avx2,avx512,neon}/banded.{scalar,avx2,avx512,neon,sve}/|ISA the header lacks
include/txattn/txattn.h|s/txattn_version_string(void); \/\* "[0-9.]*"/txattn_version_string(void); \/* "0.1.0"/|says "0.1.0"
EDITS
  [ "$fails" = 0 ] && echo "self-test: the check passes the tree and finds each kind of drift"
  return "$fails"
}

case ${1-} in
--self-test)
  [ $# = 3 ] || {
    echo "usage: $0 --self-test ROOT TXTUNE" >&2
    exit 2
  }
  self_test "$2" "$3"
  ;;
"" | -*)
  echo "usage: $0 ROOT TXTUNE | --self-test ROOT TXTUNE" >&2
  exit 2
  ;;
*)
  check "$1" "$2"
  echo "the docs name the header's ABI minor version, ISAs, kernel flags and version, and the build's kernels"
  ;;
esac
