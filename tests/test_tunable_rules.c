/* SPDX-License-Identifier: MIT */
/* The shipped kernels' tile rules hold their own declarations on every machine and problem.
 *
 * For each kernel of each plugin in the build's plugin directory (and the emulated AVX-512 builds
 * where they exist), whether or not this CPU can run it -- default_tunables, fit_tunables and
 * cost_pairs are compiled without ISA flags -- the descriptor functions are called directly over
 * grids of machine descriptions (each of l1d, l2 and l3 from 0 = unknown through 1 byte to 1 GiB)
 * and resolved problems the kernel declares applicable (n_q, n_kv 1 .. 2^20, d 1 .. 1024, GQA,
 * every mask and window):
 *  - default_tunables gives each tunable a value of its declared range and multiple, as the host
 *    requires (core/plan.c refuses the plan with TXATTN_E_PLUGIN otherwise);
 *  - fit_tunables, on the defaults and on values across the declared range, gives values in range
 *    and no larger than it was given, and fitting again changes nothing;
 *  - cost_pairs is finite and >= 0 with the defaults (as the dispatcher's estimate calls it), the
 *    fitted defaults and the range's ends.
 * Then end to end: under cache overrides of 2 MiB .. 1 GiB L2 (and l1d / l3 variants), every usable
 * kernel, named, plans the large shapes of issue 16 or declines them (E_UNSUPPORTED, or E_NOMEM for a
 * workspace beyond this machine's memory), never fails otherwise, and the dispatcher plans them. */
#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

#define KIB            INT64_C(1024)
#define MIB            (KIB * KIB)
#define GIB            (MIB * KIB)
#define MAX_KERNELS    64
#define MAX_TUNABLES   8
#define SHOWN_FAILURES 12

static void clean_env(void) {
  test_env_clean();
  unsetenv("HWLOC_XMLFILE");
}

TestSuite(tunable_rules, .init = clean_env, .fini = test_check_leaks, .timeout = 240);

/* ---- the kernels, read from the plugin files by hand ---- */

struct rule_kernel {
  const txattn_kernel_desc *d;
  char where[512]; /* "tiled.avx2 (txattn_tiled.so in DIR)" */
};

struct rule_kernels {
  size_t n;
  struct rule_kernel k[MAX_KERNELS];
};

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds every kernel of every txattn_*.so in dir. Plugins are never closed: the OpenMP runtime of
   the threaded ones keeps allocations that would look leaked once unloaded. Returns the plugins
   opened; a missing directory gives 0. */
static int open_plugin_dir(struct rule_kernels *ks, const char *dir) {
  DIR *dh = opendir(dir);
  if (dh == NULL) return 0;
  char *names[64];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(dh)) != NULL;) {
    const size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "txattn_", 7) == 0 && len > 3 && strcmp(e->d_name + len - 3, ".so") == 0)
      if (n < sizeof names / sizeof names[0]) names[n++] = strdup(e->d_name);
  }
  closedir(dh);
  qsort(names, n, sizeof names[0], by_name);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(h != NULL, "dlopen(%s): %s", path, dlerror());
    txattn_plugin_entry_fn entry;
    *(void **)&entry = dlsym(h, TXATTN_PLUGIN_ENTRY_SYMBOL);
    cr_assert(entry != NULL, "%s has no entry", path);
    const txattn_plugin_desc *pd = entry(TXATTN_PLUGIN_ABI_VERSION);
    cr_assert(pd != NULL, "%s declined ABI %u", path, (unsigned)TXATTN_PLUGIN_ABI_VERSION);
    for (size_t j = 0; j < pd->n_kernels; j++) {
      cr_assert(ks->n < MAX_KERNELS, "more than %d kernels: raise MAX_KERNELS", MAX_KERNELS);
      struct rule_kernel *k = &ks->k[ks->n++];
      k->d = pd->kernels[j];
      cr_assert(k->d->n_tunables <= MAX_TUNABLES, "%s: %zu tunables", k->d->name, k->d->n_tunables);
      snprintf(k->where, sizeof k->where, "%s (%s in %s)", k->d->name, names[i], dir);
    }
    free(names[i]);
  }
  return (int)n;
}

static const struct rule_kernel *kernel_named(const struct rule_kernels *ks, const char *name) {
  for (size_t i = 0; i < ks->n; i++)
    if (strcmp(ks->k[i].d->name, name) == 0) return &ks->k[i];
  return NULL;
}

