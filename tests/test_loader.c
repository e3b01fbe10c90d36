/* SPDX-License-Identifier: MIT */
/* The plugin loader: where it looks (default, TXATTN_PLUGIN_PATH, the option), what it refuses and
 * why (every defect of tests/plugins/broken_plugin.c, a non-ELF file, writable files and
 * directories, foreign owners, duplicate names), and that good plugins beside broken ones still
 * load and compute. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "attn_case.h"
#include "case_run.h"
#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "text_match.h"
#include "txattn/plugin.h"
#include "txattn/table.h"
#include "txattn/txattn.h"

static char scratch[SCRATCH_PATH_MAX];

static void cleanup(void) {
  scratch_remove(scratch);
}

TestSuite(loader, .init = test_env_clean, .fini = cleanup, .timeout = 60);

#define BROKEN(defect) "txattn_test_broken_" defect ".so"

/* A context over every test plugin, good and broken, and the build tree's plugins. */
static txattn_context *context_beside_broken_plugins(struct kernel_list *l) {
  char path[2 * SCRATCH_PATH_MAX];
  txattn_context *ctx =
      test_context_at(scratch_everything(scratch, sizeof scratch, path, sizeof path), 1);
  if (l) test_kernel_list(ctx, l);
  return ctx;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *describe_rejected(const txattn_context *ctx, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < txattn_rejected_count(ctx) && used < size; i++) {
    txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
    if (txattn_rejected_get(ctx, i, &r) == TXATTN_OK)
      used += (size_t)snprintf(buf + used, size - used, "\n  %s: %s", r.path, r.reason);
  }
  return used ? buf : " (none)";
}

/* The rejected entry whose path ends with /file (or is within dir when file is NULL). */
static int find_rejected(const txattn_context *ctx, const char *dir, const char *file,
                         txattn_rejected_info *out) {
  char suffix[SCRATCH_PATH_MAX];
  snprintf(suffix, sizeof suffix, "/%s", file ? file : "");
  for (size_t i = 0; i < txattn_rejected_count(ctx); i++) {
    cr_assert_eq(txattn_rejected_get(ctx, i, out), TXATTN_OK, "%s", txattn_last_error());
    cr_assert(out->path != NULL && out->reason != NULL, "rejected entry %zu lacks path or reason",
              i);
    if (file ? ends_with(out->path, suffix) : strncmp(out->path, dir, strlen(dir)) == 0) return 1;
  }
  return 0;
}

static void expect_rejected(const txattn_context *ctx, const char *dir, const char *file,
                            const char *what, const char *const *words) {
  char all[4096], list[128];
  txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
  cr_assert(find_rejected(ctx, dir, file, &r), "%s (%s) is not among the rejected files:%s",
            file ? file : dir, what, describe_rejected(ctx, all, sizeof all));
  cr_expect(text_mentions_any(r.reason, words),
            "%s (%s) rejected with \"%s\", which names none of %s", r.path, what, r.reason,
            text_word_list(words, list, sizeof list));
}

static int kernel_usable(const txattn_context *ctx, const char *name) {
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_kernel_info *k = test_kernel_find(&l, name);
  return k != NULL && k->usable;
}

/* ---- each defect ---- */

struct defect {
  const char *file, *kernel, *what;
  const char *words[5];
};

