/* SPDX-License-Identifier: MIT */
#include "args.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "txattn/txattn.h"

typedef enum tx_args_result { TX_ARGS_OK, TX_ARGS_HELP, TX_ARGS_ERROR } tx_args_result;

void tx_strlist_free(tx_strlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->items[i]);
  l->n = 0;
}

static tx_opt make(const char *name, tx_opt_kind kind, void *dest, const char *metavar,
                   const char *help) {
  return (tx_opt){.name = name, .kind = kind, .dest = dest, .metavar = metavar, .help = help};
}

tx_opt tx_opt_flag(const char *name, int *dest, const char *help) {
  return make(name, TX_OPT_FLAG, dest, NULL, help);
}

tx_opt tx_opt_int(const char *name, int64_t *dest, const char *metavar, const char *help,
                  int64_t min, int64_t max) {
  tx_opt o = make(name, TX_OPT_INT, dest, metavar, help);
  o.min = min;
  o.max = max;
  return o;
}

tx_opt tx_opt_bound(const char *name, int64_t *dest, const char *metavar, const char *help,
                    int64_t min, int64_t max) {
  tx_opt o = tx_opt_int(name, dest, metavar, help, min, max);
  o.kind = TX_OPT_BOUND;
  return o;
}

tx_opt tx_opt_double(const char *name, double *dest, const char *metavar, const char *help,
                     double min, double max) {
  tx_opt o = make(name, TX_OPT_DOUBLE, dest, metavar, help);
  o.dmin = min;
  o.dmax = max;
  return o;
}

tx_opt tx_opt_string(const char *name, const char **dest, const char *metavar, const char *help) {
  return make(name, TX_OPT_STRING, (void *)dest, metavar, help);
}

tx_opt tx_opt_list(const char *name, tx_strlist *dest, const char *metavar, const char *help) {
  return make(name, TX_OPT_LIST, dest, metavar, help);
}

tx_opt tx_opt_repeat(const char *name, tx_strlist *dest, const char *metavar, const char *help) {
  return make(name, TX_OPT_REPEAT, dest, metavar, help);
}

tx_opt tx_opt_choice(const char *name, int *dest, const char *metavar, const char *help,
                     const char *const *choices) {
  tx_opt o = make(name, TX_OPT_CHOICE, dest, metavar, help);
  o.choices = choices;
  return o;
}

static void print_usage_line(const tx_cmd_spec *spec, FILE *f) {
  fprintf(f, "Usage: txtune %s %s\n", spec->name, spec->usage);
}

