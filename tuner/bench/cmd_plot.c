/* SPDX-License-Identifier: MIT */
/* txtune plot: a dispatch table or a bench sweep as one self-contained SVG of time against n,
   log-log: first the best kernel per mask kind ("the price of attention", plot_price.c), then
   each kernel per class (plot_svg.c). This file reads the options and tells the inputs apart. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "plot.h"
#include "txattn/table.h"

typedef struct plot_run {
  const char *table_path, *from_path, *out;
  tx_opt opts[3];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  char path[4096];
  tx_plot plot;
} plot_run;

static const char about[] =
    "Draws a dispatch table (`txtune profile`) or a bench sweep (`txtune bench --n A..B -o FILE`)\n"
    "as an SVG of time against n, log-log: first the best kernel per mask kind (dense attention\n"
    "bends toward slope 2, a window stays at 1), then a panel per class with each kernel's curve\n"
    "and fitted slope. Without a file: the table libtxattn follows. How to read it: "
    "docs/bench.md.\n"
    "Exit status: 0 written; 1 a file could not be read, plotted or written; 2 usage error.";

static int parse(plot_run *r, int argc, char **argv) {
  r->opts[0] = tx_opt_string("from", &r->from_path, "FILE",
                             "a dispatch table or a bench sweep's JSON, told apart by content");
  r->opts[1] = tx_opt_string("table", &r->table_path, "FILE",
                             "the dispatch table [$TXATTN_TABLE, else the default]");
  r->opts[2] = tx_opt_string("output", &r->out, "FILE.svg",
                             "where to write the SVG (also -o) [txtune-profile.svg]");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 3};
  r->spec =
      (tx_cmd_spec){"plot", "[--from FILE | --table FILE] [-o FILE.svg]", about, r->groups, 1};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (r->from_path && r->table_path)
    return tx_args_usage_error(&r->spec, "give either --from or --table, not both");
  return -1;
}

static int not_plottable(const char *path, const char *why) {
  fprintf(stderr,
          "txtune plot: %s is neither a dispatch table (\"format\": \"" TXATTN_TABLE_FORMAT
          "\", from `txtune profile`) nor a bench sweep (\"format\": \"" TX_SWEEP_FORMAT
          "\", from `txtune bench` with several n and -o FILE): %s\n",
          path, why);
  return TX_EXIT_FAIL;
}

static int from_json(plot_run *r, const json_t *root) {
  const char *format = json_string_value(json_object_get(root, "format"));
  char why[192];
  if (format && strcmp(format, TXATTN_TABLE_FORMAT) == 0)
    return tx_plot_from_table(r->path, &r->plot);
  if (format && strcmp(format, TX_SWEEP_FORMAT) == 0)
    return tx_plot_from_sweep(root, r->path, &r->plot);
  if (!format && json_object_get(root, "kernels") && json_object_get(root, "problem"))
    return not_plottable(r->path, "it is `txtune bench --json` output for a single problem; "
                                  "give --n a list or a range (--n 1024..16384) for a sweep");
  if (format)
    snprintf(why, sizeof why, "its format is \"%.100s\"", format);
  else
    snprintf(why, sizeof why, "it has no \"format\" field");
  return not_plottable(r->path, why);
}

/* The whole file, NUL-terminated; NULL (errno set) if it cannot be read. */
static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  errno = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *bigger = realloc(buf, 2 * cap + 1);
    if (!bigger) free(buf);
    buf = bigger;
    cap *= 2;
  }
  int e = !buf ? ENOMEM : ferror(f) ? (errno ? errno : EIO) : 0; /* EISDIR for a directory */
  fclose(f);
  if (e) {
    free(buf);
    errno = e;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Not JSON: a damaged table still names its format, and its reader says where it breaks. */
static int from_broken(plot_run *r, const char *text, const json_error_t *err) {
  if (strstr(text, "\"" TXATTN_TABLE_FORMAT "\"")) return tx_plot_from_table(r->path, &r->plot);
  if (strstr(text, "\"" TX_SWEEP_FORMAT "\"")) {
    fprintf(stderr, "txtune plot: malformed bench sweep %s:%d:%d: %s\n", r->path, err->line,
            err->column, err->text);
    return TX_EXIT_FAIL;
  }
  char why[256];
  snprintf(why, sizeof why, "not JSON (line %d, column %d: %s)", err->line, err->column, err->text);
  return not_plottable(r->path, why);
}

/* --from: the content says what the file is. */
static int load_any(plot_run *r) {
  size_t len;
  char *text = read_all(r->path, &len);
  if (!text) {
    fprintf(stderr, "txtune plot: cannot read %s: %s\n", r->path, strerror(errno));
    return TX_EXIT_FAIL;
  }
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  int rc = !root                  ? from_broken(r, text, &err)
           : json_is_object(root) ? from_json(r, root)
                                  : not_plottable(r->path, "not a JSON object");
  json_decref(root);
  free(text);
  return rc;
}

static int load(plot_run *r) {
  if (r->from_path || r->table_path)
    snprintf(r->path, sizeof r->path, "%s", r->from_path ? r->from_path : r->table_path);
  else if (txattn_table_default_path(r->path, sizeof r->path) != TXATTN_OK) {
    fprintf(stderr, "txtune plot: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  int rc = r->from_path ? load_any(r) : tx_plot_from_table(r->path, &r->plot);
  if (rc) return rc;
  if (r->plot.dropped)
    fprintf(stderr,
            "txtune plot: %zu measurements of %s left out: a panel holds at most %d n and "
            "%d kernels\n",
            r->plot.dropped, r->path, TX_PLOT_MAX_X, TX_PLOT_MAX_SERIES);
  if (tx_plot_count_drawable(&r->plot) > 0) return 0;
  fprintf(stderr, "txtune plot: %s holds no measured time to plot\n", r->path);
  return TX_EXIT_FAIL;
}

static int write_file(plot_run *r, const char *out) {
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "txtune plot: cannot write %s: %s\n", out, strerror(errno));
    return TX_EXIT_FAIL;
  }
  int bad = tx_plot_write_svg(&r->plot, r->path, f) != 0;
  bad |= fclose(f) != 0;
  if (!bad) return 0;
  fprintf(stderr, "txtune plot: cannot write %s\n", out);
  return TX_EXIT_FAIL;
}

int tx_cmd_plot(int argc, char **argv) {
  plot_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  const char *out = r.out ? r.out : "txtune-profile.svg";
  if ((rc = load(&r)) == 0 && (rc = write_file(&r, out)) == 0)
    printf("wrote %s (%s%zu panel%s of time against n per class, from %s)\n", out,
           tx_plot_has_best(&r.plot) ? "the price of attention, " : "",
           tx_plot_count_drawable(&r.plot), tx_plot_count_drawable(&r.plot) == 1 ? "" : "s",
           r.path);
  tx_plot_free(&r.plot);
  return rc;
}
