/* SPDX-License-Identifier: MIT */
#include "json.h"

#include <inttypes.h>
#include <math.h>

void tx_json_init(tx_json *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->has_items[0] = 0;
  j->after_key = 0;
}

static void newline(tx_json *j) {
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* Every value and key goes through here: it writes the separator the position needs. */
static void before_item(tx_json *j) {
  if (j->after_key) {
    j->after_key = 0;
    return;
  }
  if (j->depth > 0) {
    if (j->has_items[j->depth]) fputc(',', j->f);
    newline(j);
  }
  j->has_items[j->depth] = 1;
}

static void open_container(tx_json *j, char c) {
  before_item(j);
  fputc(c, j->f);
  if (j->depth + 1 < TX_JSON_MAX_DEPTH) j->depth++;
  j->has_items[j->depth] = 0;
}

static void close_container(tx_json *j, char c) {
  int had = j->has_items[j->depth];
  if (j->depth > 0) j->depth--;
  if (had) newline(j);
  fputc(c, j->f);
}

void tx_json_begin_object(tx_json *j) {
  open_container(j, '{');
}
void tx_json_end_object(tx_json *j) {
  close_container(j, '}');
}
void tx_json_begin_array(tx_json *j) {
  open_container(j, '[');
}
void tx_json_end_array(tx_json *j) {
  close_container(j, ']');
}

static void write_escaped(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const char *esc = *p == '"'    ? "\\\""
                      : *p == '\\' ? "\\\\"
                      : *p == '\n' ? "\\n"
                      : *p == '\r' ? "\\r"
                      : *p == '\t' ? "\\t"
                                   : NULL;
    if (esc)
      fputs(esc, f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

void tx_json_key(tx_json *j, const char *key) {
  before_item(j);
  write_escaped(j->f, key);
  fputs(": ", j->f);
  j->after_key = 1;
}

void tx_json_string(tx_json *j, const char *s) {
  before_item(j);
  if (s)
    write_escaped(j->f, s);
  else
    fputs("null", j->f);
}

void tx_json_int(tx_json *j, int64_t v) {
  before_item(j);
  fprintf(j->f, "%" PRId64, v);
}

void tx_json_double(tx_json *j, double v) {
  before_item(j);
  if (isfinite(v))
    fprintf(j->f, "%.9g", v);
  else
    fputs("null", j->f);
}

void tx_json_bool(tx_json *j, int v) {
  before_item(j);
  fputs(v ? "true" : "false", j->f);
}

void tx_json_null(tx_json *j) {
  before_item(j);
  fputs("null", j->f);
}

void tx_json_finish(tx_json *j) {
  fputc('\n', j->f);
}

void tx_json_kv_string(tx_json *j, const char *key, const char *s) {
  tx_json_key(j, key);
  tx_json_string(j, s);
}
void tx_json_kv_int(tx_json *j, const char *key, int64_t v) {
  tx_json_key(j, key);
  tx_json_int(j, v);
}
void tx_json_kv_double(tx_json *j, const char *key, double v) {
  tx_json_key(j, key);
  tx_json_double(j, v);
}
void tx_json_kv_bool(tx_json *j, const char *key, int v) {
  tx_json_key(j, key);
  tx_json_bool(j, v);
}
void tx_json_kv_object(tx_json *j, const char *key) {
  tx_json_key(j, key);
  tx_json_begin_object(j);
}
void tx_json_kv_array(tx_json *j, const char *key) {
  tx_json_key(j, key);
  tx_json_begin_array(j);
}
