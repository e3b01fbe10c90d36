/* SPDX-License-Identifier: MIT */
/* The topology matrix (issue 16): the machines users have, faked from hwloc XML files with the caches
 * of real CPUs (tests/data/topologies/README.md names each file's source), some under an ISA cap
 * (TXATTN_MAX_ISA) or a cache override (TXATTN_CACHES). For each:
 *  (a) `txtune topo` exits 0 and prints the per-core sizes hwloc gives for that file, used as they
 *      are when plausible, else replaced with a note, and the library reports the same;
 *  (b) every usable kernel plans or declines (E_UNSUPPORTED) every shape of a battery up to
 *      n = 65536 and d = 256, never anything else; the dispatcher plans every shape, and the kernel
 *      it picks, with the tiles it picked, agrees with txattn_reference on a small shape of the same
 *      kind (as does the dispatcher's own pick for the small shape);
 *  (c) `txtune check --quick` passes.
 * Nothing here depends on the host but which ISAs it has: an ISA the CPU lacks leaves its kernels
 * unusable, and they are skipped as a user's would be. Contexts take 2 threads whatever the host. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <jansson.h>

#include "attn_case.h"
#include "case_check.h"
#include "test_context.h"
#include "txattn/txattn.h"

#define KIB     INT64_C(1024)
#define MIB     (KIB * KIB)
#define THREADS 2

enum { L1D = 1, L2 = 2, L3 = 4 }; /* the levels a machine's notes must name */

/* No pointers: Criterion copies parameters into the test's process. */
struct machine {
  char file[40];   /* in tests/data/topologies */
  char max_isa[8]; /* TXATTN_MAX_ISA, "" for none */
  char caches[40]; /* TXATTN_CACHES, "" for none */
  int cores;       /* in the file */
  int64_t hw[3];   /* per-core l1d, l2, l3 as hwloc reports them from the file; 0: none */
  int64_t used[3]; /* the sizes the library must use; 0: any plausible one, with a note */
  unsigned noted;  /* the levels the notes must name (all others: no note) */
  char source[32]; /* the cache source the library must report */
};

#define SPR_HW                                                                                     \
  { 48 * KIB, 2 * MIB, 1920 * KIB }
#define ZEN2_HW                                                                                    \
  { 32 * KIB, 512 * KIB, 4 * MIB }
#define SKX_HW                                                                                     \
  { 32 * KIB, 1 * MIB, 1408 * KIB }
#define ZEN4_HW                                                                                    \
  { 32 * KIB, 1 * MIB, 4 * MIB }
#define PLAIN(F) .file = F, .source = "hwloc"

