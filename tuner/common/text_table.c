/* SPDX-License-Identifier: MIT */
#include "text_table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tx_table_init(tx_table *t, const char *spec) {
  memset(t, 0, sizeof *t);
  const char *s = spec;
  while (*s && t->n_cols < TX_TABLE_MAX_COLS) {
    size_t len = strcspn(s, "|");
    int right = *s == '>';
    snprintf(t->headers[t->n_cols], sizeof t->headers[0], "%.*s", (int)(len - (size_t)right),
             s + right);
    t->right[t->n_cols] = right;
    t->n_cols++;
    s += len + (s[len] == '|');
  }
}

static char *dup_or_null(const char *s) {
  if (!s) return NULL;
  size_t len = strlen(s) + 1;
  char *d = malloc(len);
  if (d) memcpy(d, s, len);
  return d;
}

void tx_table_add(tx_table *t, const char *const *cells) {
  if (t->n_rows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    tx_table_row *rows = realloc(t->rows, cap * sizeof *rows);
    if (!rows) {
      t->oom = 1;
      return;
    }
    t->rows = rows;
    t->cap = cap;
  }
  tx_table_row *r = &t->rows[t->n_rows++];
  memset(r, 0, sizeof *r);
  for (size_t c = 0; c < t->n_cols; c++) {
    r->cells[c] = dup_or_null(cells[c]);
    if (cells[c] && !r->cells[c]) t->oom = 1;
  }
}

void tx_table_note(tx_table *t, const char *fmt, ...) {
  if (t->n_rows == 0) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tx_table_row *r = &t->rows[t->n_rows - 1];
  free(r->note);
  r->note = dup_or_null(buf);
  if (!r->note) t->oom = 1;
}

static const char *cell(const tx_table_row *r, size_t c) {
  return r->cells[c] ? r->cells[c] : "-";
}

static void print_row(const tx_table *t, FILE *f, const char *indent, const char *const *cells,
                      const size_t *width) {
  fputs(indent, f);
  for (size_t c = 0; c < t->n_cols; c++) {
    int last = c + 1 == t->n_cols;
    const char *gap = c ? "  " : "";
    if (t->right[c])
      fprintf(f, "%s%*s", gap, (int)width[c], cells[c]);
    else if (last) /* no trailing blanks */
      fprintf(f, "%s%s", gap, cells[c]);
    else
      fprintf(f, "%s%-*s", gap, (int)width[c], cells[c]);
  }
  fputc('\n', f);
}

void tx_table_print(const tx_table *t, FILE *f, const char *indent) {
  size_t width[TX_TABLE_MAX_COLS];
  for (size_t c = 0; c < t->n_cols; c++) {
    width[c] = strlen(t->headers[c]);
    for (size_t i = 0; i < t->n_rows; i++) {
      size_t w = strlen(cell(&t->rows[i], c));
      if (w > width[c]) width[c] = w;
    }
  }
  const char *headers[TX_TABLE_MAX_COLS];
  for (size_t c = 0; c < t->n_cols; c++) headers[c] = t->headers[c];
  print_row(t, f, indent, headers, width);
  for (size_t i = 0; i < t->n_rows; i++) {
    const char *cells[TX_TABLE_MAX_COLS];
    for (size_t c = 0; c < t->n_cols; c++) cells[c] = cell(&t->rows[i], c);
    print_row(t, f, indent, cells, width);
    if (t->rows[i].note) fprintf(f, "%s    %s\n", indent, t->rows[i].note);
  }
  if (t->oom) fprintf(f, "%s(out of memory: some rows or cells are missing)\n", indent);
}

void tx_table_free(tx_table *t) {
  for (size_t i = 0; i < t->n_rows; i++) {
    for (size_t c = 0; c < t->n_cols; c++) free(t->rows[i].cells[c]);
    free(t->rows[i].note);
  }
  free(t->rows);
  memset(t, 0, sizeof *t);
}

const char *tx_fmt_time(double s, char *buf, size_t size) {
  if (s < 1e-3)
    snprintf(buf, size, "%.3g us", s * 1e6);
  else if (s < 1.0)
    snprintf(buf, size, "%.3g ms", s * 1e3);
  else
    snprintf(buf, size, "%.3g s", s);
  return buf;
}

int tx_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...) {
  if (*len >= size) return -1;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= size - *len) {
    *len = size - 1;
    return -1;
  }
  *len += (size_t)w;
  return 0;
}