static const struct defect defects[] = {
    {BROKEN("no_entry"),
     "broken_no_entry.scalar",
     "no txattn_plugin_entry symbol",
     {"entry", "symbol", NULL}},
    {BROKEN("null_entry"),
     "broken_null_entry.scalar",
     "the entry returns NULL",
     {"null", "abi", NULL}},
    {BROKEN("wrong_abi"), "broken_wrong_abi.scalar", "a descriptor of ABI 2", {"abi", NULL}},
    {BROKEN("desc_truncated"),
     "broken_desc_truncated.scalar",
     "a descriptor shorter than ABI 1's",
     {"struct_size", "truncat", "size", "short", NULL}},
    {BROKEN("null_kernels"),
     "broken_null_kernels.scalar",
     "kernels = NULL with n_kernels = 1",
     {"kernels", NULL}},
    {BROKEN("null_run"), "broken_null_run.scalar", "a kernel whose run is NULL", {"run", NULL}},
    {BROKEN("kernel_name"), "Bad Name!", "a kernel named \"Bad Name!\"", {"name", NULL}},
    {BROKEN("kernel_truncated"),
     "broken_kernel_truncated.scalar",
     "a kernel descriptor ending before run",
     {"struct_size", "truncat", "size", "short", NULL}},
    {BROKEN("twin_not_threaded"),
     "broken_twin_not_threaded.scalar",
     "a kernel that never threads naming a one-thread twin",
     {"one_thread_same_as", "threaded", NULL}},
    {BROKEN("twin_self"),
     "broken_twin_self.scalar",
     "a kernel naming itself as its one-thread twin",
     {"one_thread_same_as", "itself", NULL}},
    {BROKEN("twin_name"),
     "broken_twin_name.scalar",
     "a one-thread twin named \"Naive\"",
     {"one_thread_same_as", "name", NULL}},
    {BROKEN("kv8_q"),
     "broken_kv8_q.scalar",
     "a kernel declaring q8_0 q (the 8-bit types are k's and v's only)",
     {"dtypes[0]", NULL}},
    {"bad.so", NULL, "a text file named .so", {"elf", "dlopen", "load", "shared object", NULL}},
};
#define N_DEFECTS (sizeof defects / sizeof defects[0])

ParameterizedTestParameters(loader, each_defect_is_skipped_with_its_reason) {
  static int indices[N_DEFECTS];
  for (size_t i = 0; i < N_DEFECTS; i++) indices[i] = (int)i;
  return cr_make_param_array(int, indices, N_DEFECTS);
}

ParameterizedTest(int *index, loader, each_defect_is_skipped_with_its_reason) {
  const struct defect *d = &defects[*index];
  txattn_context *ctx = context_beside_broken_plugins(NULL);
  expect_rejected(ctx, scratch, d->file, d->what, d->words);
  if (d->kernel) {
    cr_expect(!kernel_usable(ctx, d->kernel), "%s from %s is usable", d->kernel, d->file);
    txattn_problem p = {.n_q = 4, .d_qk = 8};
    txattn_plan *plan = NULL;
    cr_expect_neq(txattn_plan_create(ctx, &p, d->kernel, &plan), TXATTN_OK,
                  "%s from %s can be planned", d->kernel, d->file);
    txattn_plan_free(plan);
  }
  txattn_context_free(ctx);
}

/* ---- what still works beside them ---- */

Test(loader, good_plugins_beside_broken_ones_load_and_compute) {
  struct kernel_list l;
  txattn_context *ctx = context_beside_broken_plugins(&l);
  static const char *wanted[] = {TEST_GOOD_KERNEL, "naive.scalar", "masked.scalar",
                                 "banded.scalar"};
  for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
    const txattn_kernel_info *k = test_kernel_find(&l, wanted[i]);
    cr_assert(k != NULL, "%s did not load beside the broken plugins", wanted[i]);
    cr_expect(k->usable, "%s is not usable: %s", k->name, k->why_unusable);
  }
  struct shape s = {.batch = 2,
                    .heads_q = 4,
                    .heads_kv = 2,
                    .n_q = 9,
                    .n_kv = 13,
                    .d_qk = 8,
                    .d_v = 5,
                    .mask = TXATTN_MASK_WINDOW,
                    .left = 2,
                    .right = 1,
                    .layout = LAYOUT_INTERLEAVED};
  struct attn_case c;
  case_init(&c, &s, 5);
  case_run_reference(&c);
  case_run_every_kernel(ctx, &c, "beside broken plugins");
  case_free(&c);
  txattn_context_free(ctx);
}

