#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when the files of a source tree (core/, tuner/) depend on each other in a cycle.
#
# A file depends on the headers it includes, a header X.h on its own source X.c (who includes X.h
# calls into X.c, so files that call each other through their headers form a cycle), and a header
# on every other file that defines a function or variable it declares (X.h on Y.c when X.h
# declares what Y.c defines). So besides #include loops, a header that declares what
# another file defines while that file includes it (the dispatch table's model header once declared
# the lookup's, the reader's and the index's functions, all of which included it) is a cycle: each
# declaration belongs in the header named after the file that defines it. Public headers
# (txattn/..., outside the tree) are the API and are not followed. The names followed are those
# with the tree's prefix: txattn_ (the library's), or tx_ (txtune's, with PREFIX tx_).
#
#   include_cycles.sh DIR [PREFIX] check DIR (exit 1 and print every cycle found)
#   include_cycles.sh --self-test  check that the check passes a layered tree and finds cycles
set -eu

check() {
  dir=$1
  prefix=${2:-txattn_}
  files=$(find "$dir" -name '*.[ch]' | LC_ALL=C sort)
  [ -n "$files" ] || {
    echo "include_cycles: no C files under $dir" >&2
    return 2
  }
  # shellcheck disable=SC2086 # one file per word: the tree's paths have no blanks
  awk -v root="$dir" -v prefix="$prefix" '
    function stem(path) { sub(/\.[ch]$/, "", path); return path }
    # the names with the prefix a top-level line defines or declares (followed by "(", "[" or
    # "="), each a whole word
    function names(line, out,   n, m) {
      n = 0
      while (match(line, "(^|[^A-Za-z0-9_])" prefix "[A-Za-z0-9_]*[ \t]*[([=]")) {
        m = substr(line, RSTART, RLENGTH)
        sub(/[ \t]*[([=]$/, "", m)
        sub(/^[^A-Za-z0-9_]/, "", m)
        out[++n] = m
        line = substr(line, RSTART + RLENGTH)
      }
      return n
    }
    function add_edge(a, b, how) {
      if (a == b || ((a, b) in edge)) return
      edge[a, b] = how
      adj[a] = adj[a] " " b
    }
    FNR == 1 {
      nfiles++; file[nfiles] = FILENAME; is_file[FILENAME] = 1
      base = FILENAME; sub(/.*\//, "", base); by_base[base] = by_base[base] " " FILENAME
    }
    /^#[ \t]*include[ \t]*"/ {
      inc = $0; sub(/^#[ \t]*include[ \t]*"/, "", inc); sub(/".*/, "", inc)
      n_inc++; inc_from[n_inc] = FILENAME; inc_name[n_inc] = inc
      next
    }
    # top-level lines that define (in a .c, not ending in ";") or declare (in a .h) a name
    /^[A-Za-z_]/ && !/^(static|typedef|struct|enum|union)[ \t]/ {
      k = names($0, found)
      if (FILENAME ~ /\.c$/) {
        if ($0 !~ /;[ \t]*$/ && k > 0) { defined_in[found[1]] = FILENAME; defines[FILENAME, found[1]] = 1 }
      } else {
        for (i = 1; i <= k; i++) { n_decl++; decl_in[n_decl] = FILENAME; decl_name[n_decl] = found[i] }
      }
    }
    END {
      # an include resolves to a file of the tree: beside the includer, else under the root
      # (the one include directory), else by its name when it has no folder
      for (i = 1; i <= n_inc; i++) {
        f = inc_from[i]; h = inc_name[i]
        d = f; sub(/[^\/]*$/, "", d)
        target = ""
        if ((d h) in is_file) target = d h
        else if ((root "/" h) in is_file) target = root "/" h
        else if (h !~ /\//) { split(by_base[h], cand, " "); target = cand[1] }
        if (target != "" && stem(target) != stem(f)) add_edge(f, target, "includes")
      }
      # a header and its own source are one unit: who includes X.h calls into X.c
      for (i = 1; i <= nfiles; i++)
        if (file[i] ~ /\.h$/ && (stem(file[i]) ".c") in is_file)
          add_edge(file[i], stem(file[i]) ".c", "is implemented by")
      for (i = 1; i <= n_decl; i++) {
        c = defined_in[decl_name[i]]
        # a name its own source defines belongs there (a separate program may define its own copy)
        if (c != "" && stem(c) != stem(decl_in[i]) && !((stem(decl_in[i]) ".c", decl_name[i]) in defines))
          add_edge(decl_in[i], c, "declares " decl_name[i] ", defined in")
      }
      for (i = 1; i <= nfiles; i++) if (color[file[i]] == "") dfs(file[i])
      if (cycles) {
        print "Declare each function in the header of the file that defines it, and put types" > "/dev/stderr"
        print "several files share in a header of their own." > "/dev/stderr"
        exit 1
      }
    }
    # depth-first; each edge back to a file on the path closes a cycle, printed step by step
    function dfs(u,   vs, n, i, v, j, k, nxt) {
      color[u] = "grey"; depth++; stack[depth] = u
      n = split(adj[u], vs, " ")
      for (i = 1; i <= n; i++) {
        v = vs[i]
        if (color[v] == "grey") {
          cycles++
          print "cycle " cycles ":" > "/dev/stderr"
          for (j = depth; j >= 1 && stack[j] != v; j--) ;
          for (k = j; k <= depth; k++) {
            nxt = k < depth ? stack[k + 1] : v
            print "  " stack[k] " " edge[stack[k], nxt] " " nxt > "/dev/stderr"
          }
        } else if (color[v] == "") dfs(v)
      }
      color[u] = "black"; depth--
    }
  ' $files
}

self_test() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fails=0
  expect() { # expect pass|fail TREE [PREFIX]
    if check "$tmp/$2" "${3-}" 2>"$tmp/$2.log" >/dev/null; then got=pass; else got=fail; fi
    if [ "$got" != "$1" ]; then
      echo "self-test: tree $2: expected $1, got $got" >&2
      cat "$tmp/$2.log" >&2
      fails=1
    fi
  }
  # layered: a uses b (in a folder, included by its path), b.h's own source defines its functions
  mkdir -p "$tmp/layered/sub"
  printf '#include "sub/b.h"\nint txattn_a(void);\n' >"$tmp/layered/a.h"
  printf '#include "a.h"\nint txattn_a(void) { return txattn_b(); }\n' >"$tmp/layered/a.c"
  printf 'int txattn_b(void);\n' >"$tmp/layered/sub/b.h"
  printf '#include "b.h"\nint txattn_b(void) { return 0; }\n' >"$tmp/layered/sub/b.c"
  expect pass layered
  # two headers including each other
  mkdir -p "$tmp/loop"
  printf '#include "y.h"\n' >"$tmp/loop/x.h"
  printf '#include "x.h"\n' >"$tmp/loop/y.h"
  expect fail loop
  # m.h declares what r.c defines, and r.c includes m.h (the old table_model.h)
  mkdir -p "$tmp/declared"
  printf 'int txattn_m(void);\nint txattn_r(int x,\n             int y);\n' >"$tmp/declared/m.h"
  printf '#include "m.h"\nint txattn_m(void) { return txattn_r(1, 2); }\n' >"$tmp/declared/m.c"
  printf '#include "m.h"\nint txattn_r(int x,\n             int y) { return x + y; }\n' \
    >"$tmp/declared/r.c"
  expect fail declared
  # c.c calls d.c through d.h and d.c calls c.c through c.h: a ring of calls, no include loop
  mkdir -p "$tmp/ring"
  printf 'int txattn_c(void);\n' >"$tmp/ring/c.h"
  printf 'int txattn_d(void);\n' >"$tmp/ring/d.h"
  printf '#include "c.h"\n#include "d.h"\nint txattn_c(void) { return txattn_d(); }\n' >"$tmp/ring/c.c"
  printf '#include "c.h"\n#include "d.h"\nint txattn_d(void) { return 0 * txattn_c(); }\n' \
    >"$tmp/ring/d.c"
  expect fail ring
  # the same ring in txtune's names, found with its prefix; ctx_ is not tx_
  mkdir -p "$tmp/txring"
  printf 'int tx_c(void);\nint ctx_e(void);\n' >"$tmp/txring/c.h"
  printf 'int tx_d(void);\n' >"$tmp/txring/d.h"
  printf '#include "c.h"\n#include "d.h"\nint tx_c(void) { return tx_d(); }\n' >"$tmp/txring/c.c"
  printf '#include "c.h"\n#include "d.h"\nint tx_d(void) { return 0 * tx_c(); }\n' \
    >"$tmp/txring/d.c"
  expect fail txring tx_
  # ctx_e, declared in c.h and defined in d.c, is no tx_ name: no cycle through it
  mkdir -p "$tmp/ctx"
  printf 'int ctx_e(void);\n' >"$tmp/ctx/c.h"
  printf '#include "c.h"\nint ctx_e(void) { return 0; }\n' >"$tmp/ctx/d.c"
  expect pass ctx tx_
  [ "$fails" = 0 ] && echo "self-test: the check passes a layered tree and finds every kind of cycle"
  return "$fails"
}

case ${1-} in
--self-test) self_test ;;
"" | -*)
  echo "usage: $0 DIR | --self-test" >&2
  exit 2
  ;;
*)
  check "$1" "${2-}"
  echo "no include cycle among the files of $1"
  ;;
esac