/* The shipped plugins, and the emulated AVX-512 builds where the build has them. */
static void open_shipped(struct rule_kernels *ks) {
  ks->n = 0;
  cr_assert_gt(open_plugin_dir(ks, TXATTN_TEST_PLUGIN_BUILD_DIR), 0, "no plugin in %s",
               TXATTN_TEST_PLUGIN_BUILD_DIR);
#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
  open_plugin_dir(ks, TXATTN_TEST_EMU512_PLUGIN_DIR);
#endif
  /* the rules under test must be among them, or the test would pass on nothing */
  static const char *const expected[] = {"tiled.scalar",      "tiled_omp.scalar", "banded.scalar",
                                         "banded_omp.scalar", "masked.scalar",    "naive.scalar"};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    cr_assert(kernel_named(ks, expected[i]) != NULL, "%s is not in %s", expected[i],
              TXATTN_TEST_PLUGIN_BUILD_DIR);
}

/* ---- what the host requires ---- */

static int value_ok(const txattn_tunable *t, int64_t v) {
  return v >= t->min && v <= t->max && v % t->multiple_of == 0;
}

static int has_fit(const txattn_kernel_desc *d) {
  return TXATTN_KERNEL_DESC_HAS(d, fit_tunables) && d->fit_tunables != NULL;
}
static int has_cost(const txattn_kernel_desc *d) {
  return TXATTN_KERNEL_DESC_HAS(d, cost_pairs) && d->cost_pairs != NULL;
}

struct tally {
  long checks, failures;
};

static void failed(struct tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failed(struct tally *t, const char *fmt, ...) {
  if (t->failures++ < SHOWN_FAILURES) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cr_expect(0, "%s", msg);
  }
}

static const char *problem_text(const txattn_problem *p, char *buf, size_t size) {
  char mask[96] = "none";
  if (p->mask == TXATTN_MASK_CAUSAL) snprintf(mask, sizeof mask, "causal");
  if (p->mask == TXATTN_MASK_WINDOW)
    snprintf(mask, sizeof mask, "window %" PRId64 "/%" PRId64, p->window_left, p->window_right);
  snprintf(buf, size,
           "batch %" PRId64 " heads %" PRId64 "/%" PRId64 " n_q %" PRId64 " n_kv %" PRId64
           " d %" PRId64 "/%" PRId64 " %s",
           p->batch, p->heads_q, p->heads_kv, p->n_q, p->n_kv, p->d_qk, p->d_v, mask);
  return buf;
}

static const char *machine_text(const txattn_machine *m, char *buf, size_t size) {
  snprintf(buf, size, "l1d %" PRId64 " B, l2 %" PRId64 " B, l3 %" PRId64 " B, %d cores",
           m->l1d_bytes, m->l2_bytes, m->l3_bytes, m->n_cores);
  return buf;
}

/* The tunable vectors cost_pairs was checked with on the current (kernel, problem): defaults
   repeat across machines, and a count can take a while on long problems. */
static struct {
  size_t n;
  int64_t v[64][MAX_TUNABLES];
} costed;

static void costed_reset(void) {
  costed.n = 0;
}

static int costed_before(const txattn_kernel_desc *d, const int64_t *v) {
  const size_t bytes = d->n_tunables * sizeof *v;
  for (size_t i = 0; i < costed.n; i++)
    if (bytes == 0 || memcmp(costed.v[i], v, bytes) == 0) return 1;
  if (costed.n < 64 && bytes > 0) memcpy(costed.v[costed.n], v, bytes);
  costed.n += costed.n < 64;
  return 0;
}

static void check_cost(struct tally *t, const struct rule_kernel *k, const txattn_problem *p,
                       const int64_t *v, const char *which) {
  if (!has_cost(k->d) || costed_before(k->d, v)) return;
  const double c = k->d->cost_pairs(p, k->d->n_tunables > 0 ? v : NULL);
  t->checks++;
  if (!isfinite(c) || c < 0) {
    char pt[256];
    failed(t, "%s: cost_pairs = %g with %s tunables on %s", k->where, c, which,
           problem_text(p, pt, sizeof pt));
  }
}

