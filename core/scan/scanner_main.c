/* SPDX-License-Identifier: MIT */
/* txattn-scan: loads one plugin file in a process of its own and runs each of its kernels on a few
 * small shapes against txattn_reference, so that a plugin that crashes, hangs, exits, computes
 * wrongly or writes outside its buffers does so here and not in the program that would load it.
 *
 *   txattn-scan ISA_MASK PLUGIN_FILE
 *
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
  size_t map_len, len;
} guarded;

static size_t page;

/* len bytes, 64-byte aligned, ending at most 63 bytes before a guard page and after at least one
   page of canary bytes. 0 if the mapping failed. */
static int guarded_new(guarded *g, size_t len) {
  size_t body = (len + 63) / 64 * 64;
  size_t data_pages = (body + page - 1) / page + 1; /* one page of canary at least */
  memset(g, 0, sizeof *g);
  g->map_len = (data_pages + 1) * page;
  void *m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  g->map = m;
  g->guard = g->map + data_pages * page;
  g->data = g->guard - body;
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

/* 0 if a canary byte before or after the data changed; *where says which side. */
static int canaries_ok(const guarded *g, const char **where) {
  for (unsigned char *p = g->map; p < g->data; p++)
    if (*p != CANARY) return (*where = "before"), 0;
  for (unsigned char *p = g->data + g->len; p < g->guard; p++)
    if (*p != CANARY) return (*where = "past"), 0;
  return 1;
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

/* Compares o with the reference's; 0 after reporting a wrong result. */
static int compare(const scan_run *r, const txattn_tensors *t, const void *ref, double bound) {
  size_t n = (size_t)(r->p.heads_q * r->p.n_q * r->p.d_v);
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double want = load_elem(ref, r->p.o_type, i), got = load_elem(t->o_data, r->p.o_type, i);
    if (!isfinite(want)) continue;
    if (!isfinite(got)) {
      say("bad wrong result: kernel %s returned %s on %s where the reference is finite", r->k->name,
          isnan(got) ? "NaN" : "Inf", r->shape);
      return 0;
    }
    if (fabs(got - want) > worst) worst = fabs(got - want);
  }
  if (worst > bound) {
    say("bad wrong result: kernel %s on %s off by %.3g > bound %.3g", r->k->name, r->shape, worst,
        bound);
    return 0;
  }
  return 1;
}

/* Runs one kernel on one shape: 1 done (or not applicable), 0 after reporting a fault. */
static int run_one(scan_run *r, const shape *s) {
  const txattn_kernel_desc *k = r->k;
  txattn_problem in = TXATTN_PROBLEM_INIT;
  in.batch = 1;
  in.heads_q = s->heads_q;
  in.heads_kv = s->heads_kv;
  in.n_q = s->n_q;
  in.n_kv = s->n_kv;
  in.d_qk = in.d_v = s->d;
  in.mask = s->mask;
  in.window_left = s->window_left;
  in.window_right = s->window_right;
  txattn_dtype *types[4] = {&in.q_type, &in.k_type, &in.v_type, &in.o_type};
  int same_as_f32 = 1;
  for (int i = 0; i < 4; i++) {
    *types[i] = pick_type(k, i, s->sixteen);
    same_as_f32 &= *types[i] == pick_type(k, i, 0);
  }
  if (s->sixteen && same_as_f32) return 1; /* no other types: the other shapes cover them */
  if (txattn_problem_resolve(&in, &r->p) != TXATTN_OK) return 1;
  describe_shape(&r->p, r->shape, sizeof r->shape);
  const char *why = NULL;
  say("at applicable() of %s on %s", k->name, r->shape);
  if (!k->applicable(&r->p, &why)) return 1;
  if (!set_tunables(r)) return 1;
  r->n_threads = (k->flags & TXATTN_KERNEL_THREADED) ? SCAN_THREADS : 1;
  say("at workspace_size() of %s on %s", k->name, r->shape);
  r->ws_size = k->workspace_size(&r->p, r->n_threads, k->n_tunables ? r->tunables : NULL);
  if (r->ws_size > MAX_BUFFER) return 1;

  const txattn_problem *p = &r->p;
  size_t nq = (size_t)(p->heads_q * p->n_q * p->d_qk),
         nk = (size_t)(p->heads_kv * p->n_kv * p->d_qk);
  size_t nv = (size_t)(p->heads_kv * p->n_kv * p->d_v), no = (size_t)(p->heads_q * p->n_q * p->d_v);
  guarded q, kk, v, o, ws;
  memset(&ws, 0, sizeof ws);
  int ok = guarded_new(&q, nq * txattn_dtype_size(p->q_type)) &&
           guarded_new(&kk, nk * txattn_dtype_size(p->k_type)) &&
           guarded_new(&v, nv * txattn_dtype_size(p->v_type)) &&
           guarded_new(&o, no * txattn_dtype_size(p->o_type)) &&
           (r->ws_size == 0 || guarded_new(&ws, r->ws_size));
  void *ref = malloc(no * txattn_dtype_size(p->o_type));
  if (!ok || ref == NULL) {
    say("declined out of memory while scanning");
    exit(0);
  }
  fill(&q, p->q_type, nq, 1);
  fill(&kk, p->k_type, nk, 2);
  fill(&v, p->v_type, nv, 3);
  mprotect(q.map, q.map_len - page, PROT_READ);
  mprotect(kk.map, kk.map_len - page, PROT_READ);
  mprotect(v.map, v.map_len - page, PROT_READ);

  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q_data = q.data;
  t.k_data = kk.data;
  t.v_data = v.data;
  t.o_data = o.data;
  t.q_layout = (txattn_layout){p->heads_q * p->n_q * p->d_qk, p->n_q * p->d_qk, p->d_qk};
  t.k_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_qk, p->n_kv * p->d_qk, p->d_qk};
  t.v_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_v, p->n_kv * p->d_v, p->d_v};
  t.o_layout = (txattn_layout){p->heads_q * p->n_q * p->d_v, p->n_q * p->d_v, p->d_v};
  txattn_tensors tr = t;
  tr.o_data = ref;
  double bound = 0;
  int fine =
      txattn_reference(p, &tr) == TXATTN_OK && txattn_error_bound(p, &tr, &bound) == TXATTN_OK;
  if (!fine) {
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
  txattn_status st = k->run(&call);
  memset(&fault, 0, sizeof fault);

  const char *side;
  int verdict = 1;
  if (!canaries_ok(&o, &side)) {
    say("bad wrote %s o in run() of %s on %s", side, k->name, r->shape);
    verdict = 0;
  } else if (r->ws_size && !canaries_ok(&ws, &side)) {
    say("bad wrote %s its workspace (%zu bytes) in run() of %s on %s", side, r->ws_size, k->name,
        r->shape);
    verdict = 0;
  } else if (st == TXATTN_OK) {
    verdict = compare(r, &t, ref, bound);
  }
  free(ref);
  guarded_free(&q);
  guarded_free(&kk);
  guarded_free(&v);
  guarded_free(&o);
  guarded_free(&ws);
  return verdict;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: txattn-scan ISA_MASK PLUGIN_FILE (run by libtxattn)\n");
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
