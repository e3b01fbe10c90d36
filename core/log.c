/* SPDX-License-Identifier: MIT */
/* The verbose log (TXATTN_VERBOSE) on stderr. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static pthread_once_t verbose_once = PTHREAD_ONCE_INIT;
static int verbose;

static void read_verbose(void) {
  const char *v = getenv("TXATTN_VERBOSE");
  verbose = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

int txattn__verbose(void) {
  pthread_once(&verbose_once, read_verbose);
  return verbose;
}

void txattn__log(const char *fmt, ...) {
  if (!txattn__verbose()) return;
  /* One fprintf per line so that lines from several threads do not interleave; a line longer than
     the buffer (a long path) is formatted again whole on the heap, never cut. */
  char line[1536], *text = line;
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof line && (text = malloc((size_t)n + 1)) != NULL)
    vsnprintf(text, (size_t)n + 1, fmt, again);
  va_end(again);
  fprintf(stderr, "txattn: %s\n", text ? text : line);
  if (text != line) free(text);
}