static struct machine machines[] = {
    {PLAIN("sapphire-rapids.xml"), .cores = 4, .hw = SPR_HW, .used = SPR_HW},
    {PLAIN("ice-lake-sp.xml"), .cores = 4, .hw = {48 * KIB, 1280 * KIB, 1536 * KIB},
     .used = {48 * KIB, 1280 * KIB, 1536 * KIB}},
    {PLAIN("skylake-sp.xml"), .cores = 4, .hw = SKX_HW, .used = SKX_HW},
    {PLAIN("zen2.xml"), .cores = 8, .hw = ZEN2_HW, .used = ZEN2_HW},
    {PLAIN("zen4.xml"), .cores = 8, .hw = ZEN4_HW, .used = ZEN4_HW},
    {PLAIN("zen5.xml"), .cores = 8, .hw = {48 * KIB, 1 * MIB, 4 * MIB},
     .used = {48 * KIB, 1 * MIB, 4 * MIB}},
    {PLAIN("graviton3.xml"), .cores = 8, .hw = {64 * KIB, 1 * MIB, 512 * KIB},
     .used = {64 * KIB, 1 * MIB, 512 * KIB}},
    /* no L3: the L2 share stands for it */
    {PLAIN("apple-m2.xml"), .cores = 4, .hw = {128 * KIB, 4 * MIB, 0},
     .used = {128 * KIB, 4 * MIB, 4 * MIB}, .noted = L3},
    /* 254 MiB of L3 per core is no size to tile by */
    {.file = "vm-508mib-l3.xml",
     .cores = 2,
     .hw = {32 * KIB, 512 * KIB, 254 * MIB},
     .used = {32 * KIB, 512 * KIB, 0},
     .noted = L3,
     .source = "hwloc+typical"},
    {.file = "container-no-caches.xml",
     .cores = 2,
     .used = {0, 0, 0},
     .noted = L1D | L2 | L3,
     .source = "typical"},
    /* the lower ISAs on the biggest and the smallest L2 */
    {PLAIN("sapphire-rapids.xml"), .max_isa = "avx2", .cores = 4, .hw = SPR_HW, .used = SPR_HW},
    {PLAIN("sapphire-rapids.xml"), .max_isa = "scalar", .cores = 4, .hw = SPR_HW, .used = SPR_HW},
    {PLAIN("zen2.xml"), .max_isa = "avx2", .cores = 8, .hw = ZEN2_HW, .used = ZEN2_HW},
    {PLAIN("zen2.xml"), .max_isa = "scalar", .cores = 8, .hw = ZEN2_HW, .used = ZEN2_HW},
    /* overrides beyond every file: a 4 MiB L2, and the smallest plausible caches */
    {.file = "zen4.xml",
     .caches = "l2=4M",
     .cores = 8,
     .hw = ZEN4_HW,
     .used = {32 * KIB, 4 * MIB, 4 * MIB},
     .noted = L2,
     .source = "hwloc+TXATTN_CACHES"},
    {.file = "skylake-sp.xml",
     .caches = "l1d=8K,l2=128K,l3=512K",
     .cores = 4,
     .hw = SKX_HW,
     .used = {8 * KIB, 128 * KIB, 512 * KIB},
     .noted = L1D | L2 | L3,
     .source = "hwloc+TXATTN_CACHES"},
};

static void describe(const struct machine *m, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s%s%s", m->file, m->max_isa[0] ? " TXATTN_MAX_ISA=" : "", m->max_isa,
           m->caches[0] ? " TXATTN_CACHES=" : "", m->caches);
}

static void clean_env(void) {
  test_env_clean();
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_THISSYSTEM");
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XML_VERBOSE");
}

static char long_dir[1024]; /* test_long_path_to's, this process's */

static void finish(void) {
  if (long_dir[0]) test_long_path_remove(long_dir);
  test_check_leaks();
}

TestSuite(topology_matrix, .init = clean_env, .fini = finish, .timeout = 120);

/* This process and the txtune it starts see the machine m from now on, through a path longer than
   any text field of txattn_machine_info (test_long_path_to) wherever the tree sits; `path` (NULL
   if not wanted) gets it. */
static void use_machine(const struct machine *m, char *path, size_t size) {
  char file[2048];
  test_long_path_to(TXATTN_TEST_TOPOLOGY_DIR, long_dir, sizeof long_dir);
  snprintf(file, sizeof file, "%s/%s", long_dir, m->file);
  if (path) snprintf(path, size, "%s", file);
  cr_assert_eq(setenv("HWLOC_XMLFILE", file, 1), 0);
  if (m->max_isa[0]) cr_assert_eq(setenv("TXATTN_MAX_ISA", m->max_isa, 1), 0);
  if (m->caches[0]) cr_assert_eq(setenv("TXATTN_CACHES", m->caches, 1), 0);
}

static txattn_context *machine_context(void) {
  return test_context(THREADS);
}

/* ---- running txtune ---- */

struct output {
  char *text;
  int status; /* the exit status, -1 if txtune did not exit normally */
};

/* Runs txtune with args (shell words, no quoting needed) in this environment; stdout is captured,
   stderr goes to the test's. */