/* fit_tunables on in-range values v: in range, no larger, and a fixed point. */
static void check_fit(struct tally *t, const struct rule_kernel *k, const txattn_problem *p,
                      const int64_t *v, const char *which, int64_t *out) {
  const txattn_kernel_desc *d = k->d;
  memcpy(out, v, d->n_tunables * sizeof *v);
  if (!has_fit(d)) return;
  d->fit_tunables(p, out);
  int64_t again[MAX_TUNABLES];
  memcpy(again, out, d->n_tunables * sizeof *v);
  d->fit_tunables(p, again);
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *tu = &d->tunables[i];
    t->checks++;
    if (!value_ok(tu, out[i]) || out[i] > v[i] || again[i] != out[i]) {
      char pt[256];
      failed(t,
             "%s: fit_tunables turned %s %s = %" PRId64 " into %" PRId64 " (again: %" PRId64
             "), not within [%" PRId64 ", %" PRId64 "] in steps of %" PRId64
             " and no larger, on %s",
             k->where, which, tu->name, v[i], out[i], again[i], tu->min, tu->max, tu->multiple_of,
             problem_text(p, pt, sizeof pt));
    }
  }
}

/* The defaults on machine m: valid, fitted validly, and costed. Returns 0 if a default was out of
   range (the rest then says nothing new). */
static int check_defaults(struct tally *t, const struct rule_kernel *k, const txattn_problem *p,
                          const txattn_machine *m) {
  const txattn_kernel_desc *d = k->d;
  int64_t v[MAX_TUNABLES], fitted[MAX_TUNABLES];
  if (d->n_tunables == 0) {
    check_cost(t, k, p, NULL, "no");
    return 1;
  }
  for (size_t i = 0; i < d->n_tunables; i++) v[i] = INT64_MIN; /* must all be set */
  d->default_tunables(p, m, v);
  int ok = 1;
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *tu = &d->tunables[i];
    t->checks++;
    if (!value_ok(tu, v[i])) {
      char pt[256], mt[128];
      failed(t,
             "%s: default_tunables gave %s = %" PRId64 ", outside [%" PRId64 ", %" PRId64
             "] in steps of %" PRId64 ", on %s with %s",
             k->where, tu->name, v[i], tu->min, tu->max, tu->multiple_of,
             problem_text(p, pt, sizeof pt), machine_text(m, mt, sizeof mt));
      ok = 0;
    }
  }
  if (!ok) return 0;
  check_fit(t, k, p, v, "default", fitted);
  check_cost(t, k, p, v, "default");
  check_cost(t, k, p, fitted, "fitted default");
  return 1;
}

/* fit_tunables and cost_pairs across each declared range: every tunable at its r-th sample of
   {min, min + step, the middle, max - step, max} (clamped into the range), and one at min while
   the others are at max. */
static void check_range(struct tally *t, const struct rule_kernel *k, const txattn_problem *p) {
  const txattn_kernel_desc *d = k->d;
  if (d->n_tunables == 0) return;
  int64_t v[MAX_TUNABLES], fitted[MAX_TUNABLES];
  for (int r = 0; r < 5 + (int)d->n_tunables; r++) {
    for (size_t i = 0; i < d->n_tunables; i++) {
      const txattn_tunable *tu = &d->tunables[i];
      const int64_t lo = (tu->min + tu->multiple_of - 1) / tu->multiple_of * tu->multiple_of;
      const int64_t hi = tu->max / tu->multiple_of * tu->multiple_of;
      const int64_t mid = (lo + (hi - lo) / 2) / tu->multiple_of * tu->multiple_of;
      const int64_t s[5] = {lo, lo + tu->multiple_of, mid < lo ? lo : mid, hi - tu->multiple_of,
                            hi};
      int64_t x = r < 5 ? s[r] : (size_t)(r - 5) == i ? lo : hi;
      v[i] = x < lo ? lo : x > hi ? hi : x;
    }
    check_fit(t, k, p, v, "in-range", fitted);
    check_cost(t, k, p, v, "in-range");
    check_cost(t, k, p, fitted, "fitted in-range");
  }
}

static int resolve_applicable(const struct rule_kernel *k, const txattn_problem *p,
                              txattn_problem *r) {
  const txattn_status s = txattn_problem_resolve(p, r);
  cr_assert_eq(s, TXATTN_OK, "txattn_problem_resolve: %s", txattn_last_error());
  const char *why = NULL;
  return k->d->applicable(r, &why);
}

/* ---- the grids ---- */

static const int64_t cache_sizes[] = {0,   1,          KIB,        32 * KIB, 48 * KIB, 512 * KIB,
                                      MIB, 1280 * KIB, 1536 * KIB, 2 * MIB,  16 * MIB, GIB};
