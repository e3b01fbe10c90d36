/* SPDX-License-Identifier: MIT */
/* txattn-scan: loads one plugin file in a process of its own and runs each of its kernels on a few
 * small shapes against txattn_reference, so that a plugin that crashes, hangs, exits, computes
 * wrongly or writes outside its buffers does so here and not in the program that would load it.
 *
 *   txattn-scan ISA_MASK PLUGIN_FILE
 *   txattn-scan ISA_MASK PLUGIN_FILE check KERNEL THREADS COMPARE FIELD=VALUE... [tunable.NAME=V...]
 *
 * The second form (txattn_kernel_trial, scan_spawn.c) runs one kernel once on one problem (the
 * fields of scan_protocol.h), on inputs of its own, and says how that went (scan_protocol.h); with
 * COMPARE 1 its output is held to txattn_reference within txattn_error_bound, as the scan does.
 * ISA_MASK (hex) has bit (1u << txattn_isa) for each ISA the caller may run: kernels of other ISAs
 * are not run (their SIGILL would be this machine's, not the plugin's fault). The verdict goes to
 * file descriptor 3 (scan_protocol.h); the libtxattn that spawned us (scan_spawn.c) reads it.
 * Installed as <libdir>/txattn/txattn-scan beside the library it links, in the build tree too.
 *
 * Every output buffer (o, the workspace) ends at a PROT_NONE page and starts after canary bytes
 * checked after each run; the inputs are read-only. A fault in a guard page or an input is named by
 * the SIGSEGV handler; any other fault kills the scanner, and the caller names the step it was in. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "half.h"
#include "plugin_check.h"
#include "scan/scan_protocol.h"

#define CANARY       0xA5
#define MAX_BUFFER   (UINT64_C(256) << 20) /* a workspace above this is not scanned */
#define MACHINE_L1D  (32 << 10)
#define MACHINE_L2   (1 << 20)
#define MACHINE_L3   (16 << 20)
#define SCAN_THREADS 2 /* a threaded kernel's thread count here */

/* plugin_check.c reports through this helper of core/error.c, which the scanner does not link (its
   other functions are libtxattn's public API, which the scanner links). */
