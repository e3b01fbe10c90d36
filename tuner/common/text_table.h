/* SPDX-License-Identifier: MIT */
/* Aligned text tables for people: cells are collected first so every column gets the width of its
   widest cell. */
#ifndef TXTUNE_TEXT_TABLE_H
#define TXTUNE_TEXT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define TX_TABLE_MAX_COLS 12

typedef struct tx_table_row {
  char *cells[TX_TABLE_MAX_COLS];
  char *note; /* printed on its own line under the row, indented; NULL for none */
} tx_table_row;

typedef struct tx_table {
  size_t n_cols;
  char headers[TX_TABLE_MAX_COLS][48];
  int right[TX_TABLE_MAX_COLS]; /* 1: right-aligned (numbers) */
  tx_table_row *rows;
  size_t n_rows, cap;
  int oom; /* an allocation failed: printing says so instead of dropping cells silently */
} tx_table;

/* spec: the headers separated by '|'; a header starting with '>' is right-aligned ("KERNEL|>TIME
 * ms") */
void tx_table_init(tx_table *t, const char *spec);
/* Adds a row of n_cols cells; NULL cells print as "-". */
void tx_table_add(tx_table *t, const char *const *cells);
/* Attaches a note line to the last row (printf-style). */
void tx_table_note(tx_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tx_table_print(const tx_table *t, FILE *f, const char *indent);
void tx_table_free(tx_table *t);
/* Appends printf's text at buf + *len (buf of size bytes, *len < size), as much as fits, and
   moves *len past it; once the text no longer fits *len stays at size - 1 (the buffer full and
   terminated) and -1 is returned, else 0. */
int tx_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A duration for people: "812 us", "3.1 ms", "2.05 s". Returns buf. */
const char *tx_fmt_time(double seconds, char *buf, size_t size);

#endif