static void verror(const tx_cmd_spec *spec, const char *fmt, va_list ap) {
  fprintf(stderr, "txtune %s: ", spec->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  print_usage_line(spec, stderr);
  fprintf(stderr, "Try 'txtune %s --help' for the options.\n", spec->name);
}

int tx_args_usage_error(const tx_cmd_spec *spec, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(spec, fmt, ap);
  va_end(ap);
  return TX_EXIT_USAGE;
}

static tx_args_result fail(const tx_cmd_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static tx_args_result fail(const tx_cmd_spec *spec, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(spec, fmt, ap);
  va_end(ap);
  return TX_ARGS_ERROR;
}

/* The optimal-string-alignment distance between a[0..la) and b (edits of one character, and
   swaps of two neighbours), or a value above `most` as soon as it must exceed it. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t most) {
  enum { MAX = 48 };
  size_t lb = strlen(b);
  if (la >= MAX || lb >= MAX) return most + 1;
  if ((la > lb ? la - lb : lb - la) > most) return most + 1;
  size_t d[MAX + 1][MAX + 1];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      size_t best = sub < del ? sub : del;
      best = best < ins ? best : ins;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

static void did_you_mean_n(const char *word, size_t len, const char *const *names, size_t n,
                           const char *prefix, char *buf, size_t size) {
  const size_t most = len <= 4 ? 1 : len <= 8 ? 2 : 3;
  size_t best = most + 1, used = 0, listed = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    size_t dist = edit_distance(word, len, names[i], most);
    if (dist < best) best = dist;
  }
  for (size_t i = 0; i < n && best <= most && listed < 3 && used < size; i++) {
    if (edit_distance(word, len, names[i], most) != best) continue;
    int k = snprintf(buf + used, size - used, "%s'%s%s'", listed ? " or " : " (did you mean ",
                     prefix, names[i]);
    used += k > 0 ? (size_t)k : 0;
    listed++;
  }
  if (listed && used < size) snprintf(buf + used, size - used, "?)");
}

void tx_did_you_mean(const char *word, const char *const *names, size_t n, const char *prefix,
                     char *buf, size_t size) {
  did_you_mean_n(word, strlen(word), names, n, prefix, buf, size);
}

/* " (did you mean '--kernel'?)" for the option name[0..len) of spec, "" if none is near. */
static void near_option(const tx_cmd_spec *spec, const char *name, size_t len, char *buf,
                        size_t size) {
  const char *names[256];
  size_t n = 0;
  for (size_t g = 0; g < spec->n_groups; g++)
    for (size_t i = 0; i < spec->groups[g].n_opts && n < 255; i++)
      names[n++] = spec->groups[g].opts[i].name;
  names[n++] = "help";
  did_you_mean_n(name, len, names, n, "--", buf, size);
}

static const tx_opt *find_opt(const tx_cmd_spec *spec, const char *name, size_t len) {
  for (size_t g = 0; g < spec->n_groups; g++)
    for (size_t i = 0; i < spec->groups[g].n_opts; i++) {
      const tx_opt *o = &spec->groups[g].opts[i];
      if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    }
  return NULL;
}

int tx_parse_int(const char *s, int64_t *out) {
  char *end;
  const char *digits = s[0] == '-' ? s + 1 : s;
  if (!(digits[0] >= '0' && digits[0] <= '9') || (digits != s && digits[0] == '0')) return 0;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE) return 0;
  *out = (int64_t)v;
  return 1;
}

static tx_args_result range_error(const tx_cmd_spec *spec, const tx_opt *o, const char *v) {
  const char *inf = o->kind == TX_OPT_BOUND ? " (or inf)" : "";
  return fail(spec, "--%s expects an integer from %" PRId64 " to %" PRId64 "%s, got '%s'", o->name,
              o->min, o->max, inf, v);
}

static tx_args_result set_int(const tx_cmd_spec *spec, const tx_opt *o, const char *v) {
  int64_t x;
  if (o->kind == TX_OPT_BOUND && (strcasecmp(v, "inf") == 0 || strcasecmp(v, "unbounded") == 0)) {
    *(int64_t *)o->dest = TXATTN_UNBOUNDED;
    return TX_ARGS_OK;
  }
  if (!tx_parse_int(v, &x) || x < o->min || x > o->max) return range_error(spec, o, v);
  *(int64_t *)o->dest = x;
  return TX_ARGS_OK;
}

static tx_args_result set_double(const tx_cmd_spec *spec, const tx_opt *o, const char *v) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || *end != '\0' || errno == ERANGE || !(x >= o->dmin && x <= o->dmax))
    return fail(spec, "--%s expects a number from %g to %g, got '%s'", o->name, o->dmin, o->dmax,
                v);
  *(double *)o->dest = x;
  return TX_ARGS_OK;
}

static tx_args_result set_choice(const tx_cmd_spec *spec, const tx_opt *o, const char *v) {
  char all[256] = "", near[160];
  size_t n = 0;
  for (; o->choices[n]; n++) {
    if (strcmp(o->choices[n], v) == 0) {
      *(int *)o->dest = (int)n;
      return TX_ARGS_OK;
    }
    size_t len = strlen(all);
    snprintf(all + len, sizeof all - len, "%s%s", n ? ", " : "", o->choices[n]);
  }
  tx_did_you_mean(v, o->choices, n, "", near, sizeof near);
  return fail(spec, "--%s expects one of %s, got '%s'%s", o->name, all, v, near);
}