#define N_CACHES (sizeof cache_sizes / sizeof cache_sizes[0])
static const int core_counts[] = {0, 1, 2, 3, 64, 1 << 20};

static txattn_machine grid_machine(size_t i) {
  return (txattn_machine){
      .struct_size = sizeof(txattn_machine),
      .l1d_bytes = cache_sizes[i % N_CACHES],
      .l2_bytes = cache_sizes[i / N_CACHES % N_CACHES],
      .l3_bytes = cache_sizes[i / (N_CACHES * N_CACHES) % N_CACHES],
      .n_cores = core_counts[i / 7 % (sizeof core_counts / sizeof core_counts[0])],
  };
}

static txattn_problem shape(int64_t batch, int64_t hq, int64_t hkv, int64_t n_q, int64_t n_kv,
                            int64_t d_qk, int64_t d_v, txattn_mask mask, int64_t left,
                            int64_t right) {
  return (txattn_problem){.batch = batch,
                          .heads_q = hq,
                          .heads_kv = hkv,
                          .n_q = n_q,
                          .n_kv = n_kv,
                          .d_qk = d_qk,
                          .d_v = d_v,
                          .mask = mask,
                          .window_left = left,
                          .window_right = right};
}

#define U TXATTN_UNBOUNDED
#define N TXATTN_MASK_NONE
#define C TXATTN_MASK_CAUSAL
#define W TXATTN_MASK_WINDOW

/* A modest set of problems for the whole machine grid: the shapes of issue 16, decode, GQA, tiny
   and huge sizes, every mask. No tensor is ever allocated: only the descriptors are called. */
static const txattn_problem modest[] = {
    {.heads_q = 1, .n_q = 4096, .d_qk = 64},
    {.heads_q = 1, .n_q = 4096, .d_qk = 128, .mask = C},
    {.heads_q = 1, .n_q = 4096, .d_qk = 80, .mask = W, .window_left = 150, .window_right = 150},
    {.heads_q = 8, .heads_kv = 1, .n_q = 65536, .d_qk = 256},
    {.heads_q = 32, .heads_kv = 8, .n_q = 65536, .d_qk = 128, .mask = C},
    {.heads_q = 3, .heads_kv = 1, .n_q = 1 << 20, .d_qk = 64, .mask = W, .window_left = 4095},
    {.heads_q = 32, .heads_kv = 8, .n_q = 1, .n_kv = 32768, .d_qk = 128},
    {.heads_q = 8, .heads_kv = 1, .n_q = 1, .n_kv = 1 << 20, .d_qk = 1024, .d_v = 1},
    {.batch = 3, .heads_q = 2, .n_q = 1, .n_kv = 1, .d_qk = 1},
    {.heads_q = 1, .n_q = 5, .n_kv = 3, .d_qk = 3, .d_v = 7, .mask = C},
    {.heads_q = 2,
     .n_q = 100,
     .n_kv = 1000,
     .d_qk = 1024,
     .mask = W,
     .window_left = 1,
     .window_right = 1},
    {.heads_q = 1,
     .n_q = 1000,
     .n_kv = 100,
     .d_qk = 1,
     .d_v = 1024,
     .mask = W,
     .window_left = U,
     .window_right = 0},
    {.heads_q = 6,
     .heads_kv = 2,
     .n_q = 4097,
     .d_qk = 1024,
     .d_v = 1024,
     .mask = W,
     .window_left = 0,
     .window_right = U},
    {.heads_q = 1,
     .n_q = 17,
     .n_kv = 65536,
     .d_qk = 256,
     .d_v = 64,
     .mask = W,
     .window_left = INT64_C(1) << 40,
     .window_right = 63},
    {.heads_q = 64, .heads_kv = 1, .n_q = 2048, .d_qk = 64, .mask = C},
    /* the largest sizes the library accepts (core/problem.c, check_sizes): products that overflow
       int64 if multiplied carelessly, and the widest head */
    {.heads_q = 1, .n_q = 1, .n_kv = INT64_C(2147483647), .d_qk = 1},
    {.heads_q = 65536, .heads_kv = 1, .n_q = 2047, .n_kv = INT64_C(2147483647), .d_qk = 1},
    {.heads_q = 1, .n_q = 1, .n_kv = 2, .d_qk = INT64_C(1) << 20, .d_v = 1},
};

/* Every machine of the grid (12 sizes per level, all combinations) against the modest problems:
   the defaults are valid and fit validly, and cost_pairs holds for every distinct default. */
