/* SPDX-License-Identifier: MIT */
/* A hostile plugin: one source, compiled once per fault mode (HOSTILE_<MODE> defined, see
 * hostile.cmake and docs of the list there), each into a directory of its own. Apart from its one
 * fault every build is a well-formed plugin with one kernel, "h<mode>.scalar", that computes the
 * exact answer with the test oracle (tests/plugins/exact_kernel.c), and claims a huge speed_hint,
 * so that only a host's own defences keep it from being picked. The faults are those of issue 19:
 * an entry symbol that is data, constructors that crash or exit, applicable() and run() that
 * crash, trap, abort, loop, exit, write outside their buffers, answer wrong (always, only above
 * 300 keys, with a NaN), print to stdout, or hang on their first call only; run() that crashes or
 * hangs only above 300 keys (beyond every check shape, at a profile's timed points); run() that
 * forks a child and both hang (the scanner must kill the child too); run() that is exact on its
 * first calls of each shape and then cheats: returns TXATTN_OK without writing (a sleeper), or
 * copies the output of its last exact call (stale: fast because it skips the work). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exact_kernel.h"

#ifndef HOSTILE_NAME
#error "HOSTILE_NAME (the plugin name, h<mode>) must be defined"
#endif

/* Never returns, burning a core as a kernel stuck in a loop does. */
__attribute__((unused)) static void spin_forever(void) {
  volatile uint64_t n = 0;
  for (;;) n = n + 1;
}

/* Never returns, blocked as a kernel waiting on a lock that never comes is. */
__attribute__((unused)) static void block_forever(void) {
  for (;;) {
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
  }
}

#if defined(HOSTILE_CTOR_SEGV) || defined(HOSTILE_CTOR_EXIT)
__attribute__((constructor)) static void hostile_ctor(void) {
#ifdef HOSTILE_CTOR_SEGV
  raise(SIGSEGV);
#else
  exit(42);
#endif
}
#endif

static int hostile_applicable(const txattn_problem *p, const char **why) {
#if defined(HOSTILE_APP_SEGV)
  raise(SIGSEGV);
#elif defined(HOSTILE_APP_LOOP)
  spin_forever();
#endif
  return test_exact_applicable(p, why);
}

/* The element just past the last one of o (strides are >= 0, f32 only: no dtypes declared). */
__attribute__((unused)) static float *past_o(const txattn_kernel_call *c) {
  const txattn_problem *p = c->problem;
  const txattn_layout *l = &c->tensors->o_layout;
  return c->tensors->o + (p->batch - 1) * l->batch + (p->heads_q - 1) * l->head +
         (p->n_q - 1) * l->row + p->d_v;
}

/* Adds e to every element of o. */
__attribute__((unused)) static void offset_all(const txattn_kernel_call *c, float e) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
        for (int64_t x = 0; x < p->d_v; x++) o[x] += e;
      }
}

#define HOSTILE_WORKSPACE 4096 /* bytes the run_past_ws build asks for, and then overruns */

static size_t hostile_workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
#ifdef HOSTILE_RUN_PAST_WS
  (void)p;
  (void)n_threads;
  (void)tunables;
  return HOSTILE_WORKSPACE;
#else
  return test_exact_workspace(p, n_threads, tunables);
#endif
}

#ifdef HOSTILE_RUN_HANG_ONCE
/* Hangs on the first call: with TXATTN_TEST_HANG_ONCE_FILE set, on the first call of whichever
   process creates that file (so a host that runs the kernel in many processes meets one hang in
   all), otherwise on the first call in each process. */
static int first_call(void) {
  const char *marker = getenv("TXATTN_TEST_HANG_ONCE_FILE");
  if (marker != NULL && marker[0] != '\0') {
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return 0;
    close(fd);
    return 1;
  }
  static volatile sig_atomic_t calls = 0;
  return calls++ == 0;
}
#endif

#ifdef HOSTILE_RUN_FORK_HANG
#include <sys/prctl.h>
/* Forks a child named "hfork_hang_kid" (its comm, for the test to look for) that blocks, then
   blocks too. The child ends itself after 60 s (SIGALRM), so that a host that fails to kill it
   leaks it for a minute, not forever. */
static void fork_and_hang(void) {
  if (fork() == 0) {
    prctl(PR_SET_NAME, "hfork_hang_kid", 0, 0, 0);
    alarm(60);
  }
  block_forever();
}
#endif

#if defined(HOSTILE_RUN_SLEEPER) || defined(HOSTILE_RUN_STALE)
#define HONEST_CALLS 3   /* exact on this many calls of each shape, then it cheats */
#define MAX_SHAPES   512 /* shapes it tells apart; it is exact on any beyond them */

/* The calls of one shape (counted without a lock: a test plugin called from one thread) and, for
   run_stale, the output of its last exact call, row by row. */
typedef struct shape_calls {
  int64_t key[11];
  int64_t calls;
  float *out;
} shape_calls;
static shape_calls shapes[MAX_SHAPES];
static size_t n_shapes;

static shape_calls *calls_of(const txattn_problem *p) {
  const int64_t key[11] = {p->batch,       p->heads_q,      p->heads_kv, p->n_q,
                           p->n_kv,        p->d_qk,         p->d_v,      (int64_t)p->mask,
                           p->window_left, p->window_right, p->ragged};
  for (size_t i = 0; i < n_shapes; i++)
    if (memcmp(shapes[i].key, key, sizeof key) == 0) return &shapes[i];
  if (n_shapes == MAX_SHAPES) return NULL;
  memcpy(shapes[n_shapes].key, key, sizeof key);
  return &shapes[n_shapes++];
}