static tx_args_result add_list(const tx_cmd_spec *spec, const tx_opt *o, const char *v,
                               const char *separators) {
  tx_strlist *l = o->dest;
  const char *s = v;
  for (;;) {
    size_t len = strcspn(s, separators);
    if (len == 0) return fail(spec, "--%s: empty item in '%s'", o->name, v);
    if (l->n == TX_LIST_MAX) return fail(spec, "--%s: more than %d items", o->name, TX_LIST_MAX);
    char *item = malloc(len + 1);
    if (!item) return fail(spec, "out of memory");
    memcpy(item, s, len);
    item[len] = '\0';
    l->items[l->n++] = item;
    if (s[len] == '\0') return TX_ARGS_OK;
    s += len + 1;
  }
}

static tx_args_result set_value(const tx_cmd_spec *spec, const tx_opt *o, const char *v) {
  switch (o->kind) {
  case TX_OPT_INT:
  case TX_OPT_BOUND:
    return set_int(spec, o, v);
  case TX_OPT_DOUBLE:
    return set_double(spec, o, v);
  case TX_OPT_STRING:
    *(const char **)o->dest = v;
    return TX_ARGS_OK;
  case TX_OPT_LIST:
    return add_list(spec, o, v, ",");
  case TX_OPT_REPEAT:
    return add_list(spec, o, v, "");
  case TX_OPT_CHOICE:
    return set_choice(spec, o, v);
  case TX_OPT_FLAG:
    break;
  }
  return fail(spec, "--%s takes no value", o->name);
}

static void print_opt(const char *left, const char *help, FILE *f) {
  enum { COL = 30 };
  if (strlen(left) + 2 < COL)
    fprintf(f, "  %-*s%s\n", COL - 2, left, help);
  else
    fprintf(f, "  %s\n  %-*s%s\n", left, COL - 2, "", help);
}

static void print_help(const tx_cmd_spec *spec, FILE *f) {
  print_usage_line(spec, f);
  fprintf(f, "\n%s\n", spec->about);
  for (size_t g = 0; g < spec->n_groups; g++) {
    fprintf(f, "\n%s:\n", spec->groups[g].title);
    for (size_t i = 0; i < spec->groups[g].n_opts; i++) {
      const tx_opt *o = &spec->groups[g].opts[i];
      char left[96];
      if (o->kind == TX_OPT_FLAG)
        snprintf(left, sizeof left, "--%s", o->name);
      else
        snprintf(left, sizeof left, "--%s %s", o->name, o->metavar);
      print_opt(left, o->help, f);
    }
  }
  fprintf(f, "\n");
  print_opt("-h, --help", "show this help and exit", f);
}

static tx_args_result parse(const tx_cmd_spec *spec, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_help(spec, stdout);
      return TX_ARGS_HELP;
    }
    const int short_out = strcmp(arg, "-o") == 0; /* -o FILE: --output FILE, where there is one */
    if (!short_out && (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')) {
      char near[160] = ""; /* -kernel, or kernel: an option without its dashes */
      const char *bare = arg + (arg[0] == '-');
      if (*bare) near_option(spec, bare, strcspn(bare, "="), near, sizeof near);
      return fail(spec, "unexpected argument '%s'%s", arg, near);
    }
    const char *name = short_out ? "output" : arg + 2, *eq = short_out ? NULL : strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const tx_opt *o = find_opt(spec, name, len);
    if (!o && short_out) return fail(spec, "unknown option '-o'");
    if (!o) {
      char near[160];
      near_option(spec, name, len, near, sizeof near);
      return fail(spec, "unknown option '--%.*s'%s", (int)len, name, near);
    }
    if (o->kind == TX_OPT_FLAG) {
      if (eq) return fail(spec, "--%s takes no value", o->name);
      *(int *)o->dest = 1;
      continue;
    }
    const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    if (!value) return fail(spec, "--%s needs a value (%s)", o->name, o->metavar);
    tx_args_result r = set_value(spec, o, value);
    if (r != TX_ARGS_OK) return r;
  }
  return TX_ARGS_OK;
}

int tx_args_parse_cmd(const tx_cmd_spec *spec, int argc, char **argv) {
  tx_args_result r = parse(spec, argc, argv);
  return r == TX_ARGS_OK ? -1 : r == TX_ARGS_HELP ? TX_EXIT_OK : TX_EXIT_USAGE;
}
