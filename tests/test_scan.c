/* SPDX-License-Identifier: MIT */
/* The plugin scanner (issue 19, docs/plugins.md "Scanning"): every hostile plugin of
 * tests/plugins/hostile is quarantined with its reason before anything of it runs in the caller,
 * which gets exact answers from the rest; verdicts are kept by content (a changed file is scanned
 * again), a trusted directory is not scanned, and a corrupt or foreign registry means "scan again".
 * Each test has a registry of its own (TXATTN_SCAN_REGISTRY) and trusts the build's own plugins, so
 * that only the file under test is scanned. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"

static char registry[SCRATCH_PATH_MAX];

static void scan_env(void) {
  test_env_clean();
  scratch_dir(registry, sizeof registry, 0700);
  setenv("TXATTN_SCAN_REGISTRY", registry, 1);
  setenv("TXATTN_TRUSTED_PLUGIN_DIRS", TXATTN_TEST_PLUGIN_BUILD_DIR, 1);
  setenv("TXATTN_SCAN_TIMEOUT", "2", 1);
}

TestSuite(scan, .init = scan_env, .fini = test_check_leaks);

static void hostile_dir(const char *mode, char *dir, size_t size) {
  snprintf(dir, size, "%s/%s", TXATTN_TEST_HOSTILE_DIR, mode);
}

/* The records in dir (files not starting with '.'); the first one's path in first. */
static int count_records(const char *dir, char *first, size_t size) {
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n++ == 0 && first) snprintf(first, size, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  return n;
}

static void read_text(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  cr_assert(f != NULL, "cannot open %s: %s", path, strerror(errno));
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL, "cannot write %s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

static void copy_file(const char *from, const char *to) {
  char buf[1 << 16];
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  cr_assert(in && out, "cannot copy %s to %s", from, to);
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) cr_assert_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
  chmod(to, 0644);
}

/* The reason the context gives for refusing the file whose path ends in `file`, or NULL. */
static const char *refusal(const txattn_context *ctx, const char *file) {
  for (size_t i = 0; i < txattn_rejected_count(ctx); i++) {
    txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
    if (txattn_rejected_get(ctx, i, &r) != TXATTN_OK) continue;
    size_t a = strlen(r.path), b = strlen(file);
    if (a >= b && strcmp(r.path + a - b, file) == 0) return r.reason;
  }
  return NULL;
}

static int has_kernel(const txattn_context *ctx, const char *name) {
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) == TXATTN_OK && strcmp(k.name, name) == 0) return 1;
  }
  return 0;
}

/* txattn_attention on a shape every hostile kernel would take (n_kv > 300), within the bound. */
static void expect_exact_answer(txattn_context *ctx) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 5;
  p.n_kv = 333;
  p.d_qk = 16;
  size_t nq = 5 * 16, nkv = 333 * 16;
  float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4);
  float *o = malloc(nq * 4 + 1024), *ref = malloc(nq * 4);
  cr_assert(q && k && v && o && ref);
  for (size_t i = 0; i < nkv; i++) {
    k[i] = (float)sin(0.37 * (double)i);
    v[i] = (float)cos(0.11 * (double)i);
    if (i < nq) q[i] = (float)sin(1.3 * (double)i);
  }
  memset(o, 0x7f, nq * 4 + 1024);
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q, t.k = k, t.v = v, t.o = o;
  txattn_status s = txattn_attention(ctx, &p, &t);
  cr_assert_eq(s, TXATTN_OK, "txattn_attention: %s", txattn_last_error());
  t.o = ref;
  double bound = 0;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK);
  cr_assert_eq(txattn_error_bound(&p, &t, &bound), TXATTN_OK);
  for (size_t i = 0; i < nq; i++)
    cr_assert(fabs((double)o[i] - (double)ref[i]) <= bound, "o[%zu] = %g, reference %g", i,
              (double)o[i], (double)ref[i]);
  for (size_t i = nq * 4; i < nq * 4 + 1024; i++)
    cr_assert_eq(((unsigned char *)o)[i], 0x7f, "byte %zu past o was written", i - nq * 4);
  free(q), free(k), free(v), free(o), free(ref);
}