static struct output txtune(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' %s", TXATTN_TEST_TXTUNE, args);
  FILE *f = popen(cmd, "r");
  cr_assert(f != NULL, "cannot run %s", cmd);
  size_t len = 0, cap = 1 << 16;
  char *text = malloc(cap);
  cr_assert(text != NULL);
  size_t got;
  while ((got = fread(text + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len < 4096) {
      cap *= 2;
      text = realloc(text, cap);
      cr_assert(text != NULL);
    }
  }
  text[len] = '\0';
  int st = pclose(f);
  struct output out = {text, WIFEXITED(st) ? WEXITSTATUS(st) : -1};
  return out;
}

/* ---- (a) txtune topo ---- */

static const char *const level_names[3] = {"l1d", "l2", "l3"};

/* Sizes as txtune topo prints them (tuner/inspect/cmd_topo.c size_text). */
static const char *size_text(int64_t bytes, char *buf, size_t size) {
  if (bytes <= 0)
    snprintf(buf, size, "-");
  else if (bytes % MIB == 0)
    snprintf(buf, size, "%" PRId64 " MiB", bytes / MIB);
  else if (bytes >= MIB)
    snprintf(buf, size, "%.2f MiB", (double)bytes / (double)MIB);
  else if (bytes % KIB == 0)
    snprintf(buf, size, "%" PRId64 " KiB", bytes / KIB);
  else
    snprintf(buf, size, "%" PRId64 " B", bytes);
  return buf;
}

static int64_t json_int_at(json_t *root, const char *a, const char *b, const char *c,
                           const char *d) {
  json_t *x = json_object_get(root, a);
  if (b) x = json_object_get(x, b);
  if (c) x = json_object_get(x, c);
  if (d) x = json_object_get(x, d);
  cr_assert(json_is_integer(x), "txtune topo --json: no integer at %s.%s%s%s%s%s", a, b ? b : "",
            c ? "." : "", c ? c : "", d ? "." : "", d ? d : "");
  return json_integer_value(x);
}

static int in_range(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi;
}

/* The sizes txtune topo printed as used (the last column of the cache table), against want. */
static void expect_text_sizes(const char *text, const int64_t want[3], const char *desc) {
  static const char *const rows[3] = {"L1d ", "L2 ", "L3 "};
  for (int l = 0; l < 3; l++) {
    const char *line = text;
    while (line && strncmp(line, rows[l], strlen(rows[l])) != 0) {
      line = strchr(line, '\n');
      if (line) line++;
    }
    cr_assert(line != NULL, "%s: txtune topo prints no %srow:\n%s", desc, rows[l], text);
    size_t n = strcspn(line, "\n");
    char row[256], size[32];
    snprintf(row, sizeof row, "%.*s", (int)n, line);
    size_text(want[l], size, sizeof size);
    size_t k = strlen(size), r = strlen(row);
    cr_expect(r >= k && strcmp(row + r - k, size) == 0, "%s: the %s row should end in %s: %s", desc,
              level_names[l], size, row);
  }
}

ParameterizedTestParameters(topology_matrix, txtune_topo_reports_sane_sizes) {
  return cr_make_param_array(struct machine, machines, sizeof machines / sizeof machines[0]);
}

ParameterizedTest(struct machine *m, topology_matrix, txtune_topo_reports_sane_sizes) {
  char desc[128];
  describe(m, desc, sizeof desc);
  char path[2048];
  use_machine(m, path, sizeof path);

  /* the library's own view */
  txattn_context *ctx = machine_context();
  txattn_machine_info mi = TXATTN_MACHINE_INFO_INIT;
  cr_assert_eq(txattn_context_machine(ctx, &mi), TXATTN_OK, "%s", txattn_last_error());
  txattn_context_free(ctx);
  test_expect_topology_file(&mi, path);
  cr_expect_eq(mi.n_cores, m->cores, "%s: %d cores", desc, mi.n_cores);

  struct output js = txtune("topo --json --d 64,128,256");
  cr_assert_eq(js.status, 0, "%s: txtune topo --json exited %d:\n%s", desc, js.status, js.text);
  json_error_t jerr;
  json_t *root = json_loads(js.text, 0, &jerr);
  cr_assert(root != NULL, "%s: txtune topo --json: %s at line %d:\n%s", desc, jerr.text, jerr.line,
            js.text);
  cr_expect_eq(json_int_at(root, "topology", "cores", NULL, NULL), m->cores, "%s", desc);
  const char *file = json_string_value(json_object_get(json_object_get(root, "topology"), "file"));
  cr_expect(file && strcmp(file, path) == 0, "%s: txtune topo --json: topology.file %s, want %s",
            desc, file ? file : "(none)", path);

  const int64_t lib_used[3] = {mi.l1d_bytes, mi.l2_bytes, mi.l3_bytes};
  int64_t used[3];
  for (int l = 0; l < 3; l++) {
    const char *lv = level_names[l];
    int64_t hw = json_int_at(root, "caches", "hwloc", lv, "per_core_bytes");
    used[l] = json_int_at(root, "caches", "used", lv, NULL);
    cr_expect_eq(hw, m->hw[l], "%s: hwloc's %s per core: %" PRId64 ", want %" PRId64, desc, lv, hw,
                 m->hw[l]);
    cr_expect_eq(used[l], lib_used[l], "%s: txtune uses %s %" PRId64 ", the library %" PRId64, desc,
                 lv, used[l], lib_used[l]);
    if (m->used[l])
      cr_expect_eq(used[l], m->used[l], "%s: %s used %" PRId64 ", want %" PRId64, desc, lv, used[l],
                   m->used[l]);
  }
  /* sane whatever the rules: the library never tiles by an implausible size */
  cr_expect(in_range(used[0], 4 * KIB, 1 * MIB), "%s: l1d %" PRId64, desc, used[0]);
  cr_expect(in_range(used[1], 64 * KIB, 64 * MIB) && used[1] > used[0], "%s: l2 %" PRId64, desc,
            used[1]);
  cr_expect(in_range(used[2], 256 * KIB, 64 * MIB), "%s: l3 %" PRId64, desc, used[2]);

  json_t *notes = json_object_get(json_object_get(root, "caches"), "notes");
  cr_assert(json_is_array(notes), "%s: no caches.notes", desc);
  for (int l = 0; l < 3; l++) {
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%s:", level_names[l]);
    int named = 0;
    for (size_t i = 0; i < json_array_size(notes); i++)
      named |= strncmp(json_string_value(json_array_get(notes, i)), prefix, strlen(prefix)) == 0;
    cr_expect_eq(named, !!(m->noted & (1u << l)), "%s: a note on %s %s expected:\n%s", desc,
                 level_names[l], named ? "is not" : "is", mi.cache_notes);
  }
  if (m->hw[2] > 64 * MIB)
    cr_expect(strstr(mi.cache_notes, "508 MiB") != NULL, "%s: the note must give hwloc's size: %s",
              desc, mi.cache_notes);
  const char *source =
      json_string_value(json_object_get(json_object_get(root, "caches"), "source"));
  cr_expect(source && strcmp(source, m->source) == 0, "%s: cache source %s, want %s", desc,
            source ? source : "(none)", m->source);

  /* a kernel's tiles for n = 4096 are derived, or it declines the shape: never an error */
  json_t *kernels = json_object_get(root, "kernels"), *k, *by_d;
  size_t i, j;
  json_array_foreach(kernels, i, k) {
    by_d = json_object_get(k, "by_d");
    json_t *entry;
    json_array_foreach(by_d, j, entry) {
      const char *err = json_string_value(json_object_get(entry, "error"));
      cr_expect(err == NULL || strncmp(err, "TXATTN_E_UNSUPPORTED", 20) == 0,
                "%s: txtune topo: %s cannot derive tiles for d = %" PRId64 ": %s", desc,
                json_string_value(json_object_get(k, "name")),
                (int64_t)json_integer_value(json_object_get(entry, "d")), err);
    }
  }
  json_decref(root);
  free(js.text);

  /* the text a person reads says the same */
  struct output tx = txtune("topo --d 64");
  cr_assert_eq(tx.status, 0, "%s: txtune topo exited %d:\n%s", desc, tx.status, tx.text);
  expect_text_sizes(tx.text, used, desc);
  char line[96];
  snprintf(line, sizeof line, "cache sizes from: %s\n", m->source);
  cr_expect(strstr(tx.text, line) != NULL, "%s: txtune topo should say \"%s\":\n%s", desc, line,
            tx.text);
  cr_expect(strstr(tx.text, m->noted ? "notes:\n  - " : "notes: none") != NULL,
            "%s: txtune topo's notes:\n%s", desc, tx.text);
  if (m->noted == (L1D | L2 | L3) && !m->caches[0])
    cr_expect(strstr(tx.text, "not reported by hwloc") != NULL,
              "%s: the fallback must be said:\n%s", desc, tx.text);
  free(tx.text);
}

/* ---- (b) the battery: every kernel plans or declines, the dispatcher plans ---- */

#define N_SIZES 4
#define N_DIMS  3
#define N_MASKS 3
#define N_HEADS 2

static const int64_t sizes[N_SIZES][2] = {{4096, 4096}, {16384, 16384}, {65536, 65536}, {1, 65536}};
static const int64_t dims[N_DIMS] = {64, 128, 256};
static const txattn_mask masks[N_MASKS] = {TXATTN_MASK_NONE, TXATTN_MASK_CAUSAL,
                                           TXATTN_MASK_WINDOW};
static const int64_t heads[N_HEADS][2] = {{1, 1}, {32, 8}};
#define WINDOW_LEFT 300

static txattn_problem battery_problem(int s, int d, int mk, int h) {
  txattn_problem p = {.heads_q = heads[h][0],
                      .heads_kv = heads[h][1],
                      .n_q = sizes[s][0],
                      .n_kv = sizes[s][1],
                      .d_qk = dims[d],
                      .mask = masks[mk]};
  if (masks[mk] == TXATTN_MASK_WINDOW) p.window_left = WINDOW_LEFT;
  return p;
}

static void problem_text(const txattn_problem *p, char *buf, size_t size) {
  static const char *names[] = {"none", "causal", "window 300+0"};
  snprintf(buf, size,
           "n_q %" PRId64 " n_kv %" PRId64 " d %" PRId64 " %s heads %" PRId64 "/%" PRId64, p->n_q,
           p->n_kv, p->d_qk, names[p->mask], p->heads_q, p->heads_kv);
}

/* The plan's tunables within what its kernel declares (the host refuses others, so this guards the
   guard). */
static void expect_declared_tunables(const txattn_plan *plan, const char *who, const char *what) {
  for (size_t i = 0; i < txattn_plan_tunable_count(plan); i++) {
    txattn_tunable_info ti = TXATTN_TUNABLE_INFO_INIT;
    cr_assert_eq(txattn_plan_tunable_info(plan, i, &ti), TXATTN_OK, "%s", txattn_last_error());
    cr_expect(ti.value >= ti.min && ti.value <= ti.max && ti.value % ti.multiple_of == 0,
              "%s on %s: %s = %" PRId64 " outside [%" PRId64 ", %" PRId64 "] in steps of %" PRId64,
              who, what, ti.name, ti.value, ti.min, ti.max, ti.multiple_of);
  }
}

ParameterizedTestParameters(topology_matrix, every_kernel_plans_or_declines_the_battery) {
  return cr_make_param_array(struct machine, machines, sizeof machines / sizeof machines[0]);
}

ParameterizedTest(struct machine *m, topology_matrix, every_kernel_plans_or_declines_the_battery) {
  char desc[128], what[128];
  describe(m, desc, sizeof desc);
  use_machine(m, NULL, 0);
  txattn_context *ctx = machine_context();
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  int usable = 0, planned = 0, declined = 0;
  for (size_t k = 0; k < kernels.n; k++) {
    const txattn_kernel_info *ki = &kernels.k[k];
    if (!ki->usable) {
      cr_log_info("%s: %s is not usable: %s", desc, ki->name, ki->why_unusable);
      continue;
    }
    usable++;
    if (m->max_isa[0] && strcmp(m->max_isa, "scalar") == 0)
      cr_expect_str_eq(ki->isa, "scalar", "%s: %s is usable", desc, ki->name);
    if (m->max_isa[0] && strcmp(m->max_isa, "avx2") == 0)
      cr_expect(strncmp(ki->isa, "avx512", 6) != 0, "%s: %s is usable", desc, ki->name);
    for (int s = 0; s < N_SIZES; s++)
      for (int d = 0; d < N_DIMS; d++)
        for (int mk = 0; mk < N_MASKS; mk++)
          for (int h = 0; h < N_HEADS; h++) {
            txattn_problem p = battery_problem(s, d, mk, h);
            txattn_plan *plan = NULL;
            txattn_status st = txattn_plan_create(ctx, &p, ki->name, &plan);
            problem_text(&p, what, sizeof what);
            if (st == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(ki->name)) {
              cr_expect_neq(txattn_last_error()[0], '\0', "%s: %s declines %s without a reason",
                            desc, ki->name, what);
              declined++;
              continue;
            }
            cr_expect_eq(st, TXATTN_OK, "%s: %s on %s: %s: %s", desc, ki->name, what,
                         txattn_status_name(st), txattn_last_error());
            if (st != TXATTN_OK) continue;
            planned++;
            expect_declared_tunables(plan, ki->name, what);
            txattn_plan_free(plan);
          }
  }
  cr_expect_geq(usable, 3, "%s: only %d usable kernels", desc, usable);
  cr_log_info("%s: %d usable kernels: %d plans, %d declined", desc, usable, planned, declined);
  txattn_context_free(ctx);
}

/* ---- (b) the dispatcher's picks, run on small shapes ---- */

#define MAX_TUNABLES 8

struct pick {
  char kernel[64];
  size_t n;
  char name_buf[MAX_TUNABLES][32];
  const char *names[MAX_TUNABLES]; /* into name_buf: set again after a copy */
  int64_t values[MAX_TUNABLES];
};

static void pick_of(const txattn_plan *plan, struct pick *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->kernel, sizeof out->kernel, "%s", txattn_plan_kernel(plan));
  out->n = txattn_plan_tunable_count(plan);
  cr_assert(out->n <= MAX_TUNABLES);
  for (size_t i = 0; i < out->n; i++) {
    const char *name;
    cr_assert_eq(txattn_plan_tunable_get(plan, i, &name, &out->values[i]), TXATTN_OK);
    snprintf(out->name_buf[i], sizeof out->name_buf[i], "%s", name);
    out->names[i] = out->name_buf[i];
  }
}