int txattn__why_not(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int txattn__why_not(char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return 0;
}

static void write_all(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(TXATTN_SCAN_VERDICT_FD, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(2);
    s += w;
    n -= (size_t)w;
  }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  for (int i = 0; i < n; i++)
    if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
  line[n++] = '\n';
  write_all(line, (size_t)n);
}

/* ---- guarded buffers ---- */

typedef struct guarded {
  unsigned char *map, *guard, *data; /* data ends at or before guard, which is one PROT_NONE page */
  size_t map_len, len, tail;
} guarded;

static size_t page;

/* len bytes, 64-byte aligned, ending at most 63 + tail bytes before a guard page (tail bytes of
   canary between) and after at least one page of canary bytes. 0 if the mapping failed. */
static int guarded_new(guarded *g, size_t len, size_t tail) {
  size_t body = (len + 63) / 64 * 64 + tail;
  size_t data_pages = (body + page - 1) / page + 1; /* one page of canary at least */
  memset(g, 0, sizeof *g);
  g->map_len = (data_pages + 1) * page;
  void *m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  g->map = m;
  g->guard = g->map + data_pages * page;
  g->data = g->guard - body;
  g->tail = tail;
  g->len = len;
  memset(g->map, CANARY, data_pages * page);
  if (mprotect(g->guard, page, PROT_NONE) != 0) {
    munmap(g->map, g->map_len);
    return 0;
  }
  return 1;
}

static void guarded_free(guarded *g) {
  if (g->map) munmap(g->map, g->map_len);
  memset(g, 0, sizeof *g);
}

/* 0 if a canary byte before or after the data changed; *where says which side, *before and *after
   how far from the data the farthest changed byte on each side is. */
static int canaries_ok(const guarded *g, const char **where, size_t *before, size_t *after) {
  *before = *after = 0;
  for (unsigned char *p = g->map; p < g->data; p++)
    if (*p != CANARY && !*before) *before = (size_t)(g->data - p);
  for (unsigned char *p = g->data + g->len; p < g->guard; p++)
    if (*p != CANARY) *after = (size_t)(p - g->data - g->len) + 1;
  *where = *before ? "before" : "past";
  return !*before && !*after;
}

static int in_range(const void *a, const void *lo, size_t len) {
  return (uintptr_t)a >= (uintptr_t)lo && (uintptr_t)a < (uintptr_t)lo + len;
}

/* What the SIGSEGV handler says, prepared before each run (the handler only writes). */
static struct {
  const guarded *o, *ws, *in[3];
  char past_o[512], past_ws[512], into_in[512];
} fault;

static void on_segv(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  const char *msg = NULL;
  if (si->si_code <= 0) /* sent (raise, kill), not a fault: die of it, as without the handler */
    ;
  else if (fault.o && in_range(si->si_addr, fault.o->guard, page))
    msg = fault.past_o;
  else if (fault.ws && in_range(si->si_addr, fault.ws->guard, page))
    msg = fault.past_ws;
  else
    for (int i = 0; i < 3; i++)
      if (fault.in[i] && in_range(si->si_addr, fault.in[i]->map, fault.in[i]->map_len))
        msg = fault.into_in;
  if (msg == NULL) { /* SA_RESETHAND restored the default: the signal kills us as it returns */
    raise(sig);
    return;
  }
  write_all(msg, strlen(msg));
  _exit(0);
}

static void catch_faults(void) {
  static unsigned char alt[1 << 16];
  stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}

/* ---- the shapes ---- */

typedef struct shape {
  int64_t heads_q, heads_kv, n_q, n_kv, d;
  txattn_mask mask;
  int64_t window_left, window_right;
  int sixteen; /* 16-bit tensors where the kernel takes them */
} shape;

/* n_kv a little below and above common tile sizes (64..512 keys), each mask, grouped heads; d a
   multiple of 16 so that every row of o is a whole number of 64-byte lines. */
static const shape shapes[] = {
    {1, 1, 1, 1, 16, TXATTN_MASK_NONE, 0, 0, 0},
    {1, 1, 17, 17, 64, TXATTN_MASK_CAUSAL, 0, 0, 0},
    {2, 1, 8, 193, 32, TXATTN_MASK_NONE, 0, 0, 0},
    {1, 1, 4, 333, 16, TXATTN_MASK_NONE, 0, 0, 0},
    {1, 1, 33, 333, 32, TXATTN_MASK_WINDOW, 40, 3, 0},
    {1, 1, 3, 513, 16, TXATTN_MASK_CAUSAL, 0, 0, 0},
    {2, 2, 9, 130, 32, TXATTN_MASK_CAUSAL, 0, 0, 1},
};

/* The element type of tensor i (q, k, v, o) on a shape: f32 where the kernel takes it, else one of
   its 16-bit types; on a 16-bit shape, f16 or bf16 where it takes them. The host gives a kernel
   only the types it declares (a descriptor without dtypes: f32 only). */
static txattn_dtype pick_type(const txattn_kernel_desc *k, int i, int sixteen) {
  unsigned takes = TXATTN_KERNEL_DESC_HAS(k, dtypes) ? k->dtypes[i] : 0;
  if (takes == 0) takes = TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32);
  if (!sixteen && (takes & TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32))) return TXATTN_DTYPE_F32;
  if (takes & TXATTN_DTYPE_BIT(TXATTN_DTYPE_F16)) return TXATTN_DTYPE_F16;
  if (takes & TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16)) return TXATTN_DTYPE_BF16;
  return TXATTN_DTYPE_F32;
}

static void describe_shape(const txattn_problem *p, char *buf, size_t size) {
  snprintf(buf, size,
           "n_q %" PRId64 " n_kv %" PRId64 " d %" PRId64 " heads %" PRId64 "/%" PRId64
           " %s %s/%s/%s/%s",
           p->n_q, p->n_kv, p->d_qk, p->heads_q, p->heads_kv, txattn_mask_name(p->mask),
           txattn_dtype_name(p->q_type), txattn_dtype_name(p->k_type), txattn_dtype_name(p->v_type),
           txattn_dtype_name(p->o_type));
}

static double load_elem(const void *base, txattn_dtype t, size_t i) {
  if (t == TXATTN_DTYPE_F32) return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  return t == TXATTN_DTYPE_F16 ? txh_f16_to_f32(h) : txh_bf16_to_f32(h);
}