typedef struct hostile_case {
  char mode[32];
  char why[2][80]; /* both in the quarantine's reason */
} hostile_case;

ParameterizedTestParameters(scan, hostile) {
  static hostile_case cases[] = {
      {"entry_data", {"killed by signal 11", "in txattn_plugin_entry()"}},
      {"ctor_segv", {"killed by signal 11", "while loading it (its constructors)"}},
      {"ctor_exit", {"exit(42)", "while loading it (its constructors)"}},
      {"app_segv", {"killed by signal 11", "in applicable() of happ_segv.scalar"}},
      {"app_loop", {"no answer within 2 s", "in applicable() of happ_loop.scalar"}},
      {"run_segv", {"killed by signal 11", "in run() of hrun_segv.scalar"}},
      {"run_sigill", {"killed by signal 4", "in run() of hrun_sigill.scalar"}},
      {"run_abort", {"killed by signal 6", "in run() of hrun_abort.scalar"}},
      {"run_loop", {"no answer within 2 s", "in run() of hrun_loop.scalar"}},
      {"run_exit", {"exit(3)", "in run() of hrun_exit.scalar"}},
      {"run_past_o", {"wrote past o", "in run() of hrun_past_o.scalar"}},
      {"run_past_ws", {"wrote past its workspace", "in run() of hrun_past_ws.scalar"}},
      {"run_wrong", {"wrong result: kernel hrun_wrong.scalar", "> bound"}},
      {"run_nan", {"returned NaN", "where the reference is finite"}},
      {"run_wrong_above_300", {"wrong result: kernel hrun_wrong_above_300.scalar", "n_kv 333"}},
      {"run_prints", {"printed", "bytes to stdout"}},
      {"run_hang_once", {"no answer within 2 s", "in run() of hrun_hang_once.scalar"}},
      {"run_segv_above_300", {"killed by signal 11", "in run() of hrun_segv_above_300.scalar"}},
      {"run_loop_above_300", {"no answer within 2 s", "in run() of hrun_loop_above_300.scalar"}},
      {"run_fork_hang", {"no answer within 2 s", "in run() of hrun_fork_hang.scalar"}},
  };
  return cr_make_param_array(hostile_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(hostile_case *c, scan, hostile) {
  char dir[SCRATCH_PATH_MAX], path[2 * SCRATCH_PATH_MAX], file[64], record[2 * SCRATCH_PATH_MAX];
  hostile_dir(c->mode, dir, sizeof dir);
  snprintf(path, sizeof path, "%s:%s", dir, TXATTN_TEST_PLUGIN_BUILD_DIR);
  snprintf(file, sizeof file, "/txattn_hostile_%s.so", c->mode);
  for (int round = 0; round < 2; round++) { /* the second from this process's memory */
    txattn_context *ctx = test_context_at(path, 1);
    const char *why = refusal(ctx, file);
    cr_assert(why != NULL, "%s was not refused", file);
    cr_assert(strstr(why, "quarantined by the plugin scanner: ") == why, "%s: %s", file, why);
    cr_assert(strstr(why, c->why[0]) && strstr(why, c->why[1]), "%s: \"%s\" lacks \"%s\" or \"%s\"",
              file, why, c->why[0], c->why[1]);
    cr_assert(txattn_kernel_count(ctx) > 0, "the build's own kernels were not loaded");
    expect_exact_answer(ctx);
    txattn_context_free(ctx);
  }
  cr_assert_eq(count_records(registry, record, sizeof record), 1, "one record in %s", registry);
  char text[4096];
  read_text(record, text, sizeof text);
  cr_assert(strstr(text, "\nquarantined: ") && strstr(text, c->why[0]), "record %s: %s", record,
            text);
  scratch_remove(registry);
}

/* The same path with other bytes is another plugin: scanned again, and an "ok" for the old bytes
   does not let the new ones in. */
Test(scan, changed_file_is_scanned_again) {
  char dir[SCRATCH_PATH_MAX], path[2 * SCRATCH_PATH_MAX], so[2 * SCRATCH_PATH_MAX];
  scratch_dir(dir, sizeof dir, 0755);
  scratch_copy_plugin(dir, TEST_GOOD_FILE, "x.so", 0644);
  snprintf(path, sizeof path, "%s:%s", dir, TXATTN_TEST_PLUGIN_BUILD_DIR);
  snprintf(so, sizeof so, "%s/x.so", dir);
  txattn_context *ctx = test_context_at(path, 1);
  cr_assert(has_kernel(ctx, TEST_GOOD_KERNEL), "the good plugin was not loaded");
  txattn_context_free(ctx);
  cr_assert_eq(count_records(registry, NULL, 0), 1);

  /* one byte more at the end: the same plugin to dlopen, another content */
  FILE *f = fopen(so, "ab");
  cr_assert(f != NULL);
  fputc(0, f);
  fclose(f);
  ctx = test_context_at(path, 1);
  cr_assert(has_kernel(ctx, TEST_GOOD_KERNEL));
  txattn_context_free(ctx);
  cr_assert_eq(count_records(registry, NULL, 0), 2, "the changed file was not scanned again");

  char hostile[2 * SCRATCH_PATH_MAX];
  snprintf(hostile, sizeof hostile, "%s/run_wrong/txattn_hostile_run_wrong.so",
           TXATTN_TEST_HOSTILE_DIR);
  char tmp[2 * SCRATCH_PATH_MAX + 8]; /* a new file renamed over it, as installers do: rewriting a
                                        loaded .so in place would crash this process */
  snprintf(tmp, sizeof tmp, "%s.new", so);
  copy_file(hostile, tmp);
  cr_assert_eq(rename(tmp, so), 0);
  ctx = test_context_at(path, 1);
  const char *why = refusal(ctx, "/x.so");
  cr_assert(why && strstr(why, "wrong result: kernel hrun_wrong.scalar"), "x.so: %s",
            why ? why : "loaded");
  expect_exact_answer(ctx);
  txattn_context_free(ctx);
  cr_assert_eq(count_records(registry, NULL, 0), 3);
  scratch_remove(dir);
  scratch_remove(registry);
}

Test(scan, trusted_directory_is_not_scanned) {
  char dir[SCRATCH_PATH_MAX], trusted[3 * SCRATCH_PATH_MAX];
  hostile_dir("run_wrong", dir, sizeof dir);
  snprintf(trusted, sizeof trusted, "/nonexistent:%s/.:%s", dir, TXATTN_TEST_PLUGIN_BUILD_DIR);
  setenv("TXATTN_TRUSTED_PLUGIN_DIRS", trusted, 1);
  txattn_context *ctx = test_context_at(dir, 1);
  cr_assert(has_kernel(ctx, "hrun_wrong.scalar"), "a trusted directory's plugin was not loaded");
  txattn_context_free(ctx);
  cr_assert_eq(count_records(registry, NULL, 0), 0, "a trusted directory's plugin was scanned");
  scratch_remove(registry);
}

/* Runs a context over dir in a child process (a fresh memory of verdicts) and returns 1 if the
   kernel was loaded, 0 if the file was quarantined with `why`, 2 otherwise. */
static int child_verdict(const char *dir, const char *kernel, const char *why) {
  fflush(NULL);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    txattn_options opts = {.plugin_path = dir, .table_path = "", .n_threads = 1};
    txattn_context *ctx = NULL;
    if (txattn_context_create(&opts, &ctx) != TXATTN_OK) _exit(3);
    int loaded = has_kernel(ctx, kernel), refused = 0;
    for (size_t i = 0; i < txattn_rejected_count(ctx); i++) {
      txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
      refused |= txattn_rejected_get(ctx, i, &r) == TXATTN_OK && strstr(r.reason, why) != NULL;
    }
    _exit(loaded ? 1 : refused ? 0 : 2);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "the child died: wait status 0x%x", (unsigned)st);
  return WEXITSTATUS(st);
}

/* A corrupt record is scanned again and rewritten; a record is believed only from a registry
   that nobody but this user can write. */
Test(scan, registry_is_read_only_when_sound) {
  char dir[SCRATCH_PATH_MAX], record[2 * SCRATCH_PATH_MAX], text[4096];
  const char *why = "wrong result: kernel hrun_wrong.scalar";
  hostile_dir("run_wrong", dir, sizeof dir);
  cr_assert_eq(child_verdict(dir, "hrun_wrong.scalar", why), 0);
  cr_assert_eq(count_records(registry, record, sizeof record), 1);

  write_text(record, "txattn-scan 1 libtxattn\n\x01\x02 garbage\n");
  cr_assert_eq(child_verdict(dir, "hrun_wrong.scalar", why), 0, "a corrupt record was believed");
  read_text(record, text, sizeof text);
  cr_assert(strstr(text, "\nquarantined: wrong result"), "not rewritten: %s", text);

  /* the same header and ISA lines, and a forged "ok" */
  char *verdict = strstr(text, "\nquarantined: ");
  strcpy(verdict, "\nok\n");
  write_text(record, text);
  cr_assert_eq(child_verdict(dir, "hrun_wrong.scalar", why), 1, "the registry was not read");
  chmod(registry, 0770);
  cr_assert_eq(child_verdict(dir, "hrun_wrong.scalar", why), 0,
               "a registry its group can write was believed");
  chmod(registry, 0700);
  scratch_remove(registry);
}

/* Without TXATTN_SCAN_REGISTRY the registry is $XDG_CACHE_HOME/txtune/plugin-scan. */
Test(scan, registry_lives_in_the_xdg_cache) {
  char dir[SCRATCH_PATH_MAX], cache[SCRATCH_PATH_MAX], where[2 * SCRATCH_PATH_MAX];
  scratch_dir(cache, sizeof cache, 0700);
  unsetenv("TXATTN_SCAN_REGISTRY");
  setenv("XDG_CACHE_HOME", cache, 1);
  hostile_dir("run_nan", dir, sizeof dir);
  txattn_context *ctx = test_context_at(dir, 1);
  const char *why = refusal(ctx, "/txattn_hostile_run_nan.so");
  cr_assert(why && strstr(why, "returned NaN"), "%s", why ? why : "loaded");
  txattn_context_free(ctx);
  snprintf(where, sizeof where, "%s/txtune/plugin-scan", cache);
  cr_assert_eq(count_records(where, NULL, 0), 1, "no record in %s", where);
  scratch_remove(cache);
  scratch_remove(registry);
}

/* Processes of this user named comm that are alive (not zombies waiting for their reaper). */
static int alive_named(const char *comm) {
  DIR *d = opendir("/proc");
  cr_assert(d != NULL, "cannot read /proc");
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[300], text[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue; /* ended meanwhile */
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    /* "pid (comm) state ..." */
    char *open = strchr(text, '('), *close = strrchr(text, ')');
    if (!open || !close || close[1] != ' ') continue;
    *close = '\0';
    struct stat st;
    snprintf(path, sizeof path, "/proc/%s", e->d_name);
    if (strcmp(open + 1, comm) == 0 && close[2] != 'Z' && stat(path, &st) == 0 &&
        st.st_uid == getuid())
      n++;
  }
  closedir(d);
  return n;
}

/* A plugin whose run() forks a child and both hang: at the time limit the scanner's whole process
   group is killed, the child with it (hostile_plugin.c names it hfork_hang_kid; a leaked one ends
   itself after 60 s). Another test process may be scanning the same file at the same moment, so
   its child is allowed its 2 s time limit: none may be left after 8 s. */
Test(scan, hung_plugin_child_is_killed_too, .timeout = 60) {
  char dir[SCRATCH_PATH_MAX];
  hostile_dir("run_fork_hang", dir, sizeof dir);
  txattn_context *ctx = test_context_at(dir, 1);
  const char *why = refusal(ctx, "/txattn_hostile_run_fork_hang.so");
  cr_assert(why && strstr(why, "no answer within 2 s"), "%s", why ? why : "loaded");
  txattn_context_free(ctx);
  int left = alive_named("hfork_hang_kid");
  for (int i = 0; i < 80 && left > 0; i++) {
    usleep(100000);
    left = alive_named("hfork_hang_kid");
  }
  cr_assert_eq(left, 0, "%d forked child(ren) of the hung plugin outlived the scan", left);
  scratch_remove(registry);
}

/* txattn_kernel_trial: one call of a trusted directory's kernel in the scanner's process, each
   fault said as data, the caller untouched; an exact kernel runs within the bound. */
static txattn_trial trial_of(const char *mode, int compare) {
  char dir[SCRATCH_PATH_MAX], trusted[2 * SCRATCH_PATH_MAX + 2], name[64];
  hostile_dir(mode, dir, sizeof dir);
  snprintf(trusted, sizeof trusted, "%s:%s", dir, TXATTN_TEST_PLUGIN_BUILD_DIR);
  setenv("TXATTN_TRUSTED_PLUGIN_DIRS", trusted, 1);
  snprintf(name, sizeof name, "h%s.scalar", mode);
  txattn_context *ctx = test_context_at(dir, 1);
  size_t k = 0;
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  while (txattn_kernel_get(ctx, k, &info) == TXATTN_OK && strcmp(info.name, name) != 0) k++;
  cr_assert(k < txattn_kernel_count(ctx), "%s was not loaded", name);
  txattn_problem p = {.heads_q = 2, .n_q = 193, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL};
  txattn_trial t = TXATTN_TRIAL_INIT;
  t.timeout_s = 3;
  t.compare = compare;
  cr_assert_eq(txattn_kernel_trial(ctx, k, &p, NULL, NULL, 0, 1, &t), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_context_free(ctx);
  return t;
}

Test(scan, kernel_trial_says_what_happened, .timeout = 60) {
  txattn_trial t = trial_of("run_sleeper", 1); /* exact on its first calls */
  cr_assert_eq(t.outcome, TXATTN_TRIAL_RAN, "%d: %s", (int)t.outcome, t.why);
  cr_assert(t.error >= 0 && t.error <= t.bound && t.seconds > 0, "error %g bound %g", t.error,
            t.bound);
  t = trial_of("run_segv", 1);
  cr_assert(t.outcome == TXATTN_TRIAL_CRASHED && t.signal == SIGSEGV, "%d: %s", (int)t.outcome,
            t.why);
  t = trial_of("run_exit", 0);
  cr_assert(t.outcome == TXATTN_TRIAL_CRASHED && t.exit_status == 3, "%d: %s", (int)t.outcome,
            t.why);
  t = trial_of("run_loop", 0);
  cr_assert_eq(t.outcome, TXATTN_TRIAL_HUNG, "%d: %s", (int)t.outcome, t.why);
  t = trial_of("run_prints", 0);
  cr_assert(t.outcome == TXATTN_TRIAL_PRINTED && t.printed > 0, "%d: %s", (int)t.outcome, t.why);
  t = trial_of("run_past_o", 0);
  cr_assert(t.outcome == TXATTN_TRIAL_OUTSIDE && t.after == 256 && t.before == 0, "%d: %zu %zu",
            (int)t.outcome, t.after, t.before);
  t = trial_of("run_wrong", 1);
  cr_assert(t.outcome == TXATTN_TRIAL_INEXACT && t.error > t.bound, "%d: %s", (int)t.outcome,
            t.why);
  t = trial_of("run_wrong", 0); /* not compared: it ran */
  cr_assert_eq(t.outcome, TXATTN_TRIAL_RAN, "%d: %s", (int)t.outcome, t.why);
  scratch_remove(registry);
}
