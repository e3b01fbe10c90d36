/* SPDX-License-Identifier: MIT */
/* txtune profile: is a candidate exact on its class? Each (class, r, kernel, tunables) is run once
   on a small shape of the class and compared with txattn_reference (fp64). The inputs and the
   reference output of each (class, r) are made once and shared by its candidates. A kernel that
   hangs or prints on a check is left out of the rest of the profile. At every timed point, each
   candidate's timed calls are compared with the reference on sampled rows (prof_rows), whose
   inputs change and whose output is poisoned before each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_isolate.h"
#include "txattn/plugin.h"
#include "buffers.h"
#include "verify.h"

#define CHECK_SEED UINT64_C(0x70726f66)

typedef struct check_entry {
  size_t cls, kernel;
  int64_t r, values[PROF_MAX_TUNABLES];
  size_t n_tun;
  int verdict; /* 1 exact, 0 not, -1 cannot run */
  prof_fault fault;
  double err;
  char why[256];
} check_entry;

/* The small shape of a (class, r): its inputs and reference output, or why they could not be made.
 */
typedef struct check_shape {
  size_t cls;
  int64_t r;
  int ok;
  tx_buffers b;
  char why[256];
} check_shape;

/* A kernel left out of the rest of the profile: it hung or printed on a check. */
#define MAX_BANNED 32
typedef struct banned_kernel {
  char name[64];
  prof_fault fault;
  char why[256];
} banned_kernel;

struct prof_checks {
  check_entry *e;
  size_t n, cap;
  check_shape *s;
  size_t n_s, cap_s;
  prof_isolation *iso; /* NULL: checks run in this process */
  double timeout_s;
  int timeout_cut; /* by the budget's end */
  banned_kernel banned[MAX_BANNED];
  size_t n_banned;
};

prof_checks *prof_checks_new(void) {
  prof_checks *c = calloc(1, sizeof(prof_checks));
  if (c) c->timeout_s = PROF_CHECK_TIMEOUT_S;
  return c;
}

void prof_checks_timeout(prof_checks *c, double timeout_s, int cut) {
  c->timeout_s = timeout_s;
  c->timeout_cut = cut;
}

static const banned_kernel *banned(const prof_checks *c, const char *name) {
  for (size_t i = 0; i < c->n_banned; i++)
    if (strcmp(c->banned[i].name, name) == 0) return &c->banned[i];
  return NULL;
}

/* A kernel that hung or printed is left out from now on: it would cost every later check its
   timeout, or print through the profile's own output when timed; so is one that crashed at a
   timed point (timed): its larger points would each cost a new check process; and one refused at
   a timed point for cheating (exact on its first call only, or faster than the machine): no
   measurement of it can be believed. */
static void ban(prof_checks *c, const char *name, prof_fault fault, const char *why, int timed) {
  if ((fault != PROF_FAULT_HUNG && fault != PROF_FAULT_PRINTS && fault != PROF_FAULT_LATER &&
       fault != PROF_FAULT_TOO_FAST && !(timed && fault == PROF_FAULT_CRASHED)) ||
      banned(c, name) || c->n_banned == MAX_BANNED)
    return;
  banned_kernel *b = &c->banned[c->n_banned++];
  snprintf(b->name, sizeof b->name, "%s", name);
  b->fault = fault;
  snprintf(b->why, sizeof b->why, "%s", why);
}

void prof_checks_isolate(prof_checks *c, prof_isolation *iso) {
  c->iso = iso;
}

void prof_checks_free(prof_checks *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_s; i++) tx_buffers_free(&c->s[i].b);
  free(c->s);
  free(c->e);
  free(c);
}

/* Grows *v (of *cap elements of `size` bytes) to hold n + 1; 0 when out of memory. */
static int grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 1;
  size_t want = *cap ? 2 * *cap : 64;
  void *g = realloc(*v, want * size);
  if (!g) return 0;
  *v = g;
  *cap = want;
  return 1;
}