Test(tunable_rules, every_default_is_valid_on_every_machine) {
  struct rule_kernels ks;
  open_shipped(&ks);
  struct tally t = {0, 0};
  const size_t machines = N_CACHES * N_CACHES * N_CACHES;
  for (size_t pi = 0; pi < sizeof modest / sizeof modest[0]; pi++) {
    for (size_t ki = 0; ki < ks.n; ki++) {
      const struct rule_kernel *k = &ks.k[ki];
      txattn_problem r = TXATTN_PROBLEM_INIT;
      if (!resolve_applicable(k, &modest[pi], &r)) continue;
      costed_reset();
      for (size_t mi = 0; mi < machines; mi++) {
        const txattn_machine m = grid_machine(mi);
        if (!check_defaults(&t, k, &r, &m) && t.failures > 4 * SHOWN_FAILURES) break;
      }
      check_range(&t, k, &r);
    }
  }
  cr_assert_eq(t.failures, 0, "%ld of %ld checks failed (the first %d above)", t.failures, t.checks,
               SHOWN_FAILURES);
  cr_assert_gt(t.checks, 100000, "only %ld checks", t.checks);
}

/* A handful of machines against a large grid of problems: every pair of sizes, every mask and
   window kind, with head layouts and head sizes taken in turn. */
Test(tunable_rules, every_default_is_valid_on_every_problem) {
  struct rule_kernels ks;
  open_shipped(&ks);
  const txattn_machine machines[] = {
      {sizeof(txattn_machine), 0, 0, 0, 0},
      {sizeof(txattn_machine), 1, 1, 1, 1},
      {sizeof(txattn_machine), 32 * KIB, 512 * KIB, 8 * MIB, 2},     /* Zen 2 */
      {sizeof(txattn_machine), 48 * KIB, 2 * MIB, 240 * MIB, 2},     /* the Sapphire Rapids VM */
      {sizeof(txattn_machine), 48 * KIB, 1536 * KIB, 1 * KIB, 1000}, /* L3 below the L2 */
      {sizeof(txattn_machine), GIB, GIB, GIB, 1 << 20},
  };
  static const int64_t sizes[] = {1, 2, 3, 5, 17, 100, 1000, 4096, 4097, 65536, 1 << 20};
  static const int64_t dims[][2] = {{1, 1},     {3, 5},     {64, 64},  {80, 80},     {128, 128},
                                    {256, 256}, {1000, 24}, {1, 1024}, {1024, 1024}, {1024, 1}};
  static const int64_t heads[][3] = {{1, 1, 1},  {2, 8, 1}, {1, 32, 8}, {1, 3, 1},
                                     {3, 64, 1}, {1, 6, 2}, {2, 2, 2}};
  const int64_t big = INT64_C(1) << 40;
  static const int64_t sides[] = {0, 1, 5, 63, 64, 65, 300, 512, 4095, 4096};
  struct mask_kind {
    txattn_mask mask;
    int64_t left, right;
  } masks[3 + 5 * 10];
  size_t n_masks = 0;
  masks[n_masks++] = (struct mask_kind){N, 0, 0};
  masks[n_masks++] = (struct mask_kind){C, 0, 0};
  masks[n_masks++] = (struct mask_kind){W, U, U};
  for (size_t s = 0; s < sizeof sides / sizeof sides[0]; s++) { /* each side with all kinds */
    const int64_t other[5] = {sides[s], 0, U, big, sides[(s + 3) % 10]};
    for (int o = 0; o < 5; o++) masks[n_masks++] = (struct mask_kind){W, sides[s], other[o]};
  }
  struct tally t = {0, 0};
  size_t turn = 0, problems = 0;
  const size_t n_sizes = sizeof sizes / sizeof sizes[0], n_dims = sizeof dims / sizeof dims[0];
  const size_t n_heads = sizeof heads / sizeof heads[0];
  for (size_t a = 0; a < n_sizes; a++) {
    for (size_t b = 0; b < n_sizes; b++) {
      for (size_t mk = 0; mk < n_masks; mk++) {
        /* windows mirrored too: (left, right) and (right, left) */
        for (int mirror = 0; mirror < 2; mirror++, turn++) {
          if (mirror && masks[mk].mask != W) continue;
          const size_t di = turn % n_dims, hi = (turn / n_dims + turn) % n_heads;
          const int64_t l = mirror ? masks[mk].right : masks[mk].left;
          const int64_t r = mirror ? masks[mk].left : masks[mk].right;
          const txattn_problem p = shape(heads[hi][0], heads[hi][1], heads[hi][2], sizes[a],
                                         sizes[b], dims[di][0], dims[di][1], masks[mk].mask, l, r);
          problems++;
          for (size_t ki = 0; ki < ks.n; ki++) {
            const struct rule_kernel *k = &ks.k[ki];
            txattn_problem rp = TXATTN_PROBLEM_INIT;
            if (!resolve_applicable(k, &p, &rp)) continue;
            costed_reset();
            for (size_t mi = 0; mi < sizeof machines / sizeof machines[0]; mi++)
              check_defaults(&t, k, &rp, &machines[mi]);
            if (turn % 4 == 0) check_range(&t, k, &rp);
          }
        }
      }
    }
  }
  cr_assert_eq(t.failures, 0, "%ld of %ld checks failed over %zu problems (the first %d above)",
               t.failures, t.checks, problems, SHOWN_FAILURES);
  cr_assert_gt(problems, 10000, "only %zu problems", problems);
}

