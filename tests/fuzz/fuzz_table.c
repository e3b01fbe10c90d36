/* SPDX-License-Identifier: MIT */
/* Fuzz target: the dispatch table reader. The input is written to a file and loaded with
   txattn_table_load; a table that loads is read through every getter (and each getter refuses the
   index one past the end), checked against a context of the shipped plugins, dumped, written with
   txattn_table_write and loaded again, and the reloaded table must dump to the same text. A table
   that does not load must leave *out NULL and say why. Anything else aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "txattn/table.h"
#include "txattn/txattn.h"

/* A malloc too large fails as the library expects instead of ending the process (ASan's default):
   the library must refuse what it cannot allocate. ASAN_OPTIONS adds to this. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}

static txattn_context *ctx;
static char dir[] = "/tmp/txattn-fuzz-table-XXXXXX";
static char input_path[64], written_path[64];

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    dprintf(2, "fuzz_table: " __VA_ARGS__);                                                        \
    dprintf(2, "\n");                                                                              \
    abort();                                                                                       \
  } while (0)

static void cleanup(void) {
  unlink(input_path);
  unlink(written_path);
  rmdir(dir);
  txattn_context_free(ctx);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (!mkdtemp(dir)) FAIL("cannot create a directory under /tmp");
  snprintf(input_path, sizeof input_path, "%s/input.json", dir);
  snprintf(written_path, sizeof written_path, "%s/written.json", dir);
  txattn_options opts = TXATTN_OPTIONS_INIT;
  opts.table_path = "";
  opts.n_threads = 1;
  opts.caches = "l1d=48K,l2=1M,l3=32M";
  if (txattn_context_create(&opts, &ctx) != TXATTN_OK) FAIL("no context: %s", txattn_last_error());
  atexit(cleanup);
  return 0;
}

/* The table as txattn_table_dump writes it, in a malloc'ed string. */
static char *dump(const txattn_table *t) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) FAIL("open_memstream");
  txattn_status st = txattn_table_dump(t, f);
  fclose(f);
  if (st != TXATTN_OK) FAIL("dump failed: %s", txattn_last_error());
  return text;
}

static void read_all(const txattn_table *t) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(t, &h) != TXATTN_OK) FAIL("header_get: %s", txattn_last_error());
  for (size_t i = 0; i < h.n_plugins; i++) {
    txattn_table_plugin pl = TXATTN_TABLE_PLUGIN_INIT;
    if (txattn_table_plugin_get(t, i, &pl) != TXATTN_OK || !pl.name || !pl.version || !pl.build)
      FAIL("plugin_get %zu", i);
  }
  txattn_table_plugin pl = TXATTN_TABLE_PLUGIN_INIT;
  if (txattn_table_plugin_get(t, h.n_plugins, &pl) == TXATTN_OK) FAIL("plugin_get past the end");
  for (size_t c = 0; c < h.n_classes; c++) {
    txattn_table_class cls = TXATTN_TABLE_CLASS_INIT;
    size_t n_points = 0, n_regions = 0;
    if (txattn_table_class_get(t, c, &cls, &n_points, &n_regions) != TXATTN_OK)
      FAIL("class_get %zu: %s", c, txattn_last_error());
    char name[256];
    int w = txattn_table_class_describe(&cls, name, sizeof name);
    if (w < 0) FAIL("class_describe %zu", c);
    size_t found = SIZE_MAX;
    if (txattn_table_find_class(t, &cls, &found) != TXATTN_OK || found != c)
      FAIL("class %zu (%s) is found at %zu", c, name, found);
    for (size_t p = 0; p < n_points; p++) {
      txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
      if (txattn_table_point_get(t, c, p, &pt) != TXATTN_OK) FAIL("point_get %zu %zu", c, p);
      for (size_t k = 0; k < pt.n_candidates; k++) {
        txattn_table_candidate cand = TXATTN_TABLE_CANDIDATE_INIT;
        if (txattn_table_candidate_get(t, c, p, k, &cand) != TXATTN_OK || !cand.kernel)
          FAIL("candidate_get %zu %zu %zu", c, p, k);
        for (size_t u = 0; u < cand.n_tunables; u++)
          if (!cand.tunable_names[u]) FAIL("tunable name %zu %zu %zu %zu", c, p, k, u);
      }
      txattn_table_candidate cand = TXATTN_TABLE_CANDIDATE_INIT;
      if (txattn_table_candidate_get(t, c, p, pt.n_candidates, &cand) == TXATTN_OK)
        FAIL("candidate_get past the end");
    }
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, c, n_points, &pt) == TXATTN_OK) FAIL("point_get past the end");
    for (size_t r = 0; r < n_regions; r++) {
      txattn_table_region reg = TXATTN_TABLE_REGION_INIT;
      if (txattn_table_region_get(t, c, r, &reg) != TXATTN_OK || !reg.winner.kernel)
        FAIL("region_get %zu %zu", c, r);
    }
    txattn_table_region reg = TXATTN_TABLE_REGION_INIT;
    if (txattn_table_region_get(t, c, n_regions, &reg) == TXATTN_OK)
      FAIL("region_get past the end");
  }
  txattn_table_class cls = TXATTN_TABLE_CLASS_INIT;
  if (txattn_table_class_get(t, h.n_classes, &cls, NULL, NULL) == TXATTN_OK)
    FAIL("class_get past the end");
  for (size_t e = 0; e < h.n_excluded; e++) {
    txattn_table_exclusion ex = TXATTN_TABLE_EXCLUSION_INIT;
    if (txattn_table_exclusion_get(t, e, &ex) != TXATTN_OK || !ex.kernel || !ex.reason)
      FAIL("exclusion_get %zu", e);
  }
  txattn_table_exclusion ex = TXATTN_TABLE_EXCLUSION_INIT;
  if (txattn_table_exclusion_get(t, h.n_excluded, &ex) == TXATTN_OK)
    FAIL("exclusion_get past the end");
  char why[4096];
  txattn_status st = txattn_table_check(t, ctx, why, sizeof why);
  if (st != TXATTN_OK && st != TXATTN_E_TABLE) FAIL("check: %s", txattn_status_name(st));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(input_path, "wb");
  if (!f) FAIL("cannot write %s", input_path);
  if (size && fwrite(data, 1, size, f) != size) FAIL("cannot write %s", input_path);
  fclose(f);

  txattn_table *t = (txattn_table *)&ctx; /* not NULL: a failed load must clear it */
  txattn_status st = txattn_table_load(input_path, &t);
  if (st != TXATTN_OK) {
    if (t != NULL) FAIL("load failed (%s) but set the table", txattn_status_name(st));
    if (st != TXATTN_E_TABLE && st != TXATTN_E_IO && st != TXATTN_E_NOMEM)
      FAIL("load: %s: %s", txattn_status_name(st), txattn_last_error());
    if (txattn_last_error()[0] == '\0') FAIL("load failed without a message");
    return 0;
  }
  read_all(t);
  char *first = dump(t);
  st = txattn_table_write(t, written_path);
  if (st != TXATTN_OK) FAIL("a loaded table does not write: %s", txattn_last_error());
  txattn_table *again = NULL;
  st = txattn_table_load(written_path, &again);
  if (st != TXATTN_OK) FAIL("the table written does not load: %s", txattn_last_error());
  read_all(again);
  char *second = dump(again);
  if (strcmp(first, second) != 0) FAIL("the reloaded table dumps differently");
  free(first);
  free(second);
  txattn_table_free(again);
  txattn_table_free(t);
  return 0;
}