static check_shape *shape_of(prof_checks *c, size_t cls, const txattn_problem *p) {
  int64_t r = p->mask == TXATTN_MASK_WINDOW ? p->window_left : 0;
  for (size_t i = 0; i < c->n_s; i++)
    if (c->s[i].cls == cls && c->s[i].r == r) return &c->s[i];
  if (!grow((void **)&c->s, &c->cap_s, c->n_s, sizeof *c->s)) return NULL;
  check_shape *sh = &c->s[c->n_s++];
  memset(sh, 0, sizeof *sh);
  sh->cls = cls;
  sh->r = r;
  if (tx_buffers_alloc(&sh->b, p, TX_LAYOUT_CONTIGUOUS, 1, sh->why, sizeof sh->why) != 0) return sh;
  if (p->ragged) { /* its class's lengths, and NaN past them: a kernel that reads there fails */
    int64_t *lens = malloc((size_t)p->batch * sizeof *lens);
    int bad = !lens;
    if (bad) snprintf(sh->why, sizeof sh->why, "out of memory");
    if (lens) prof_ragged_lens(p->n_kv, p->batch, lens);
    bad = bad || tx_buffers_serving(&sh->b, 0, lens, (size_t)p->batch, sh->why, sizeof sh->why);
    free(lens);
    if (bad) return sh;
  }
  tx_buffers_fill(&sh->b, CHECK_SEED, 1.0f);
  if (p->ragged) tx_buffers_fill_padding(&sh->b, NAN);
  txattn_status s = tx_buffers_reference(&sh->b);
  sh->ok = s == TXATTN_OK;
  if (!sh->ok)
    snprintf(sh->why, sizeof sh->why, "the reference failed: %s: %s", txattn_status_name(s),
             txattn_last_error());
  return sh;
}

static check_entry *find(const prof_checks *c, size_t cls, int64_t r, const prof_cand *cand) {
  for (size_t i = 0; i < c->n; i++) {
    check_entry *e = &c->e[i];
    if (e->cls == cls && e->r == r && e->kernel == cand->kernel && e->n_tun == cand->n_tun &&
        memcmp(e->values, cand->tun_values, cand->n_tun * sizeof(int64_t)) == 0)
      return e;
  }
  return NULL;
}

#define GUARD_BYTES 4096 /* on each side of a check's output */
#define GUARD_BYTE  0xA5

static size_t elem_size(txattn_dtype t) {
  return t == TXATTN_DTYPE_F32 ? 4 : 2;
}

/* How far from the output a write reached into the guard zone g (before it when `before`, else
   after it); 0 when the zone is untouched. */
static size_t guard_touched(const unsigned char *g, int before) {
  size_t reach = 0;
  for (size_t k = 0; k < GUARD_BYTES; k++)
    if (g[k] != GUARD_BYTE) {
      size_t dist = before ? GUARD_BYTES - k : k + 1;
      if (dist > reach) reach = dist;
    }
  return reach;
}

static void run_check(txattn_context *ctx, check_shape *sh, const prof_cand *cand, check_entry *e) {
  txattn_plan *plan = NULL;
  e->verdict = -1;
  e->err = NAN;
  snprintf(e->why, sizeof e->why, "%s", sh->why);
  if (!sh->ok) return;
  tx_buffers *b = &sh->b;
  txattn_status s = txattn_plan_create_tuned(ctx, &b->p, cand->name, cand->tun_names,
                                             cand->tun_values, cand->n_tun, &plan);
  /* the output between two guard zones: a kernel that writes outside it fails */
  size_t bytes = b->o_len * elem_size(b->p.o_type);
  unsigned char *mem = s == TXATTN_OK ? malloc(bytes + 2 * GUARD_BYTES) : NULL;
  if (s == TXATTN_OK && !mem) s = TXATTN_E_NOMEM;
  if (s == TXATTN_OK) {
    void *o = mem + GUARD_BYTES;
    txattn_tensors t = b->t;
    t.o_data = o;
    memset(mem, GUARD_BYTE, GUARD_BYTES);
    memset(mem + GUARD_BYTES + bytes, GUARD_BYTE, GUARD_BYTES);
    tx_fill_value(o, b->p.o_type, b->o_len, TX_POISON);
    s = txattn_plan_execute(plan, &t);
    size_t before = guard_touched(mem, 1), after = guard_touched(mem + GUARD_BYTES + bytes, 0);
    if (before || after) {
      e->verdict = 0;
      e->fault = PROF_FAULT_OVERRUN;
      snprintf(e->why, sizeof e->why,
               "wrote outside its output: up to %zu bytes past the end of o, %zu before its start",
               after, before);
    } else if (s == TXATTN_OK) {
      tx_verdict v;
      tx_verify(b, o, b->o_ref, NULL, &v);
      e->verdict = tx_verdict_pass(&v);
      e->err = v.scaled_error; /* the relative error, as the table counts it (verify.h) */
      tx_verdict_explain(&v, e->why, sizeof e->why);
    } else {
      e->verdict = 0;
      snprintf(e->why, sizeof e->why, "the kernel failed: %s: %s", txattn_status_name(s),
               txattn_last_error());
    }
  }
  free(mem);
  txattn_plan_free(plan);
}