static void store_elem(void *base, txattn_dtype t, size_t i, float x) {
  if (t == TXATTN_DTYPE_F32)
    ((float *)base)[i] = x;
  else
    ((uint16_t *)base)[i] = t == TXATTN_DTYPE_F16 ? txh_f32_to_f16(x) : txh_f32_to_bf16(x);
}

static void fill(guarded *g, txattn_dtype t, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    store_elem(g->data, t, i, (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0));
  }
}

typedef struct scan_run {
  const txattn_kernel_desc *k;
  txattn_problem p; /* resolved */
  char shape[160];
  int n_threads;
  int64_t tunables[TXATTN_MAX_TUNABLES];
  size_t ws_size;
  int check;   /* a check request: structured answers (scan_protocol.h), o's tail of canaries */
  int compare; /* against the reference (always in a scan) */
} scan_run;

/* The tunables the host would give this run, or 0 when the host would refuse them (the plan fails
   there with its own message: no fault of a kind the scanner looks for). */
static int set_tunables(scan_run *r) {
  const txattn_kernel_desc *k = r->k;
  if (k->n_tunables == 0) return 1;
  txattn_machine m = {sizeof m, MACHINE_L1D, MACHINE_L2, MACHINE_L3, SCAN_THREADS};
  say("at default_tunables() of %s on %s", k->name, r->shape);
  k->default_tunables(&r->p, &m, r->tunables);
  for (size_t i = 0; i < k->n_tunables; i++)
    if (!txattn__tunable_value_ok(&k->tunables[i], r->tunables[i])) return 0;
  if (!TXATTN_KERNEL_DESC_HAS(k, fit_tunables) || k->fit_tunables == NULL) return 1;
  int64_t given[TXATTN_MAX_TUNABLES];
  memcpy(given, r->tunables, k->n_tunables * sizeof *given);
  say("at fit_tunables() of %s on %s", k->name, r->shape);
  k->fit_tunables(&r->p, r->tunables);
  for (size_t i = 0; i < k->n_tunables; i++)
    if (!txattn__tunable_value_ok(&k->tunables[i], r->tunables[i]) || r->tunables[i] > given[i])
      return 0;
  return 1;
}

/* The largest |o - ref| over the output (*bad: a non-finite value where the reference is finite). */
static double max_diff(const scan_run *r, const void *o, const void *ref, int *bad) {
  size_t n = (size_t)(r->p.batch * r->p.heads_q * r->p.n_q * r->p.d_v);
  double worst = 0;
  *bad = 0;
  for (size_t i = 0; i < n && !*bad; i++) {
    double want = load_elem(ref, r->p.o_type, i), got = load_elem(o, r->p.o_type, i);
    if (!isfinite(want)) continue;
    *bad = !isfinite(got);
    if (fabs(got - want) > worst) worst = fabs(got - want);
  }
  return *bad ? NAN : worst;
}

static void contiguous(txattn_layout *l, const txattn_problem *p, int64_t heads, int64_t rows,
                       int64_t d) {
  (void)p;
  *l = (txattn_layout){heads * rows * d, rows * d, d};
}

/* The modifiers' inputs of r->p, in m (freed by the caller): standard ALiBi slopes, sink logits in
   -1..1, each sequence's keys (the b-th of batch gets (b + 1) / batch of n_kv) and a boolean mask
   tensor of documents of 61 keys (block-diagonal causal, broadcast over heads; an additive one is a
   single 0). 0 if out of memory. */
static int modifiers(const scan_run *r, txattn_tensors *t, void **m) {
  const txattn_problem *p = &r->p;
  float *f = malloc((size_t)(2 * p->heads_q) * sizeof *f);
  int64_t *lens = malloc((size_t)p->batch * sizeof *lens);
  unsigned char *mask = p->mask_tensor ? calloc((size_t)(p->n_q * p->n_kv) + 4, 1) : NULL;
  m[0] = f, m[1] = lens, m[2] = mask;
  if (!f || !lens || (p->mask_tensor && !mask)) return 0;
  if (p->alibi) txattn_alibi_slopes(p->heads_q, 8.0f, f);
  for (int64_t h = 0; h < p->heads_q; h++) f[p->heads_q + h] = (float)(h % 7) / 3.0f - 1.0f;
  for (int64_t b = 0; b < p->batch; b++) lens[b] = p->n_kv * (b + 1) / p->batch;
  t->alibi_slopes = p->alibi ? f : NULL;
  t->sinks = p->sinks ? f + p->heads_q : NULL;
  t->kv_lens = p->ragged ? lens : NULL;
  t->mask = mask;
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL) {
    for (int64_t i = 0, shift = p->n_kv - p->n_q; i < p->n_q; i++)
      for (int64_t j = 0; j <= i + shift && j < p->n_kv; j++)
        mask[i * p->n_kv + j] = j / 61 == (i + shift) / 61;
    t->mask_layout = (txattn_mask_layout){0, 0, p->n_kv, 1};
  }
  return 1;
}