Test(loader, a_kernel_for_an_isa_this_cpu_lacks_is_listed_unusable) {
  struct kernel_list l;
  txattn_context *ctx = context_beside_broken_plugins(&l);
  const txattn_kernel_info *k = test_kernel_find(&l, TEST_FOREIGN_KERNEL);
  const char *isa = strchr(TEST_FOREIGN_KERNEL, '.') + 1;
  cr_assert(k != NULL, "%s is not listed", TEST_FOREIGN_KERNEL);
  cr_expect_eq(k->usable, 0, "%s is usable on this CPU", k->name);
  cr_expect(k->isa != NULL && strcmp(k->isa, isa) == 0, "isa \"%s\", want \"%s\"",
            k->isa ? k->isa : "(null)", isa);
  cr_expect(text_mentions(k->why_unusable, isa, "cpu", "isa", NULL),
            "why_unusable \"%s\" does not say what the CPU lacks", k->why_unusable);
  txattn_problem p = {.n_q = 4, .d_qk = 8};
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, &p, TEST_FOREIGN_KERNEL, &plan);
  cr_expect_eq(s, TXATTN_E_UNSUPPORTED, "forcing %s: %s", k->name, txattn_status_name(s));
  cr_expect(text_mentions(txattn_last_error(), TEST_FOREIGN_KERNEL, isa, NULL),
            "the refusal \"%s\" names neither the kernel nor its ISA", txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}

Test(loader, a_duplicate_kernel_name_is_refused) {
  char all[4096];
  struct kernel_list l;
  txattn_context *ctx = context_beside_broken_plugins(&l);
  const txattn_kernel_info *kept = NULL;
  for (size_t i = 0; i < l.n; i++)
    if (strcmp(l.k[i].name, TEST_DUPLICATE_KERNEL) == 0) {
      cr_assert(kept == NULL, "%s is listed twice: %s and %s", l.k[i].name, kept ? kept->path : "",
                l.k[i].path);
      kept = &l.k[i];
    }
  cr_assert(kept != NULL, "neither %s loaded", TEST_DUPLICATE_KERNEL);
  /* whichever file came first keeps the name; the other is the duplicate */
  const char *loser =
      ends_with(kept->path, "/" TEST_DUPLICATE_FILE) ? "txattn_naive.so" : TEST_DUPLICATE_FILE;
  txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
  cr_assert(find_rejected(ctx, scratch, loser, &r), "%s is not rejected:%s", loser,
            describe_rejected(ctx, all, sizeof all));
  cr_expect(text_mentions(r.reason, "duplicate", "already", NULL) &&
                text_mentions(r.reason, TEST_DUPLICATE_KERNEL, NULL),
            "%s rejected with \"%s\": want the duplicate name and that it is one", r.path,
            r.reason);
  txattn_context_free(ctx);
}

/* ---- permissions and owners ---- */

struct permission_case {
  mode_t dir_mode, file_mode;
  int loads;
};