/* Copies o's rows into `rows` (to_o 0) or back into o (to_o 1). */
__attribute__((unused)) static void copy_rows(const txattn_kernel_call *c, float *rows, int to_o) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  size_t k = 0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++, k += (size_t)p->d_v) {
        float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
        memcpy(to_o ? o : rows + k, to_o ? rows + k : o, (size_t)p->d_v * sizeof *o);
      }
}

/* 1 when the call is one to cheat on: after HONEST_CALLS of its shape, the sleeper returns at once
   and the stale kernel copies its last exact output (when it has one) into o. */
static int cheat(const txattn_kernel_call *c) {
  shape_calls *s = calls_of(c->problem);
  if (s == NULL || s->calls++ < HONEST_CALLS) return 0;
#ifdef HOSTILE_RUN_STALE
  if (s->out == NULL) return 0;
  copy_rows(c, s->out, 1);
#endif
  return 1;
}

/* run_stale keeps the output of each exact call. */
static void keep_output(const txattn_kernel_call *c) {
#ifdef HOSTILE_RUN_STALE
  const txattn_problem *p = c->problem;
  shape_calls *s = calls_of(p);
  size_t n = (size_t)(p->batch * p->heads_q * p->n_q * p->d_v);
  if (s != NULL && s->out == NULL) s->out = malloc(n * sizeof *s->out);
  if (s != NULL && s->out != NULL) copy_rows(c, s->out, 0);
#else
  (void)c;
#endif
}
#endif

static txattn_status hostile_run(const txattn_kernel_call *c) {
#if defined(HOSTILE_RUN_SEGV)
  raise(SIGSEGV);
#elif defined(HOSTILE_RUN_SIGILL)
  raise(SIGILL);
#elif defined(HOSTILE_RUN_ABORT)
  abort();
#elif defined(HOSTILE_RUN_LOOP)
  spin_forever();
#elif defined(HOSTILE_RUN_EXIT)
  exit(3);
#elif defined(HOSTILE_RUN_HANG_ONCE)
  if (first_call()) block_forever();
#elif defined(HOSTILE_RUN_SEGV_ABOVE_300)
  if (c->problem->n_kv > 300) raise(SIGSEGV);
#elif defined(HOSTILE_RUN_LOOP_ABOVE_300)
  if (c->problem->n_kv > 300) spin_forever();
#elif defined(HOSTILE_RUN_FORK_HANG)
  fork_and_hang();
#elif defined(HOSTILE_RUN_SLEEPER) || defined(HOSTILE_RUN_STALE)
  if (cheat(c)) return TXATTN_OK;
#endif
  txattn_status st = test_exact_run(c);
  if (st != TXATTN_OK) return st;
#if defined(HOSTILE_RUN_PAST_O)
  float *past = past_o(c);
  for (int x = 0; x < 64; x++) past[x] = 1e30f;
#elif defined(HOSTILE_RUN_PAST_WS)
  float *past = (float *)((char *)c->workspace + HOSTILE_WORKSPACE);
  for (int x = 0; x < 64; x++) past[x] = 1e30f;
#elif defined(HOSTILE_RUN_WRONG)
  offset_all(c, 1e-3f);
#elif defined(HOSTILE_RUN_WRONG_ABOVE_300)
  if (c->problem->n_kv > 300) offset_all(c, 1e-3f);
#elif defined(HOSTILE_RUN_NAN)
  /* one NaN per row, in its first column: a host comparing with `err > tol` misses it */
  const txattn_problem *p = c->problem;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        txattn_row_mut(c->tensors->o, &c->tensors->o_layout, b, h, i)[0] = NAN;
#elif defined(HOSTILE_RUN_PRINTS)
  printf("%s.scalar: hello from a kernel that prints on stdout\n", HOSTILE_NAME);
  fflush(stdout);
#elif defined(HOSTILE_RUN_SLEEPER) || defined(HOSTILE_RUN_STALE)
  keep_output(c);
#endif
  return TXATTN_OK;
}

static const txattn_kernel_desc kernel = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = HOSTILE_NAME ".scalar",
    .summary = "hostile test kernel (" HOSTILE_NAME "): exact but for its one fault",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_SPARSE,
    .speed_hint = 1e6f, /* as the probe: attractive, so only a defence keeps it out */
    .applicable = hostile_applicable,
    .workspace_size = hostile_workspace,
    .run = hostile_run,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = HOSTILE_NAME,
    .version = "1.0.0",
    .summary = "txattn hostile test plugin: " HOSTILE_NAME,
    .n_kernels = 1,
    .kernels = kernels,
};

#ifdef HOSTILE_ENTRY_DATA
/* The entry symbol is an object in read-only data: calling it jumps into non-executable memory. */
TXATTN_PLUGIN_EXPORT const unsigned char txattn_plugin_entry[64] = {0xff, 0xff, 0xff, 0xff};
__attribute__((used)) static const txattn_plugin_desc *hostile_unused(void) {
  return &plugin;
}
#else
TXATTN_PLUGIN_DEFINE(plugin)
#endif