/* Runs r's kernel once on inputs of its own: 1 done (a scan's "ok" so far), 0 after saying a
   fault (or, a check, its last line). */
static int run_body(scan_run *r) {
  const txattn_kernel_desc *k = r->k;
  const txattn_problem *p = &r->p;
  size_t nq = (size_t)(p->batch * p->heads_q * p->n_q * p->d_qk),
         nk = (size_t)(p->batch * p->heads_kv * p->n_kv * p->d_qk);
  size_t nv = (size_t)(p->batch * p->heads_kv * p->n_kv * p->d_v),
         no = (size_t)(p->batch * p->heads_q * p->n_q * p->d_v);
  guarded q, kk, v, o, ws;
  memset(&ws, 0, sizeof ws);
  void *mods[3] = {NULL, NULL, NULL};
  txattn_tensors t = TXATTN_TENSORS_INIT;
  int ok = guarded_new(&q, nq * txattn_dtype_size(p->q_type), 0) &&
           guarded_new(&kk, nk * txattn_dtype_size(p->k_type), 0) &&
           guarded_new(&v, nv * txattn_dtype_size(p->v_type), 0) &&
           guarded_new(&o, no * txattn_dtype_size(p->o_type), r->check ? 4096 : 0) &&
           (r->ws_size == 0 || guarded_new(&ws, r->ws_size, 0)) && modifiers(r, &t, mods);
  float *lse = p->lse ? malloc((size_t)(p->batch * p->heads_q * p->n_q) * sizeof *lse) : NULL;
  void *ref = r->compare ? malloc(no * txattn_dtype_size(p->o_type)) : NULL;
  if (!ok || (r->compare && ref == NULL) || (p->lse && lse == NULL)) {
    say("declined out of memory while scanning");
    exit(0);
  }
  fill(&q, p->q_type, nq, 1);
  fill(&kk, p->k_type, nk, 2);
  fill(&v, p->v_type, nv, 3);
  mprotect(q.map, q.map_len - page, PROT_READ);
  mprotect(kk.map, kk.map_len - page, PROT_READ);
  mprotect(v.map, v.map_len - page, PROT_READ);
  t.q_data = q.data;
  t.k_data = kk.data;
  t.v_data = v.data;
  t.o_data = o.data;
  t.lse = lse;
  contiguous(&t.q_layout, p, p->heads_q, p->n_q, p->d_qk);
  contiguous(&t.k_layout, p, p->heads_kv, p->n_kv, p->d_qk);
  contiguous(&t.v_layout, p, p->heads_kv, p->n_kv, p->d_v);
  contiguous(&t.o_layout, p, p->heads_q, p->n_q, p->d_v);
  txattn_tensors tr = t;
  tr.o_data = ref;
  double bound = -1;
  if (r->compare &&
      (txattn_reference(p, &tr) != TXATTN_OK || txattn_error_bound(p, &tr, &bound) != TXATTN_OK)) {
    say("declined the reference failed on %s", r->shape); /* a bug of ours, not the plugin's */
    exit(0);
  }

  txattn_kernel_call call = {
      sizeof call, p, &t, ws.data, r->ws_size, r->n_threads, k->n_tunables ? r->tunables : NULL};
  snprintf(fault.past_o, sizeof fault.past_o, "bad wrote past o in run() of %s on %s\n", k->name,
           r->shape);
  snprintf(fault.past_ws, sizeof fault.past_ws,
           "bad wrote past its workspace (%zu bytes) in run() of %s on %s\n", r->ws_size, k->name,
           r->shape);
  snprintf(fault.into_in, sizeof fault.into_in, "bad wrote into its input in run() of %s on %s\n",
           k->name, r->shape);
  fault.o = &o;
  fault.ws = r->ws_size ? &ws : NULL;
  fault.in[0] = &q;
  fault.in[1] = &kk;
  fault.in[2] = &v;
  say("at run() of %s on %s", k->name, r->shape);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  txattn_status st = k->run(&call);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  memset(&fault, 0, sizeof fault);

  const char *side;
  size_t before, after;
  int verdict = 0, bad = 0;
  double err = r->compare && st == TXATTN_OK ? max_diff(r, o.data, ref, &bad) : -1;
  if (!canaries_ok(&o, &side, &before, &after)) {
    if (r->check)
      say("outside %zu %zu", after, before);
    else
      say("bad wrote %s o in run() of %s on %s", side, k->name, r->shape);
  } else if (r->ws_size && !canaries_ok(&ws, &side, &before, &after)) {
    say("bad wrote %s its workspace (%zu bytes) in run() of %s on %s", side, r->ws_size, k->name,
        r->shape);
  } else if (st != TXATTN_OK) {
    verdict = !r->check; /* a scan leaves failures to the plan: the loader says them */
    if (r->check) say("failed %d the kernel returned %s", (int)st, txattn_status_name(st));
  } else if (bad || err > bound) {
    char why[400];
    snprintf(why, sizeof why,
             bad ? "kernel %s returned NaN or Inf on %s where the reference is finite"
                 : "kernel %s on %s off by %.3g > bound %.3g",
             k->name, r->shape, err, bound);
    if (r->check)
      say("inexact %a %a %a %s", secs, err, bound, why);
    else
      say("bad wrong result: %s", why);
  } else {
    verdict = 1;
    if (r->check) say("ran %a %a %a", secs, err, bound);
  }
  free(ref);
  free(lse);
  for (int i = 0; i < 3; i++) free(mods[i]);
  guarded_free(&q);
  guarded_free(&kk);
  guarded_free(&v);
  guarded_free(&o);
  guarded_free(&ws);
  return verdict;
}