ParameterizedTestParameters(loader, writable_files_and_directories_are_refused) {
  static struct permission_case cases[] = {
      {0755, 0666, 0}, {0755, 0664, 0}, {0755, 0646, 0}, {0775, 0644, 0},
      {0777, 0644, 0}, {0757, 0644, 0}, {0755, 0644, 1}, {0555, 0444, 1},
  };
  return cr_make_param_array(struct permission_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct permission_case *pc, loader, writable_files_and_directories_are_refused) {
  char dir[SCRATCH_PATH_MAX];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_subdir(dir, sizeof dir, scratch, "plugins", 0755);
  scratch_copy_plugin(dir, TEST_SPARE_FILE, NULL, pc->file_mode);
  cr_assert_eq(chmod(dir, pc->dir_mode), 0);
  txattn_context *ctx = test_context_at(dir, 1);
  chmod(dir, 0755); /* so that cleanup can remove it */
  int loaded = kernel_usable(ctx, TEST_SPARE_KERNEL);
  cr_expect_eq(loaded, pc->loads, "directory %04o, file %04o: the plugin %s",
               (unsigned)pc->dir_mode, (unsigned)pc->file_mode, loaded ? "loaded" : "did not load");
  if (!pc->loads) {
    static const char *const words[] = {"writable", NULL};
    expect_rejected(ctx, dir, NULL, "writable by group or others", words);
  }
  txattn_context_free(ctx);
}

Test(loader, a_plugin_owned_by_another_user_is_refused) {
  if (geteuid() != 0) cr_skip_test("only root can give a file to another user");
  char dir[SCRATCH_PATH_MAX], file[2 * SCRATCH_PATH_MAX];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_subdir(dir, sizeof dir, scratch, "plugins", 0755);
  scratch_copy_plugin(dir, TEST_SPARE_FILE, NULL, 0644);
  snprintf(file, sizeof file, "%s/%s", dir, TEST_SPARE_FILE);
  cr_assert_eq(chown(file, 65534, 65534), 0, "chown to nobody failed");
  txattn_context *ctx = test_context_at(dir, 1);
  cr_expect(!kernel_usable(ctx, TEST_SPARE_KERNEL), "a plugin owned by uid 65534 loaded");
  static const char *const words[] = {"owner", "owned", "uid", "user", NULL};
  expect_rejected(ctx, dir, TEST_SPARE_FILE, "owned by another user", words);
  txattn_context_free(ctx);
}

/* ---- where the loader looks ---- */

static void expect_exactly(const txattn_context *ctx, const char *const *names, size_t n,
                           const char *how) {
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < n; i++)
    cr_expect(test_kernel_find(&l, names[i]) != NULL, "%s: %s is missing", how, names[i]);
  for (size_t i = 0; i < l.n; i++) {
    int wanted = 0;
    for (size_t j = 0; j < n; j++) wanted |= strcmp(l.k[i].name, names[j]) == 0;
    cr_expect(wanted, "%s: %s (from %s) should not be loaded", how, l.k[i].name, l.k[i].path);
  }
}

static void arrange_two_dirs(char *a, char *b) {
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_subdir(a, SCRATCH_PATH_MAX, scratch, "a", 0755);
  scratch_subdir(b, SCRATCH_PATH_MAX, scratch, "b", 0755);
  scratch_copy_plugin(a, TEST_GOOD_FILE, NULL, 0644);
  scratch_copy_plugin(b, TEST_SPARE_FILE, NULL, 0644);
}