/* A new entry for cand in (cls, r), NULL when out of memory. */
static check_entry *add_entry(prof_checks *c, size_t cls, int64_t r, const prof_cand *cand) {
  if (!grow((void **)&c->e, &c->cap, c->n, sizeof *c->e)) return NULL;
  check_entry *e = &c->e[c->n++];
  memset(e, 0, sizeof *e);
  e->cls = cls;
  e->r = r;
  e->kernel = cand->kernel;
  e->n_tun = cand->n_tun;
  memcpy(e->values, cand->tun_values, cand->n_tun * sizeof(int64_t));
  return e;
}

int prof_check_fault(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *small,
                     const prof_cand *cand, double *err, prof_fault *fault, char *why,
                     size_t why_size, int *fresh) {
  int64_t r = small->mask == TXATTN_MASK_WINDOW ? small->window_left : 0;
  check_entry *e = find(c, cls, r, cand);
  *fresh = e == NULL;
  if (!e) {
    if (!(e = add_entry(c, cls, r, cand))) return -1;
    const banned_kernel *b = banned(c, cand->name);
    if (b) {
      e->verdict = 0;
      e->fault = b->fault;
      e->err = NAN;
      snprintf(e->why, sizeof e->why, "left out of the rest of the profile: it %s",
               b->fault == PROF_FAULT_HUNG      ? "hung on an earlier check or timed point"
               : b->fault == PROF_FAULT_CRASHED ? "crashed at a timed point"
               : b->fault == PROF_FAULT_LATER
                   ? "was exact on its first call at a timed point and not on a later one"
               : b->fault == PROF_FAULT_TOO_FAST
                   ? "was timed faster than this machine can compute, at a timed point"
                   : "printed to stdout on an earlier check or timed point");
    } else {
      e->verdict = c->iso
                       ? prof_isolated_check(c->iso, c->timeout_s, txattn_context_threads(ctx), cls,
                                             small, cand, &e->err, &e->fault, e->why, sizeof e->why)
                       : -2;
      if (e->verdict == -2) { /* in this process */
        check_shape *sh = shape_of(c, cls, small);
        if (!sh) {
          c->n--;
          return -1;
        }
        run_check(ctx, sh, cand, e);
        if (e->fault == PROF_FAULT_NONE && e->verdict == 0) e->fault = PROF_FAULT_INEXACT;
      }
      if (e->fault == PROF_FAULT_HUNG && c->timeout_cut) {
        e->verdict = -1;
        e->fault = PROF_FAULT_NONE;
        snprintf(e->why, sizeof e->why, "no answer on its check before the budget's end");
      }
      ban(c, cand->name, e->fault, e->why, 0);
    }
  }
  *err = e->err;
  if (fault) *fault = e->fault;
  snprintf(why, why_size, "%s", e->why);
  return e->verdict;
}