/* ---- end to end: plans under cache overrides ---- */

/* Under each override, every usable kernel named plans n = 4096 and 65536, d = 64 .. 256, no mask,
   causal and a window of 300 keys, or declines them; the dispatcher plans them all. */
Test(tunable_rules, every_kernel_plans_the_large_shapes_under_big_caches) {
  static const char *const caches[] = {"l2=2M",
                                       "l2=4M",
                                       "l2=16M",
                                       "l2=1G",
                                       "l1d=48K,l2=2M,l3=240M",
                                       "l1d=1K,l2=4M,l3=1K",
                                       "l1d=1G,l2=16M,l3=1G",
                                       "l1d=256K,l2=1536K,l3=8M"};
  static const int64_t ns[] = {4096, 65536};
  static const int64_t ds[] = {64, 128, 256};
  long named = 0, planned = 0;
  for (size_t c = 0; c < sizeof caches / sizeof caches[0]; c++) {
    cr_assert_eq(setenv("TXATTN_CACHES", caches[c], 1), 0);
    txattn_context *ctx = test_context(2);
    struct kernel_list kl;
    test_kernel_list(ctx, &kl);
    for (size_t ni = 0; ni < 2; ni++) {
      for (size_t di = 0; di < 3; di++) {
        for (int mk = 0; mk < 3; mk++) {
          txattn_problem p = shape(1, 1, 1, ns[ni], ns[ni], ds[di], ds[di],
                                   mk == 0   ? N
                                   : mk == 1 ? C
                                             : W,
                                   150, 150);
          char pt[256];
          problem_text(&p, pt, sizeof pt);
          for (size_t i = 0; i < kl.n; i++) {
            if (!kl.k[i].usable || !test_kernel_takes_types(&kl.k[i], &p)) continue;
            txattn_plan *plan = NULL;
            const txattn_status s = txattn_plan_create(ctx, &p, kl.k[i].name, &plan);
            const char *err = s == TXATTN_OK ? "" : txattn_last_error();
            named++;
            planned += s == TXATTN_OK;
            /* E_NOMEM only for a workspace larger than this machine's memory (masked.scalar's
               dense rows at n = 65536 need about 1 GiB on 2 threads) */
            /* the tiled kernels take every one of these problems: they must plan it */
            const int tiled = strncmp(kl.k[i].name, "tiled", 5) == 0;
            cr_expect(s == TXATTN_OK || (!tiled && s == TXATTN_E_UNSUPPORTED) ||
                          (s == TXATTN_E_NOMEM && strstr(err, "memory") != NULL),
                      "TXATTN_CACHES=%s: %s on %s: %s: %s", caches[c], kl.k[i].name, pt,
                      txattn_status_name(s), err);
            txattn_plan_free(plan);
          }
          txattn_plan *plan = NULL;
          const txattn_status s = txattn_plan_create(ctx, &p, NULL, &plan);
          cr_expect_eq(s, TXATTN_OK, "TXATTN_CACHES=%s: the dispatcher on %s: %s: %s", caches[c],
                       pt, txattn_status_name(s), txattn_last_error());
          txattn_plan_free(plan);
        }
      }
    }
    txattn_context_free(ctx);
  }
  cr_assert_gt(planned, named / 2, "only %ld of %ld named plans were made", planned, named);
}