/* What txattn.h and plugin.h promise of every listed kernel. */
static void check_kernel_info(const struct kernel_list *l, const txattn_kernel_info *k,
                              const char *dir) {
  static const char *isas[] = {"scalar", "avx2", "avx512", "neon", "avx512bf16"};
  char kernel_path[PATH_MAX];
  cr_assert(k->summary && k->plugin && k->path && k->isa && k->plugin_version,
            "%s: a NULL field in txattn_kernel_info", k->name);
  cr_expect(realpath(k->path, kernel_path) != NULL && strncmp(kernel_path, dir, strlen(dir)) == 0,
            "%s was loaded from %s, not from the build tree's %s", k->name, k->path, dir);
  int known = 0, same_name = 0;
  for (size_t j = 0; j < sizeof isas / sizeof *isas; j++) known |= strcmp(k->isa, isas[j]) == 0;
  cr_expect(known, "%s: unknown isa \"%s\"", k->name, k->isa);
  const char *suffix = strrchr(k->name, '.');
  cr_expect(suffix && strcmp(suffix + 1, k->isa) == 0, "%s: not \"<algorithm>.%s\"", k->name,
            k->isa);
  cr_expect(strlen(k->name) <= 63 &&
                strspn(k->name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(k->name),
            "%s: a name is [a-z0-9_.-], at most 63 characters", k->name);
  for (size_t j = 0; j < l->n; j++) same_name += strcmp(l->k[j].name, k->name) == 0;
  cr_expect_eq(same_name, 1, "%s is listed %d times", k->name, same_name);
  cr_expect((k->flags & ~TXATTN_KERNEL_FLAGS_ALL_) == 0, "%s: unknown flags %#x", k->name,
            k->flags);
  cr_expect(k->usable || (k->why_unusable && k->why_unusable[0]), "%s: unusable without a why",
            k->name);
}

Test(loader, the_default_path_finds_the_build_tree_plugins) {
  txattn_context *ctx = NULL;
  char all[4096], dir[PATH_MAX];
  cr_assert_eq(txattn_context_create(NULL, &ctx), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(realpath(TXATTN_TEST_PLUGIN_BUILD_DIR, dir) != NULL, "no %s",
            TXATTN_TEST_PLUGIN_BUILD_DIR);
  cr_expect_eq(txattn_rejected_count(ctx), 0, "the build tree's plugins were rejected:%s",
               describe_rejected(ctx, all, sizeof all));
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  static const char *wanted[] = {"naive.scalar", "masked.scalar", "banded.scalar"};
  for (size_t i = 0; i < 3; i++)
    cr_expect(test_kernel_find(&l, wanted[i]) != NULL, "%s not found with no path set", wanted[i]);
  for (size_t i = 0; i < l.n; i++) check_kernel_info(&l, &l.k[i], dir);
  txattn_context_free(ctx);
}

Test(loader, txattn_plugin_path_replaces_the_default) {
  char a[SCRATCH_PATH_MAX], b[SCRATCH_PATH_MAX];
  arrange_two_dirs(a, b);
  cr_assert_eq(setenv("TXATTN_PLUGIN_PATH", a, 1), 0);
  txattn_context *ctx = NULL;
  cr_assert_eq(txattn_context_create(NULL, &ctx), TXATTN_OK, "%s", txattn_last_error());
  static const char *const names[] = {TEST_GOOD_KERNEL};
  expect_exactly(ctx, names, 1, "TXATTN_PLUGIN_PATH=<a>");
  txattn_context_free(ctx);
}

Test(loader, the_option_beats_the_environment) {
  char a[SCRATCH_PATH_MAX], b[SCRATCH_PATH_MAX];
  arrange_two_dirs(a, b);
  cr_assert_eq(setenv("TXATTN_PLUGIN_PATH", a, 1), 0);
  txattn_context *ctx = test_context_at(b, 1);
  static const char *const names[] = {TEST_SPARE_KERNEL};
  expect_exactly(ctx, names, 1, "TXATTN_PLUGIN_PATH=<a>, plugin_path=<b>");
  txattn_context_free(ctx);
}

Test(loader, a_path_lists_several_directories) {
  char a[SCRATCH_PATH_MAX], b[SCRATCH_PATH_MAX], both[2 * SCRATCH_PATH_MAX + 2];
  arrange_two_dirs(a, b);
  snprintf(both, sizeof both, "%s:%s", a, b);
  cr_assert_eq(setenv("TXATTN_PLUGIN_PATH", both, 1), 0);
  txattn_context *ctx = NULL;
  cr_assert_eq(txattn_context_create(NULL, &ctx), TXATTN_OK, "%s", txattn_last_error());
  static const char *const names[] = {TEST_GOOD_KERNEL, TEST_SPARE_KERNEL};
  expect_exactly(ctx, names, 2, "TXATTN_PLUGIN_PATH=<a>:<b>");
  txattn_context_free(ctx);
}

/* ---- what would break later: version strings, taken names, links (issue 19) ---- */

struct version_case {
  int kind; /* CLAIMS_VERSION_KIND of tests/plugins/claims_plugin.c */
  int loads;
  const char *what;
};

ParameterizedTestParameters(loader, version_strings_a_table_cannot_hold_are_refused) {
  static struct version_case cases[] = {
      {1, 0, "a terminal escape"}, {2, 0, "a line break"},           {3, 0, "a byte beyond ASCII"},
      {4, 0, "64 bytes"},          {5, 1, "63 bytes (the longest)"}, {6, 0, "an empty version"},
  };
  return cr_make_param_array(struct version_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct version_case *vc, loader,
                  version_strings_a_table_cannot_hold_are_refused) {
  char file[64], kernel[64];
  snprintf(file, sizeof file, "txattn_test_version%d.so", vc->kind);
  snprintf(kernel, sizeof kernel, "version%d.scalar", vc->kind);
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, file, NULL, 0644);
  txattn_context *ctx = test_context_at(scratch, 1);
  cr_expect_eq(kernel_usable(ctx, kernel), vc->loads, "version with %s: %s", vc->what,
               vc->loads ? "refused" : "loaded");
  if (!vc->loads) {
    static const char *const words[] = {"version", NULL};
    expect_rejected(ctx, scratch, file, vc->what, words);
    txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
    cr_assert(find_rejected(ctx, scratch, file, &r));
    for (const char *c = r.reason; *c; c++)
      cr_expect((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f,
                "the reason quotes an unprintable byte 0x%02x: %s", (unsigned char)*c, r.reason);
  } else {
    /* what loads can be written into a table: profile must not fail on it later */
    txattn_table *t = NULL;
    cr_expect_eq(txattn_table_create(ctx, &t), TXATTN_OK, "%s", txattn_last_error());
    txattn_table_free(t);
  }
  txattn_context_free(ctx);
}

Test(loader, a_plugin_name_already_taken_is_refused) {
  char a[SCRATCH_PATH_MAX], b[SCRATCH_PATH_MAX], both[2 * SCRATCH_PATH_MAX + 2],
      want[SCRATCH_PATH_MAX + 64];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_subdir(a, sizeof a, scratch, "a", 0755);
  scratch_subdir(b, sizeof b, scratch, "b", 0755);
  scratch_copy_plugin(a, TEST_GOOD_FILE, NULL, 0644);
  scratch_copy_plugin(b, TEST_GOOD_FILE, NULL, 0644);
  snprintf(both, sizeof both, "%s:%s", a, b);
  txattn_context *ctx = test_context_at(both, 1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_kernel_info *k = test_kernel_find(&l, TEST_GOOD_KERNEL);
  cr_assert(k != NULL && strncmp(k->path, a, strlen(a)) == 0,
            "the first directory's plugin did not keep the name");
  txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
  char all[4096];
  cr_assert(find_rejected(ctx, b, TEST_GOOD_FILE, &r), "the second copy is not rejected:%s",
            describe_rejected(ctx, all, sizeof all));
  int len = snprintf(want, sizeof want, "name testgood is already taken by %s/", a);
  cr_assert(len > 0 && (size_t)len < sizeof want);
  cr_expect(strstr(r.reason, want) != NULL, "rejected with \"%s\", want \"%s...\"", r.reason, want);
  txattn_context_free(ctx);
  /* a shipped plugin's name too: found after the shipped naive, a third-party "naive" is refused
     (found first, it would win and still count as third-party: test_dispatch.c) */
  snprintf(both, sizeof both, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, a);
  scratch_copy_plugin(a, "txattn_test_fakenaive.so", NULL, 0644);
  ctx = test_context_at(both, 1);
  cr_assert(find_rejected(ctx, a, "txattn_test_fakenaive.so", &r),
            "a second plugin named naive is not rejected:%s",
            describe_rejected(ctx, all, sizeof all));
  cr_expect(text_mentions(r.reason, "name naive is already taken by", "txattn_naive.so", NULL),
            "rejected with \"%s\"", r.reason);
  txattn_context_free(ctx);
}

struct link_case {
  const char *what;
  mode_t open_mode; /* the directory the link points into */
  int foreign;      /* that directory belongs to uid 65534 (root only) */
  int link_dir;     /* the plugin directory is the link, not the file */
  int chain;        /* the file links to a link in the open directory, which links to a safe file */
  int loads;
};

ParameterizedTestParameters(loader, links_into_unsafe_directories_are_refused) {
  static struct link_case cases[] = {
      {"a file link into a 0777 directory", 0777, 0, 0, 0, 0},
      {"a file link into a 0775 directory", 0775, 0, 0, 0, 0},
      {"a file link into a 1777 (sticky) directory", 01777, 0, 0, 0, 1},
      {"a file link into a 0755 directory", 0755, 0, 0, 0, 1},
      {"a file link into another user's directory", 0755, 1, 0, 0, 0},
      {"a directory link into a 0777 directory", 0777, 0, 1, 0, 0},
      {"a directory link into a 0755 directory", 0755, 0, 1, 0, 1},
      {"a link to a link in a 0777 directory", 0777, 0, 0, 1, 0},
  };
  return cr_make_param_array(struct link_case, cases, sizeof cases / sizeof cases[0]);
}

static void fits(int n, size_t size) {
  cr_assert(n > 0 && (size_t)n < size, "scratch path too long");
}
#define FIT(n, buf) fits((n), sizeof(buf))

/* scratch/open (lc->open_mode) holds the target; the plugin path is scratch/plugins (0755) holding a
   link to it, or the link scratch/plugins -> open/plugins itself. */
ParameterizedTest(struct link_case *lc, loader, links_into_unsafe_directories_are_refused) {
  if (lc->foreign && geteuid() != 0) cr_skip_test("only root can give a directory to another user");
  char open_dir[SCRATCH_PATH_MAX], safe[SCRATCH_PATH_MAX], plugins[SCRATCH_PATH_MAX],
      target[SCRATCH_PATH_MAX], link[SCRATCH_PATH_MAX];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_subdir(open_dir, sizeof open_dir, scratch, "open", 0755);
  if (lc->link_dir) {
    char real[SCRATCH_PATH_MAX];
    scratch_subdir(real, sizeof real, open_dir, "plugins", 0755);
    scratch_copy_plugin(real, TEST_SPARE_FILE, NULL, 0644);
    FIT(snprintf(plugins, sizeof plugins, "%s/plugins", scratch), plugins);
    cr_assert_eq(symlink(real, plugins), 0, "symlink: %s", strerror(errno));
  } else {
    scratch_subdir(plugins, sizeof plugins, scratch, "plugins", 0755);
    FIT(snprintf(link, sizeof link, "%s/%s", plugins, TEST_SPARE_FILE), link);
    if (lc->chain) {
      scratch_subdir(safe, sizeof safe, scratch, "safe", 0755);
      scratch_copy_plugin(safe, TEST_SPARE_FILE, NULL, 0644);
      FIT(snprintf(target, sizeof target, "%s/hop.so", open_dir), target);
      char end[SCRATCH_PATH_MAX];
      FIT(snprintf(end, sizeof end, "%s/%s", safe, TEST_SPARE_FILE), end);
      cr_assert_eq(symlink(end, target), 0, "symlink: %s", strerror(errno));
      cr_assert_eq(symlink("../open/hop.so", link), 0, "symlink: %s", strerror(errno));
    } else {
      scratch_copy_plugin(open_dir, TEST_SPARE_FILE, NULL, 0644);
      FIT(snprintf(target, sizeof target, "%s/%s", open_dir, TEST_SPARE_FILE), target);
      cr_assert_eq(symlink(target, link), 0, "symlink: %s", strerror(errno));
    }
  }
  if (lc->foreign) cr_assert_eq(chown(open_dir, 65534, 65534), 0, "chown: %s", strerror(errno));
  cr_assert_eq(chmod(open_dir, lc->open_mode), 0);
  txattn_context *ctx = test_context_at(plugins, 1);
  chmod(open_dir, 0755);
  int loaded = kernel_usable(ctx, TEST_SPARE_KERNEL);
  cr_expect_eq(loaded, lc->loads, "%s: the plugin %s", lc->what,
               loaded ? "loaded" : "did not load");
  if (!lc->loads) {
    static const char *const words[] = {"symlink", NULL};
    expect_rejected(ctx, plugins, lc->link_dir ? NULL : TEST_SPARE_FILE, lc->what, words);
    txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
    cr_assert(find_rejected(ctx, plugins, lc->link_dir ? NULL : TEST_SPARE_FILE, &r));
    cr_expect(text_mentions(r.reason, lc->foreign ? "owned by uid" : "writable", NULL) &&
                  strstr(r.reason, "/open") != NULL,
              "%s: \"%s\" does not name the open directory and what is wrong with it", lc->what,
              r.reason);
  }
  txattn_context_free(ctx);
}