int prof_trial_run(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *p,
                   const prof_cand *cand, double timeout_s, prof_fault *fault, char *why,
                   size_t why_size) {
  *fault = PROF_FAULT_NONE;
  if (banned(c, cand->name)) { /* since its check: the rest of its series */
    *fault = banned(c, cand->name)->fault;
    snprintf(why, why_size, "%s", banned(c, cand->name)->why);
    return -2;
  }
  if (!c->iso) return 1;
  int v = prof_isolated_run(c->iso, timeout_s, txattn_context_threads(ctx), cls, p, cand, fault,
                            why, why_size);
  if (v != 0) return 1; /* ran, failed there (the timing says so) or no child: timed here */
  if (*fault == PROF_FAULT_HUNG && c->timeout_cut) { /* the budget's end, no hang */
    snprintf(why, why_size, "no answer at a timed point before the budget's end");
    *fault = PROF_FAULT_NONE;
    return -1;
  }
  ban(c, cand->name, *fault, why, 1);
  return 0;
}

void prof_check_ban(prof_checks *c, const char *kernel, prof_fault fault, const char *why) {
  ban(c, kernel, fault, why, 1);
}

void prof_check_mark_inexact(prof_checks *c, size_t cls, const txattn_problem *small,
                             const prof_cand *cand, double err, const char *why) {
  int64_t r = small->mask == TXATTN_MASK_WINDOW ? small->window_left : 0;
  check_entry *e = find(c, cls, r, cand);
  if (!e && !(e = add_entry(c, cls, r, cand))) return;
  e->verdict = 0;
  e->fault = PROF_FAULT_INEXACT;
  e->err = err;
  snprintf(e->why, sizeof e->why, "%s", why);
}

/* ---- sampled rows of a timed point ---- */

#define MAX_ROWS 32

struct prof_rows {
  txattn_problem p;
  int n;
  int64_t b[MAX_ROWS], h[MAX_ROWS], i[MAX_ROWS], lo[MAX_ROWS], hi[MAX_ROWS];
  /* the rows' queries as the point had them (n rows of d_qk values); their other values are the
     negation (exact in every type) */
  float *q;
  int turned;    /* the queries in the tensors now are the negated ones */
  float *ref[2]; /* per value of the queries: n rows of d_v values, as o's type holds them */
  double bound;
};

/* The contiguous layout of a tensor of `heads` heads of `rows` rows of `dim` values. */
static txattn_layout contiguous(int64_t heads, int64_t rows, int64_t dim) {
  return (txattn_layout){heads * rows * dim, rows * dim, dim};
}

/* The largest finite |v| of rows lo..hi of head (b, hk) of V. */
static double max_abs_v_rows(const txattn_problem *p, const txattn_tensors *t, int64_t b,
                             int64_t hk, int64_t lo, int64_t hi) {
  txattn_layout l = contiguous(p->heads_kv, p->n_kv, p->d_v);
  double m = 0;
  for (int64_t j = lo; j < hi; j++)
    for (int64_t x = 0; x < p->d_v; x++) {
      double a = fabs((double)tx_elem_at(t->v_data, p->v_type, &l, b, hk, j, x));
      if (isfinite(a) && a > m) m = a;
    }
  return m;
}

/* Sequence b's keys: its kv_len in a ragged point, else n_kv. */
static int64_t keys_of(const txattn_problem *p, const txattn_tensors *t, int64_t b) {
  return p->ragged && t->kv_lens ? t->kv_lens[b] : p->n_kv;
}

/* The largest finite |v| of the point's V (of each sequence's keys). */
static double max_abs_v(const txattn_problem *p, const txattn_tensors *t) {
  double m = 0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t hk = 0; hk < p->heads_kv; hk++)
      m = fmax(m, max_abs_v_rows(p, t, b, hk, 0, keys_of(p, t, b)));
  return m;
}

/* Row k: row i of head h in batch b, spread over the point: the first row, the last, and the
   others at a stride prime to the rows (the boundaries of no tile in particular). */
static void pick_row(const txattn_problem *p, int k, int n, int64_t *b, int64_t *h, int64_t *i) {
  int64_t heads = p->batch * p->heads_q, rows = p->n_q;
  int64_t at = k == 0 ? 0 : k == n - 1 ? heads * rows - 1 : (int64_t)k * 7919 % (heads * rows);
  *b = at / rows / p->heads_q;
  *h = at / rows % p->heads_q;
  *i = k == 0 ? 0 : k == n - 1 ? rows - 1 : (k * 4001 + at) % rows;
}