/* r->p (given, resolved here) and the kernel's tunables (r->tunables set unless `defaults`): the
   run's shape, workspace and threads; 0 when the kernel does not take it. */
static int prepare(scan_run *r, int defaults) {
  const txattn_kernel_desc *k = r->k;
  const char *why = NULL;
  if (txattn_problem_resolve(&r->p, &r->p) != TXATTN_OK) return 0;
  describe_shape(&r->p, r->shape, sizeof r->shape);
  say("at applicable() of %s on %s", k->name, r->shape);
  if (!txattn__desc_applicable(k, &r->p, &why) || (defaults && !set_tunables(r))) return 0;
  /* the host runs a kernel without TXATTN_KERNEL_RAGGED one sequence at a time: the longest here */
  if (r->p.ragged && !(k->flags & TXATTN_KERNEL_RAGGED)) r->p.ragged = 0;
  r->n_threads = (k->flags & TXATTN_KERNEL_THREADED) ? r->n_threads : 1;
  say("at workspace_size() of %s on %s", k->name, r->shape);
  r->ws_size = k->workspace_size(&r->p, r->n_threads, k->n_tunables ? r->tunables : NULL);
  return r->ws_size <= MAX_BUFFER;
}

/* Runs one kernel on one scan shape: 1 done (or not applicable), 0 after reporting a fault. */
static int run_one(scan_run *r, const shape *s) {
  const txattn_kernel_desc *k = r->k;
  txattn_problem *in = &r->p;
  in->batch = 1;
  in->heads_q = s->heads_q;
  in->heads_kv = s->heads_kv;
  in->n_q = s->n_q;
  in->n_kv = s->n_kv;
  in->d_qk = in->d_v = s->d;
  in->mask = s->mask;
  in->window_left = s->window_left;
  in->window_right = s->window_right;
  txattn_dtype *types[4] = {&in->q_type, &in->k_type, &in->v_type, &in->o_type};
  int same_as_f32 = 1;
  for (int i = 0; i < 4; i++) {
    *types[i] = pick_type(k, i, s->sixteen);
    same_as_f32 &= *types[i] == pick_type(k, i, 0);
  }
  if (s->sixteen && same_as_f32) return 1; /* no other types: the other shapes cover them */
  r->n_threads = SCAN_THREADS;
  r->compare = 1;
  return !prepare(r, 1) || run_body(r);
}

/* A check request (the usage above): kernel argv[0] of d on the problem of the fields that
   follow, its tunables the defaults but for those named. */
