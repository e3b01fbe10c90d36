#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when a function declares a variable of a public struct that carries struct_size (every
# typedef struct of the public headers with that field, found there) without an initialiser. The
# library reads struct_size first, and an uninitialised one is stack garbage, so such a variable is
# set where it is declared: with its TXATTN_*_INIT macro, or any initialiser, or a memset of the
# whole right after the declaration (where its padding must be zero too). Static variables
# (zeroed), struct members and parameters are not such declarations.
#
#   struct_init.sh INCLUDE_DIR DIR...  check the C files under each DIR (exit 1, naming each one)
#   struct_init.sh --self-test         check that the check finds what it must and only that
set -eu

check() {
  include=$1
  shift
  headers=$(find "$include" -name '*.h' | LC_ALL=C sort)
  files=$(find "$@" -name '*.[ch]' | LC_ALL=C sort)
  if [ -z "$headers" ] || [ -z "$files" ]; then
    echo "struct_init: no headers under $include or no C files under $*" >&2
    return 2
  fi
  # shellcheck disable=SC2086 # one file per word: the tree's paths have no blanks
  awk -v headers="$headers" '
    BEGIN { n = split(headers, h, "\n"); for (i = 1; i <= n; i++) is_header[h[i]] = 1 }
    # The line without comments and without the text of string and character literals;
    # in_comment carries a block comment over lines.
    function code(line,   out, c, n, i, q) {
      out = ""; n = length(line)
      for (i = 1; i <= n; i++) {
        c = substr(line, i, 1)
        if (in_comment) {
          if (c == "*" && substr(line, i + 1, 1) == "/") { in_comment = 0; i++ }
          continue
        }
        if (c == "/" && substr(line, i + 1, 1) == "*") { in_comment = 1; i++; continue }
        if (c == "/" && substr(line, i + 1, 1) == "/") break
        if (c == "\"" || c == "\047") {
          q = c
          for (i++; i <= n && substr(line, i, 1) != q; i++) if (substr(line, i, 1) == "\\") i++
          out = out " "
          continue
        }
        out = out c
      }
      return out
    }
    FNR == 1 { in_comment = 0; depth = 0; stmt = ""; macro = 0; body = 0 }
    # the public headers: each typedef struct whose body declares struct_size
    FILENAME in is_header {
      line = code($0)
      if (line ~ /typedef[ \t]+struct[ \t]+[a-z_0-9]+[ \t]*\{/) { body = 1; sized = 0 }
      if (body && line ~ /^[ \t]*size_t[ \t]+struct_size[ \t]*;/) sized = 1
      if (body && match(line, /^\}[ \t]*[a-z_0-9]+[ \t]*;/)) {
        name = substr(line, RSTART, RLENGTH); gsub(/[}; \t]/, "", name)
        if (sized) types[name] = 1
        body = 0
      }
      next
    }
    macro || /^[ \t]*#/ { macro = $0 ~ /\\$/; next }
    {
      line = code($0)
      n = length(line)
      for (i = 1; i <= n; i++) {
        c = substr(line, i, 1)
        if (c == "{") {
          # an initialiser (after "=" or the "(type)" of a compound literal), a struct, union or enum
          # body, or a block
          if (depth > 0 && kinds[depth] == "init") kind = "init"
          else if (stmt ~ /=[ \t]*$/ || stmt ~ /(^|[=(,?:]|return)[ \t]*\([^()]*\)[ \t]*$/) kind = "init"
          else if (stmt ~ /(^|[^a-z_0-9])(struct|union|enum)([^a-z_0-9(][^()]*)?$/) kind = "aggregate"
          else kind = "block"
          kinds[++depth] = kind
          stmt = kind == "init" ? stmt c : "" # an initialiser stays in its statement
        } else if (c == "}") {
          if (depth > 0 && kinds[depth] == "block") report()
          stmt = depth > 0 && kinds[depth] == "init" ? stmt c : ""
          if (depth > 0) depth--
        } else if (c == ";") {
          if (depth > 0 && kinds[depth] == "block") statement(stmt)
          stmt = ""
        } else stmt = stmt c
      }
      stmt = stmt " "
    }
    # The uninitialised variables declared so far wait in pending[] for the statements that follow
    # the declarations: a memset of one initialises it; any other statement reports the rest.
    function report(   v) {
      for (v in pending) {
        printf "%s: %s has no initialiser: declare it = TXATTN_..._INIT (or set it there)\n",
               where[v], pending[v] > "/dev/stderr"
        bad++
      }
      split("", pending)
    }
    function statement(s,   m) {
      if (match(s, /^[ \t]*memset[ \t]*\([ \t]*&[ \t]*[A-Za-z_0-9]+[ \t]*,[ \t]*0[ \t]*,/)) {
        m = substr(s, RSTART, RLENGTH); sub(/^[^&]*&[ \t]*/, "", m); sub(/[ \t]*,.*$/, "", m)
        if (m in pending) { delete pending[m]; return }
      }
      if (!declaration(s)) report()
    }
    # Whether s declares variables; each declarator of a sized struct without a value is pending.
    function declaration(s,   t, rest, parts, k, i, nest, c, d, v) {
      sub(/^[ \t]+/, "", s)
      if (s ~ /^(static|extern|typedef)[ \t]/) return 1
      while (sub(/^(const|volatile|register)[ \t]+/, "", s)) ;
      if (!match(s, /^[a-z_0-9]+[ \t]+/)) return 0
      t = substr(s, 1, RLENGTH); gsub(/[ \t]/, "", t)
      if (!(t in types)) return s ~ /^(struct|union|enum|unsigned|signed|long|short)[ \t]/ || s ~ /^[a-z_0-9]+[ \t]+\**[ \t]*[A-Za-z_][A-Za-z_0-9]*[ \t]*([[=,]|$)/
      rest = substr(s, RLENGTH + 1)
      if (rest !~ /^[A-Za-z_]/) return 1 # a pointer
      # the declarators: split at the commas outside brackets, braces and parentheses
      k = 1; parts[1] = ""; nest = 0
      for (i = 1; i <= length(rest); i++) {
        c = substr(rest, i, 1)
        if (c ~ /[[({]/) nest++
        else if (c ~ /[])}]/) nest--
        if (c == "," && nest == 0) { parts[++k] = ""; continue }
        parts[k] = parts[k] c
      }
      for (i = 1; i <= k; i++) {
        d = parts[i]
        gsub(/^[ \t]+|[ \t]+$/, "", d)
        if (d ~ /^[A-Za-z_][A-Za-z_0-9]*([ \t]*\[[^]]*\])*$/) {
          v = d; sub(/[ \t[].*/, "", v)
          pending[v] = t " " d; where[v] = FILENAME ":" FNR
        }
      }
      return 1
    }
    END { report(); if (bad) exit 1 }
  ' $headers $files
}

self_test() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/include" "$tmp/good" "$tmp/bad"
  cat >"$tmp/include/api.h" <<'H'
typedef struct sized_info {
  size_t struct_size; /* { */
  const char *name;
} sized_info;
typedef struct plain {
  int x;
} plain;
H
  cat >"$tmp/good/good.c" <<'C'
#define DECLARE(x) \
  sized_info x;
static sized_info zeroed;
typedef struct holder {
  sized_info member; /* a member, not a variable */
  struct {
    sized_info nested;
  } inner;
} holder;
static int use(sized_info by_value, const sized_info *p);
static int f(sized_info by_value) {
  sized_info a = {.struct_size = sizeof a}, b = a;
  const sized_info c = {0};
  sized_info *pointer;
  sized_info arr[2] = {{0}};
  sized_info zeroed_here, also;
  int between = 0;
  memset(&zeroed_here, 0, sizeof zeroed_here);
  memset(&also, 0, sizeof(sized_info));
  static sized_info kept;
  plain unsized;
  const char *s = "sized_info text;";
  /* sized_info commented; */
  if (a.struct_size) {
    a = (sized_info){.name = "{"};
  }
  return use(by_value, &a) + (int)sizeof(sized_info);
}
C
  printf 'static void g(void) {\n  if (1) {\n    sized_info info;\n  }\n}\n' >"$tmp/bad/one.c"
  printf 'void h(void) {\n  sized_info a = {0}, b;\n}\n' >"$tmp/bad/two.c"
  printf 'int k(void) {\n  const sized_info many[4];\n  return 0;\n}\n' >"$tmp/bad/three.c"
  printf 'void m(void) {\n  sized_info a;\n  use(0);\n  memset(&a, 0, sizeof a);\n}\n' >"$tmp/bad/four.c"
  fails=0
  if ! check "$tmp/include" "$tmp/good" 2>"$tmp/log"; then
    echo "self-test: declarations with initialisers were refused:" >&2
    cat "$tmp/log" >&2
    fails=1
  fi
  for f in one.c:3 two.c:2 three.c:2 four.c:2; do
    mkdir -p "$tmp/one"
    rm -f "$tmp/one"/*
    cp "$tmp/bad/${f%%:*}" "$tmp/one/"
    if check "$tmp/include" "$tmp/one" 2>"$tmp/log" || ! grep -q "${f}: sized_info" "$tmp/log"; then
      echo "self-test: the uninitialised sized_info of $f was not found:" >&2
      cat "$tmp/log" >&2
      fails=1
    fi
  done
  [ "$fails" = 0 ] && echo "self-test: the check finds every uninitialised sized struct and nothing else"
  return "$fails"
}

case ${1-} in
--self-test) self_test ;;
"" | -*)
  echo "usage: $0 INCLUDE_DIR DIR... | --self-test" >&2
  exit 2
  ;;
*)
  include=$1
  shift
  check "$include" "$@"
  echo "every variable of a struct with struct_size under $* is initialised"
  ;;
esac