/* Writes the sampled rows' queries into t: the point's (sign 1) or their negation (-1). */
static void set_queries(const prof_rows *r, const txattn_tensors *t, float sign) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_qk);
  for (int k = 0; k < r->n; k++)
    for (int64_t x = 0; x < p->d_qk; x++)
      tx_elem_put((void *)t->q_data, p->q_type, &l, r->b[k], r->h[k], r->i[k], x,
                  sign * r->q[(size_t)k * (size_t)p->d_qk + (size_t)x]);
}

/* The reference of sampled row k as the queries in t are now, into ref (d_v values as o's type
   holds them), and its bound over max|V| of its keys into *ratio (kept if larger); o is a row of
   scratch. Returns the reference's status. */
static txattn_status reference_row(const prof_rows *r, const txattn_tensors *t, int k, float *ref,
                                   void *o, double *ratio) {
  const txattn_problem *p = &r->p;
  const int64_t b = r->b[k], h = r->h[k], i = r->i[k], hk = h / (p->heads_q / p->heads_kv);
  if (r->hi[k] <= r->lo[k]) { /* no key: exact zeros */
    for (int64_t x = 0; x < p->d_v; x++) ref[x] = 0.0f;
    return TXATTN_OK;
  }
  /* one query row seeing keys lo..hi-1, as the last row of a window problem of hi keys */
  txattn_problem one = *p;
  one.ragged = one.lse = 0;
  one.batch = one.heads_q = one.heads_kv = one.n_q = 1;
  one.n_kv = r->hi[k];
  one.mask = TXATTN_MASK_WINDOW;
  one.window_left = r->hi[k] - 1 - r->lo[k];
  one.window_right = 0;
  txattn_tensors ot = TXATTN_TENSORS_INIT;
  ot.q_data = (const char *)t->q_data +
              elem_size(p->q_type) * (size_t)(((b * p->heads_q + h) * p->n_q + i) * p->d_qk);
  ot.k_data = (const char *)t->k_data +
              elem_size(p->k_type) * (size_t)((b * p->heads_kv + hk) * p->n_kv * p->d_qk);
  ot.v_data = (const char *)t->v_data +
              elem_size(p->v_type) * (size_t)((b * p->heads_kv + hk) * p->n_kv * p->d_v);
  ot.o_data = o;
  double bound = 0;
  txattn_status s = txattn_reference(&one, &ot);
  if (s == TXATTN_OK) s = txattn_error_bound(&one, &ot, &bound);
  if (s != TXATTN_OK) return s;
  for (int64_t x = 0; x < p->d_v; x++) ref[x] = tx_elem_get(o, p->o_type, (size_t)x);
  double v = max_abs_v_rows(p, t, b, hk, r->lo[k], r->hi[k]);
  if (v > 0 && bound / v > *ratio) *ratio = bound / v;
  return TXATTN_OK;
}