static int check(const txattn_plugin_desc *d, int argc, char **argv) {
  scan_run r = {.p = TXATTN_PROBLEM_INIT, .check = 1};
  for (size_t i = 0; i < d->n_kernels; i++)
    if (strcmp(d->kernels[i]->name, argv[0]) == 0) r.k = d->kernels[i];
  if (r.k == NULL) {
    say("declined the plugin has no kernel %s", argv[0]);
    return 0;
  }
  r.n_threads = atoi(argv[1]);
  r.compare = atoi(argv[2]);
  txattn_problem *p = &r.p;
  for (int a = 3; a < argc; a++) {
    char *eq = strchr(argv[a], '=');
    if (!eq) continue;
    *eq = '\0';
    long long v = strtoll(eq + 1, NULL, 10);
    double f = strtod(eq + 1, NULL);
    (void)v, (void)f;
#define SET_INT(x)                                                                                 \
  if (strcmp(argv[a], #x) == 0) p->x = v;
#define SET_FLOAT(x)                                                                               \
  if (strcmp(argv[a], #x) == 0) p->x = (float)f;
    TXATTN_SCAN_PROBLEM_FIELDS(SET_INT, SET_FLOAT)
#undef SET_INT
#undef SET_FLOAT
    *eq = '=';
  }
  if (!prepare(&r, 1)) {
    say("declined %s does not take %s", r.k->name, r.shape);
    return 0;
  }
  for (int a = 3; a < argc; a++) /* tunable.NAME=VALUE, checked as the host checks them */
    for (size_t i = 0; i < r.k->n_tunables && strncmp(argv[a], "tunable.", 8) == 0; i++) {
      size_t len = strlen(r.k->tunables[i].name);
      if (strncmp(argv[a] + 8, r.k->tunables[i].name, len) != 0 || argv[a][8 + len] != '=')
        continue;
      r.tunables[i] = strtoll(argv[a] + 9 + len, NULL, 10);
      if (!txattn__tunable_value_ok(&r.k->tunables[i], r.tunables[i])) {
        say("declined %s: %s outside its declaration", r.k->name, argv[a] + 8);
        return 0;
      }
    }
  r.ws_size = r.k->workspace_size(&r.p, r.n_threads, r.k->n_tunables ? r.tunables : NULL);
  if (r.ws_size > MAX_BUFFER) {
    say("declined a workspace of %zu bytes", r.ws_size);
    return 0;
  }
  run_body(&r);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc >= 7 && strcmp(argv[3], "check") == 0)) {
    fprintf(stderr, "usage: txattn-scan ISA_MASK PLUGIN_FILE [check ...] (run by libtxattn)\n");
    return 2;
  }
  /* a process group of its own (scan_spawn.c) takes it out of the terminal's job control: it ends
     with the caller instead, whatever its plugin does */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  say("%s", TXATTN_SCAN_READY);
  page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned isa_mask = (unsigned)strtoul(argv[1], NULL, 16);
  catch_faults();

  say("at loading (its constructors)");
  void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    say("declined dlopen failed: %s", e ? e : "(no dlerror text)");
    return 0;
  }
  void *sym = dlsym(h, TXATTN_PLUGIN_ENTRY_SYMBOL);
  if (sym == NULL) {
    say("declined exports no %s", TXATTN_PLUGIN_ENTRY_SYMBOL);
    return 0;
  }
  txattn_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry);
  say("at %s()", TXATTN_PLUGIN_ENTRY_SYMBOL);
  const txattn_plugin_desc *d = entry(TXATTN_PLUGIN_ABI_VERSION);
  char why[512];
  if (d == NULL || !txattn__plugin_desc_ok(d, why, sizeof why)) {
    say("declined %s", d == NULL ? "the entry returned NULL" : why);
    return 0;
  }
  if (argc > 3) return check(d, argc - 4, argv + 4);
  size_t runs = 0;
  for (size_t i = 0; i < d->n_kernels; i++) {
    const txattn_kernel_desc *k = d->kernels[i];
    if (!(isa_mask & (1u << k->isa))) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      scan_run r = {.k = k, .p = TXATTN_PROBLEM_INIT};
      if (!run_one(&r, &shapes[s])) return 0;
      runs++;
    }
  }
  say("ok %zu", runs);
  return 0;
}
