/* SPDX-License-Identifier: MIT */
#include "test_context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

void test_env_clean(void) {
  static const char *vars[] = {"TXATTN_PLUGIN_PATH", "TXATTN_FORCE_KERNEL", "TXATTN_MAX_ISA",
                               "TXATTN_TABLE",       "TXATTN_VERBOSE",      "TXATTN_CACHES"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  /* The one variable the suite passes on: an ISA cap for a whole run, so that CI can run the
     kernel battery as a CPU without AVX-512 (or AVX2) would. */
  const char *cap = getenv("TXATTN_TEST_MAX_ISA");
  if (cap && cap[0]) setenv("TXATTN_MAX_ISA", cap, 1);
  /* The default dispatch table lives under $XDG_CACHE_HOME (else ~/.cache): point both at a place
     with no table, so a developer's own profile cannot steer the tests. */
  setenv("XDG_CACHE_HOME", "/nonexistent/txattn-tests", 1);
  setenv("HOME", "/nonexistent/txattn-tests", 1);
}

void test_check_leaks(void) {
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check()) {
    fprintf(stderr, "memory leaked: see the LeakSanitizer report above\n");
    abort();
  }
#endif
}

/* TXATTN_MAX_ISA's order; neon ranks with avx2 (above scalar, as the cap treats it). */
static int isa_rank(const char *isa) {
  return strcmp(isa, "scalar") == 0       ? 0
         : strcmp(isa, "avx512") == 0     ? 2
         : strcmp(isa, "avx512bf16") == 0 ? 3
                                          : 1;
}

/* Under TXATTN_TEST_MAX_ISA (while a test has not set a cap of its own), no kernel above the cap
   may be usable: else a capped CI run would test nothing new. */
static void expect_test_cap(const txattn_context *ctx) {
  const char *cap = getenv("TXATTN_TEST_MAX_ISA"), *set = getenv("TXATTN_MAX_ISA");
  if (!cap || !cap[0] || !set || strcmp(cap, set) != 0) return;
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) != TXATTN_OK || !k.usable) continue;
    cr_assert(isa_rank(k.isa) <= isa_rank(cap), "TXATTN_TEST_MAX_ISA=%s leaves %s usable", cap,
              k.name);
  }
}

txattn_context *test_context_at(const char *plugin_path, int n_threads) {
  txattn_options opts = {.plugin_path = plugin_path, .table_path = "", .n_threads = n_threads};
  txattn_context *ctx = NULL;
  txattn_status s = txattn_context_create(&opts, &ctx);
  cr_assert_eq(s, TXATTN_OK, "txattn_context_create(plugin_path=%s): %s: %s",
               plugin_path ? plugin_path : "NULL", txattn_status_name(s), txattn_last_error());
  cr_assert(ctx != NULL, "txattn_context_create returned OK and no context");
  expect_test_cap(ctx);
  return ctx;
}

txattn_context *test_context(int n_threads) {
  return test_context_at(NULL, n_threads);
}

void test_kernel_list(const txattn_context *ctx, struct kernel_list *out) {
  out->n = txattn_kernel_count(ctx);
  cr_assert(out->n <= TEST_MAX_KERNELS, "%zu kernels: raise TEST_MAX_KERNELS", out->n);
  for (size_t i = 0; i < out->n; i++) {
    out->k[i] = (txattn_kernel_info)TXATTN_KERNEL_INFO_INIT;
    txattn_status s = txattn_kernel_get(ctx, i, &out->k[i]);
    cr_assert_eq(s, TXATTN_OK, "txattn_kernel_get(%zu): %s", i, txattn_last_error());
    cr_assert(out->k[i].name != NULL && out->k[i].name[0] != '\0', "kernel %zu has no name", i);
  }
}

const txattn_kernel_info *test_kernel_find(const struct kernel_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->k[i].name, name) == 0) return &l->k[i];
  return NULL;
}

int test_kernel_takes_types(const txattn_kernel_info *k, const txattn_problem *p) {
  const txattn_dtype types[4] = {p->q_type, p->k_type, p->v_type, p->o_type};
  for (int i = 0; i < 4; i++)
    if (!(k->dtypes[i] & TXATTN_DTYPE_BIT(types[i]))) return 0;
  return 1;
}

int test_kernel_takes_every_problem(const char *name) {
  return strcmp(name, "naive.scalar") == 0 || strcmp(name, "masked.scalar") == 0 ||
         strcmp(name, "banded.scalar") == 0;
}

/* The long tree: /tmp/txattn-long-XXXXXX/<LONG_NAME>/to -> dir. */
#define LONG_NAME                                                                                  \
  "a-directory-name-as-long-as-a-deep-checkout-gives-it-so-that-no-text-the-library-fills-can-"    \
  "hold-the-path-whole-and-every-field-must-say-so-or-point-elsewhere-instead-of-cutting-it"

void test_long_path_to(const char *dir, char *out, size_t size) {
  char root[] = "/tmp/txattn-long-XXXXXX";
  cr_assert(mkdtemp(root) != NULL, "mkdtemp failed");
  int n = snprintf(out, size, "%s/%s", root, LONG_NAME);
  cr_assert(n > 0 && (size_t)n + 4 < size, "no room for the long path");
  cr_assert_eq(mkdir(out, 0700), 0, "mkdir %s failed", out);
  strcat(out, "/to");
  cr_assert_eq(symlink(dir, out), 0, "symlink %s -> %s failed", out, dir);
  cr_assert_gt(strlen(out), 200);
}

void test_long_path_remove(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (int up = 0; up < 3; up++) { /* the symlink, LONG_NAME, the mkdtemp directory */
    if (up == 0 ? unlink(p) != 0 : rmdir(p) != 0) return;
    char *slash = strrchr(p, '/');
    if (slash == NULL) return;
    *slash = '\0';
  }
}

void test_expect_topology_file(const txattn_machine_info *m, const char *path) {
  cr_expect(m->topology_file != NULL && strcmp(m->topology_file, path) == 0,
            "topology_file: %s, want %s", m->topology_file ? m->topology_file : "(NULL)", path);
  const char *file = strstr(m->topology_source, "XML file ");
  cr_assert(file != NULL, "topology_source names no XML file: %s", m->topology_source);
  file += strlen("XML file ");
  const char *stand_in = "path: txattn_machine_info.topology_file)";
  size_t n = strlen(path);
  int whole = strncmp(file, path, n) == 0 && strncmp(file + n, " (HWLOC_XMLFILE)", 16) == 0;
  int pointed = strstr(file, stand_in) != NULL && strstr(file, " (HWLOC_XMLFILE)") != NULL;
  cr_expect(whole || pointed, "topology_source neither holds %s whole nor points elsewhere: %s",
            path, m->topology_source);
}