prof_rows *prof_rows_new(const txattn_problem *p, const txattn_tensors *t, int rows, char *why,
                         size_t why_size) {
  prof_rows *r = calloc(1, sizeof *r);
  if (rows > MAX_ROWS) rows = MAX_ROWS;
  size_t n_ref = (size_t)(rows > 0 ? rows : 0) * (size_t)p->d_v;
  void *o = malloc((size_t)p->d_v * 4);
  if (!r || rows < 1 || !o || !(r->ref[0] = malloc(2 * n_ref * sizeof(float))) ||
      !(r->q = malloc((size_t)rows * (size_t)p->d_qk * sizeof(float)))) {
    snprintf(why, why_size, "out of memory");
    free(o);
    prof_rows_free(r);
    return NULL;
  }
  r->ref[1] = r->ref[0] + n_ref;
  r->p = *p;
  r->n = rows;
  const txattn_layout ql = contiguous(p->heads_q, p->n_q, p->d_qk);
  for (int k = 0; k < rows; k++) {
    pick_row(p, k, rows, &r->b[k], &r->h[k], &r->i[k]);
    txattn_problem seq = *p; /* a ragged point's sequence as a problem of its own keys */
    seq.n_kv = keys_of(p, t, r->b[k]);
    seq.ragged = 0;
    txattn_visible_range(&seq, r->i[k], &r->lo[k], &r->hi[k]);
    for (int64_t x = 0; x < p->d_qk; x++)
      r->q[(size_t)k * (size_t)p->d_qk + (size_t)x] =
          tx_elem_at(t->q_data, p->q_type, &ql, r->b[k], r->h[k], r->i[k], x);
  }
  double ratio = 0; /* the largest bound over max|V| of a row, of either queries */
  txattn_status s = TXATTN_OK;
  for (int v = 0; v < 2 && s == TXATTN_OK; v++) {
    set_queries(r, t, v ? -1.0f : 1.0f);
    for (int k = 0; k < rows && s == TXATTN_OK; k++)
      s = reference_row(r, t, k, r->ref[v] + (size_t)k * (size_t)p->d_v, o, &ratio);
  }
  set_queries(r, t, 1.0f);
  free(o);
  if (s != TXATTN_OK) {
    snprintf(why, why_size, "the reference of a sampled row failed: %s: %s", txattn_status_name(s),
             txattn_last_error());
    prof_rows_free(r);
    return NULL;
  }
  /* the bound holds the whole output to max|V| of the point (txattn.h), not of one row's keys */
  r->bound = ratio * max_abs_v(p, t);
  return r;
}

void prof_rows_free(prof_rows *r) {
  if (!r) return;
  free(r->ref[0]);
  free(r->q);
  free(r);
}

void prof_rows_turn(prof_rows *r, const txattn_tensors *t) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_v);
  r->turned = !r->turned;
  set_queries(r, t, r->turned ? -1.0f : 1.0f);
  for (int k = 0; k < r->n; k++)
    for (int64_t x = 0; x < p->d_v; x++)
      tx_elem_put(t->o_data, p->o_type, &l, r->b[k], r->h[k], r->i[k], x, TX_POISON);
}

int prof_rows_check(const prof_rows *r, const txattn_tensors *t, double *err, char *why,
                    size_t why_size) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_v);
  double worst = 0;
  int bad_k = -1;
  int64_t bad_x = 0;
  why[0] = '\0';
  const float *refs = r->ref[r->turned];
  for (int k = 0; k < r->n; k++) {
    const float *ref = refs + (size_t)k * (size_t)p->d_v;
    for (int64_t x = 0; x < p->d_v; x++) {
      float o = tx_elem_at(t->o_data, p->o_type, &l, r->b[k], r->h[k], r->i[k], x);
      double d = fabs((double)o - (double)ref[x]);
      if (r->hi[k] <= r->lo[k] && !(o == 0.0f && !signbit(o))) d = NAN; /* must be +0.0 */
      if (!isfinite(ref[x]) && isnan(ref[x]) == isnan(o) && ref[x] == o) d = 0;
      if (!(d <= worst)) { /* NaN included */
        worst = d;
        bad_k = k;
        bad_x = x;
        if (isnan(d)) break;
      }
    }
    if (isnan(worst)) break;
  }
  *err = isnan(worst)   ? NAN
         : r->bound > 0 ? worst / r->bound * TXATTN_EXACT_TOLERANCE
                        : (worst > 0 ? INFINITY : 0);
  int pass = !isnan(worst) && worst <= r->bound;
  if (!pass && bad_k >= 0)
    snprintf(
        why, why_size,
        "%s at n = %lld (%d sampled rows), batch %lld head %lld row %lld column %lld: %.9g "
        "where the reference has %.9g",
        isnan(worst) ? "not finite or not +0" : "error above the bound", (long long)p->n_kv, r->n,
        (long long)r->b[bad_k], (long long)r->h[bad_k], (long long)r->i[bad_k], (long long)bad_x,
        (double)tx_elem_at(t->o_data, p->o_type, &l, r->b[bad_k], r->h[bad_k], r->i[bad_k], bad_x),
        (double)refs[(size_t)bad_k * (size_t)p->d_v + (size_t)bad_x]);
  return pass;
}