static int same_pick(const struct pick *a, const struct pick *b) {
  if (strcmp(a->kernel, b->kernel) != 0 || a->n != b->n) return 0;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->name_buf[i], b->name_buf[i]) != 0 || a->values[i] != b->values[i]) return 0;
  return 1;
}

static void pick_text(const struct pick *p, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "%s", p->kernel);
  for (size_t i = 0; i < p->n && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, " %s=%" PRId64, p->name_buf[i], p->values[i]);
}

/* Runs a plan on the small case and checks it against the reference. */
static void run_small(struct attn_case *c, txattn_plan *plan, const char *who, const char *desc) {
  char msg[512];
  double err;
  txattn_tensors t = case_tensors(c);
  case_clear_output(c);
  txattn_status s = txattn_plan_execute(plan, &t);
  cr_assert_eq(s, TXATTN_OK, "%s: %s: execute: %s: %s", desc, who, txattn_status_name(s),
               txattn_last_error());
  cr_expect(case_check_output(c, &err, msg, sizeof msg), "%s: %s: %s", desc, who, msg);
}

/* The small shape a battery shape's pick runs on: the same d, mask and GQA group (heads 4/1 for
   32/8), n from 65 to 300 (smaller for larger d, to keep the fp64 reference quick), a window that
   leaves most keys out, and n_q 1 for a decode. */
static struct shape small_shape(int decode, int d, int mk, int h) {
  static const int64_t n_by_d[N_DIMS] = {300, 161, 65};
  struct shape sh = {.batch = 1,
                     .heads_q = h ? 4 : 1,
                     .heads_kv = 1,
                     .n_q = decode ? 1 : n_by_d[d] - 32 * mk * (d < 2),
                     .n_kv = n_by_d[d] - 32 * mk * (d < 2),
                     .d_qk = dims[d],
                     .d_v = dims[d],
                     .mask = masks[mk]};
  if (masks[mk] == TXATTN_MASK_WINDOW) sh.left = 40;
  return sh;
}

ParameterizedTestParameters(topology_matrix, the_dispatcher_plans_the_battery_and_its_picks_agree) {
  return cr_make_param_array(struct machine, machines, sizeof machines / sizeof machines[0]);
}

ParameterizedTest(struct machine *m, topology_matrix,
                  the_dispatcher_plans_the_battery_and_its_picks_agree) {
  char desc[128], what[128], who[256];
  describe(m, desc, sizeof desc);
  use_machine(m, NULL, 0);
  txattn_context *ctx = machine_context();
  int ran = 0;
  for (int d = 0; d < N_DIMS; d++)
    for (int mk = 0; mk < N_MASKS; mk++)
      for (int h = 0; h < N_HEADS; h++)
        for (int decode = 0; decode < 2; decode++) {
          struct shape sh = small_shape(decode, d, mk, h);
          struct attn_case c;
          case_init(&c, &sh, (uint64_t)(1000 * d + 100 * mk + 10 * h + decode));
          case_run_reference(&c);
          char small[128];
          shape_describe(&sh, small, sizeof small);
          /* the dispatcher's own pick for the small shape */
          txattn_plan *plan = NULL;
          txattn_status st = txattn_plan_create(ctx, &c.problem, NULL, &plan);
          cr_assert_eq(st, TXATTN_OK, "%s: the dispatcher on %s: %s: %s", desc, small,
                       txattn_status_name(st), txattn_last_error());
          snprintf(who, sizeof who, "the dispatcher picking %s", txattn_plan_kernel(plan));
          run_small(&c, plan, who, small);
          txattn_plan_free(plan);
          ran++;
          /* its picks for the large shapes of this kind, each (kernel and tiles) once */
          struct pick done[N_SIZES];
          size_t n_done = 0;
          for (int s = 0; s < N_SIZES; s++) {
            if ((sizes[s][0] == 1) != decode) continue;
            txattn_problem p = battery_problem(s, d, mk, h);
            problem_text(&p, what, sizeof what);
            plan = NULL;
            st = txattn_plan_create(ctx, &p, NULL, &plan);
            cr_expect_eq(st, TXATTN_OK, "%s: the dispatcher cannot plan %s: %s: %s", desc, what,
                         txattn_status_name(st), txattn_last_error());
            if (st != TXATTN_OK) continue;
            struct pick pk;
            pick_of(plan, &pk);
            expect_declared_tunables(plan, pk.kernel, what);
            if (s == 0 && d < 2 && mk < 2 && h == 0) {
              char text[256];
              pick_text(&pk, text, sizeof text);
              cr_log_info("%s: %s: %s", desc, what, text);
            }
            int seen = 0;
            for (size_t i = 0; i < n_done; i++) seen |= same_pick(&done[i], &pk);
            if (!seen) {
              txattn_plan *tuned = NULL;
              pick_text(&pk, who, sizeof who);
              st = txattn_plan_create_tuned(ctx, &c.problem, pk.kernel, pk.names, pk.values, pk.n,
                                            &tuned);
              cr_expect_eq(st, TXATTN_OK, "%s: %s (the pick for %s) cannot plan %s: %s: %s", desc,
                           who, what, small, txattn_status_name(st), txattn_last_error());
              if (st == TXATTN_OK) {
                char label[512];
                snprintf(label, sizeof label, "%s (the pick for %s)", who, what);
                run_small(&c, tuned, label, small);
                ran++;
              }
              txattn_plan_free(tuned);
              done[n_done++] = pk;
            }
            txattn_plan_free(plan);
          }
          case_free(&c);
        }
  cr_log_info("%s: %d runs checked against the reference", desc, ran);
  txattn_context_free(ctx);
}

/* ---- (c) txtune check --quick ---- */

ParameterizedTestParameters(topology_matrix, txtune_check_quick_passes) {
  return cr_make_param_array(struct machine, machines, sizeof machines / sizeof machines[0]);
}

ParameterizedTest(struct machine *m, topology_matrix, txtune_check_quick_passes) {
  char desc[128];
  describe(m, desc, sizeof desc);
  use_machine(m, NULL, 0);
  struct output out = txtune("check --quick --threads 2");
  cr_expect_eq(out.status, 0, "%s: txtune check --quick exited %d:\n%s", desc, out.status,
               out.text);
  cr_expect(strstr(out.text, "\nPASS: ") != NULL, "%s: txtune check --quick:\n%s", desc, out.text);
  free(out.text);
}
