/* SPDX-License-Identifier: MIT */
/* The dispatcher's table lookup. A problem maps to a class (exact match on its key) and to
 * coordinates n (and r for windows) in it. The measured points around (n, r) are found in the
 * class's index: the two nearest measured n values (the same one when n was measured), and for
 * windows the two nearest measured r values, so 1, 2 or 4 points. Each kernel measured at every one
 * of them gets a time interpolated bilinearly in (log n, log r) from its fastest entry at each
 * point (log time too: times follow powers of n, so this is exact for a power law); the smallest
 * wins, with the tunables it had at the nearest of the points. When every surrounding point names
 * the same winner (its first candidate: the fastest, or at a tie the one the profiler chose among
 * near-equal times), that one wins: the problem lies in its region. Kernels that cannot run here or
 * decline the problem are skipped, so the next best is taken. Outside the measured range, or with a
 * surrounding point missing, there is no entry and the built-in estimate decides. The class of a
 * problem is this file's too, for the dispatcher and txattn_table_class_of alike. A ragged problem
 * follows its ragged class (times of one ragged call, at n = its capacity n_kv) where the table has
 * one, else the dense class of its capacity, as if every sequence were padded to it; a paged problem
 * its paged class (of any page size), else the contiguous class. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "loader.h"
#include "table_context.h"
#include "table_lookup.h"

/* The class key and coordinates of a resolved problem; 0 with the reason in why when no class
   shape describes it. */
static int class_of(const txattn_problem *p, int threads, txattn_table_class *cls, int64_t *n,
                    int64_t *rr, char *why, size_t size) {
  int decode = p->n_q == 1;
  if (!decode && p->n_q != p->n_kv)
    return txattn__why_not(why, size,
                           "n_q = %" PRId64 " differs from n_kv = %" PRId64
                           ": table classes are square (n_q = n_kv) or decode (n_q = 1)",
                           p->n_q, p->n_kv);
  txattn_table_window w = TXATTN_TABLE_WINDOW_NONE;
  *rr = 0;
  if (p->mask == TXATTN_MASK_WINDOW) {
    int bounded = p->window_left != TXATTN_UNBOUNDED && p->window_right != TXATTN_UNBOUNDED;
    if (bounded && p->window_left == p->window_right)
      w = TXATTN_TABLE_WINDOW_SYM;
    else if (bounded && p->window_right == 0)
      w = TXATTN_TABLE_WINDOW_LEFT;
    else
      return txattn__why_not(why, size,
                             "window (%" PRId64 ", %" PRId64
                             ") is neither sym (left = right) nor left "
                             "(right = 0) with bounded sides: no table class describes it",
                             p->window_left, p->window_right);
    *rr = p->window_left;
  }
  *cls = (txattn_table_class){.mask = p->mask,
                              .window = w,
                              .d_qk = p->d_qk,
                              .d_v = p->d_v,
                              .group = p->heads_q / p->heads_kv,
                              .threads = threads,
                              .decode = decode,
                              .batch = p->batch,
                              .heads_q = p->heads_q,
                              .q_type = p->q_type,
                              .k_type = p->k_type,
                              .v_type = p->v_type,
                              .o_type = p->o_type,
                              .ragged = p->ragged != 0,
                              .softcap = p->softcap > 0.0f,
                              .mask_tensor = (int)p->mask_tensor,
                              .page_size = p->page_size};
  /* a ragged problem's n is its capacity n_kv: the plan never sees the lengths, and a ragged
     class's points are measured with the longest length equal to n */
  *n = p->n_kv;
  return 1;
}

txattn_status txattn_table_class_of(const txattn_problem *p, int threads, txattn_table_class *cls,
                                    int64_t *n, int64_t *r) {
  TXATTN_RETURN_IF(!(p && cls && n && r), TXATTN_E_INVALID,
                   "txattn_table_class_of: an argument is NULL");
  TXATTN_RETURN_IF(threads < 1, TXATTN_E_INVALID, "txattn_table_class_of: threads = %d < 1",
                   threads);
  txattn_problem q = TXATTN_PROBLEM_INIT; /* every field resolved, ragged included */
  char why[256];
  TXATTN_FORWARD_IF_ERROR(txattn_problem_resolve(p, &q));
  TXATTN_RETURN_IF(!class_of(&q, threads, cls, n, r, why, sizeof why), TXATTN_E_UNSUPPORTED, "%s",
                   why);
  return txattn__ok();
}

/* Why a context without a usable table has no entry, in the few words a plan's reason has room for
   (txattn_context_table_state has the rest). The reason names the table's path whole or, past 200
   bytes, not at all: a path is never cut. */
static int no_table(const txattn__ctx_table *ct, char *why, size_t size) {
  if (ct != NULL && ct->status != TXATTN_TABLE_NONE)
    return txattn__why_not(why, size,
                           "the dispatch table is %s (txattn_context_table_state says why)",
                           ct->status == TXATTN_TABLE_STALE ? "stale" : "malformed");
  if (ct == NULL || !*ct->path) return txattn__why_not(why, size, "no dispatch table");
  if (strlen(ct->path) > 200)
    return txattn__why_not(why, size,
                           "no dispatch table at its path (txattn_context_table_path gives it)");
  return txattn__why_not(why, size, "no dispatch table at %s", ct->path);
}

/* v[*lo] <= x <= v[*hi] with *hi - *lo <= 1; 0 if x is outside v's range. */
static int bracket(const int64_t *v, size_t n, int64_t x, size_t *lo, size_t *hi) {
  if (n == 0 || x < v[0] || x > v[n - 1]) return 0;
  size_t a = 0, b = n - 1;
  while (b - a > 1) {
    size_t m = (a + b) / 2;
    if (v[m] <= x)
      a = m;
    else
      b = m;
  }
  if (v[a] == x) b = a;
  if (v[b] == x) a = b;
  *lo = a;
  *hi = b;
  return 1;
}

/* How far x lies from v[lo] towards v[hi] in log space. */
static double frac(const int64_t *v, size_t lo, size_t hi, int64_t x) {
  if (lo == hi) return 0;
  return log((double)x / (double)v[lo]) / log((double)v[hi] / (double)v[lo]);
}

typedef struct corner {
  const txattn__point *p;
  double w;
} corner;

typedef struct around {
  const txattn__class *c;
  char cls[96];
  size_t ni[2], ri[2];
  corner at[4];
  size_t n; /* corners */
  size_t nearest;
} around;

static int find_corners(around *a, int64_t n, int64_t r, char *why, size_t size) {
  const txattn__class *c = a->c;
  if (!bracket(c->ns, c->n_ns, n, &a->ni[0], &a->ni[1]))
    return txattn__why_not(
        why, size, "n = %" PRId64 " is outside the measured n %" PRId64 "..%" PRId64 " (class %s)",
        n, c->ns[0], c->ns[c->n_ns - 1], a->cls);
  if (!bracket(c->rs, c->n_rs, r, &a->ri[0], &a->ri[1]))
    return txattn__why_not(
        why, size, "r = %" PRId64 " is outside the measured r %" PRId64 "..%" PRId64 " (class %s)",
        r, c->rs[0], c->rs[c->n_rs - 1], a->cls);
  double wn = frac(c->ns, a->ni[0], a->ni[1], n), wr = frac(c->rs, a->ri[0], a->ri[1], r);
  a->n = 0;
  a->nearest = 0;
  for (size_t j = 0; j < (a->ri[0] == a->ri[1] ? 1u : 2u); j++)
    for (size_t i = 0; i < (a->ni[0] == a->ni[1] ? 1u : 2u); i++) {
      int32_t p = c->grid[a->ri[j] * c->n_ns + a->ni[i]];
      if (p < 0)
        return txattn__why_not(why, size,
                               "no point was measured at n = %" PRId64 ", r = %" PRId64
                               " next to this shape (class %s)",
                               c->ns[a->ni[i]], c->rs[a->ri[j]], a->cls);
      double w = (i ? wn : 1 - wn) * (j ? wr : 1 - wr);
      a->at[a->n] = (corner){&c->points[p], w};
      if (w > a->at[a->nearest].w) a->nearest = a->n;
      a->n++;
    }
  return 1;
}

static const txattn__cand *best_of(const txattn__point *p, const txattn__kernel *k) {
  for (size_t i = 0; i < p->n_cands; i++)
    if (p->cands[i].k == k) return &p->cands[i];
  return NULL;
}

typedef struct ranked {
  const txattn__kernel *k;
  double logt;
  int wins; /* the winner of a surrounding point */
} ranked;

/* Appends "name reason" to the skipped list, whole or not at all: where it would not leave room
   for "; ..." the list ends with that instead. */
static void note(char *buf, size_t size, const char *name, const char *reason) {
  static const char more[] = "; ...";
  size_t used = strlen(buf);
  if (used >= 3 && strcmp(buf + used - 3, "...") == 0) return; /* cut already */
  const char *sep = used ? "; " : "";
  if (used + strlen(sep) + strlen(name) + 1 + strlen(reason) + sizeof more <= size)
    snprintf(buf + used, size - used, "%s%s %s", sep, name, reason);
  else if (used + sizeof more <= size)
    snprintf(buf + used, size - used, "%s", used ? more : more + 2);
}

/* A kernel that may run r, or NULL with a note when it is the first of its name seen. */
static int viable(const txattn__point *p, size_t i, const txattn_problem *r, char *skipped,
                  size_t size, int noting) {
  const txattn__cand *x = &p->cands[i];
  for (size_t j = 0; j < i; j++) /* only a kernel's first (fastest) entry counts */
    if (p->cands[j].k == x->k && (x->k != NULL || strcmp(p->cands[j].kernel, x->kernel) == 0))
      return 0;
  const char *why = NULL;
  if (x->k == NULL) {
    if (noting)
      note(skipped, size, x->kernel,
           x->other_build ? "was measured in another build" : "is not loaded");
    return 0;
  }
  if (!x->k->usable) {
    if (noting) note(skipped, size, x->kernel, "cannot run here");
    return 0;
  }
  if (!txattn__kernel_applicable(x->k, r, &why)) {
    if (noting) note(skipped, size, x->kernel, "declines this problem");
    return 0;
  }
  return 1;
}

/* Whether k is the winner of a surrounding point: its first candidate whose kernel the table
   measured as it is here (the others follow fastest first, so when the profile's winner is gone
   or another build, the fastest of the rest takes its place). At a tie (txattn__point.tie) the
   winner is not the fastest: the profiler chose it among times within their noise. */
static int wins_around(const around *a, const txattn__kernel *k) {
  for (size_t i = 0; i < a->n; i++) {
    const txattn__point *p = a->at[i].p;
    size_t c = 0;
    while (c < p->n_cands && p->cands[c].k == NULL) c++;
    if (c < p->n_cands && p->cands[c].k == k) return 1;
  }
  return 0;
}

/* x ranks before y: a kernel that wins at a surrounding point before one that wins at none, then
   the shorter interpolated time. So where every point around names one kernel it stays (the
   profile's choice of a tie, or tiles of one kernel that differ from point to point, are kept
   rather than re-ranked by time), and between two winners the lookup chooses one of them: a kernel
   that won nowhere around (tiled_omp.avx2 on one thread, a few percent behind both) does not take
   the shape between them on interpolated times inside the noise. */
static int before(const ranked *x, const ranked *y) {
  if (y->k == NULL) return 1;
  if (x->wins != y->wins) return x->wins;
  return x->logt < y->logt;
}

static void rank(const around *a, const txattn_problem *r, ranked *best, ranked *second,
                 char *skipped, size_t size) {
  const txattn__point *p0 = a->at[0].p;
  for (size_t i = 0; i < p0->n_cands; i++) {
    if (!viable(p0, i, r, skipped, size, best->k == NULL)) continue;
    const txattn__kernel *k = p0->cands[i].k;
    double logt = 0;
    size_t c = 0;
    for (; c < a->n; c++) {
      const txattn__cand *y = best_of(a->at[c].p, k);
      if (y == NULL) break;
      logt += a->at[c].w * log(y->time_s);
    }
    if (c < a->n) continue; /* not measured at every surrounding point */
    ranked x = {k, logt, wins_around(a, k)};
    if (before(&x, best)) {
      *second = *best;
      *best = x;
    } else if (before(&x, second)) {
      *second = x;
    }
  }
}

/* "region n 1024..4096", "measured point n=1024", "interpolated between n=1024 and n=4096" */
static void where(const around *a, const ranked *best, char *buf, size_t size) {
  const txattn__class *c = a->c;
  int window = c->key.mask == TXATTN_MASK_WINDOW, same = best->k == a->at[0].p->cands[0].k;
  size_t region = a->at[0].p->region;
  for (size_t i = 1; i < a->n; i++) {
    same = same && txattn__tm_same_candidate(&a->at[i].p->cands[0], &a->at[0].p->cands[0]);
    if (a->at[i].p->region != region) region = (size_t)-1;
  }
  if (same && region != (size_t)-1) {
    const txattn__region *g = &c->regions[region];
    int n = snprintf(buf, size, "region n %" PRId64 "..%" PRId64, g->n_lo, g->n_hi);
    if (window && n > 0 && (size_t)n < size)
      snprintf(buf + n, size - (size_t)n, ", r %" PRId64 "..%" PRId64, g->r_lo, g->r_hi);
  } else if (a->n == 1) {
    snprintf(buf, size, "measured point n=%" PRId64, a->at[0].p->n);
  } else if (same) {
    snprintf(buf, size, "same winner at every measured point around it");
  } else if (!window || a->ri[0] == a->ri[1]) {
    snprintf(buf, size, "interpolated between n=%" PRId64 " and n=%" PRId64, c->ns[a->ni[0]],
             c->ns[a->ni[1]]);
  } else {
    snprintf(buf, size,
             "interpolated between n=%" PRId64 "..%" PRId64 " and r=%" PRId64 "..%" PRId64,
             c->ns[a->ni[0]], c->ns[a->ni[1]], c->rs[a->ri[0]], c->rs[a->ri[1]]);
  }
}

static void explain(const around *a, const ranked *best, const ranked *second, const char *skipped,
                    char *why, size_t size) {
  char place[128], t[32], runner[128] = ", no runner-up measured";
  where(a, best, place, sizeof place);
  txattn__fmt_time(exp(best->logt), t, sizeof t);
  if (second->k)
    snprintf(runner, sizeof runner, ", runner-up %s by %.2fx%s", second->k->desc->name,
             exp(second->logt - best->logt),
             second->logt < best->logt ? " (a tie within the measured noise)" : "");
  snprintf(why, size, "table: %s (class %s): %s ~%s%s%s%s%s", place, a->cls, best->k->desc->name, t,
           runner, *skipped ? " (skipped: " : "", skipped, *skipped ? ")" : "");
}

/* The class of t with key's key, NULL if none. */
static const txattn__class *find_class(const txattn_table *t, const txattn_table_class *key) {
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, key)) return &t->classes[i];
  return NULL;
}

/* The class of t the lookup follows for the resolved problem r on `threads` threads (a problem
   with a softcap or mask tensor but no class of them: the class without; a paged one without a
   paged class: the contiguous class; a ragged problem without a ragged class: the dense class of
   its capacity), described in cls, and r's
   coordinates in it; NULL, with why (after "no table entry: "), when there is none. */
static const txattn__class *lookup_class(const txattn_table *t, const txattn_problem *r,
                                         int threads, int64_t *n, int64_t *rr, char *cls,
                                         size_t cls_size, char *why, size_t size) {
  txattn_table_class key = TXATTN_TABLE_CLASS_INIT;
  char inner[256];
  if (!class_of(r, threads, &key, n, rr, inner, sizeof inner)) {
    txattn__why_not(why, size, "no table entry: %s", inner);
    return NULL;
  }
  const txattn__class *c = find_class(t, &key);
  if (c == NULL && (key.softcap || key.mask_tensor)) { /* no class of them: the plain one's */
    key.softcap = key.mask_tensor = 0;
    c = find_class(t, &key);
  }
  if (c == NULL && key.page_size) { /* no paged class: the contiguous one's */
    key.page_size = 0;
    c = find_class(t, &key);
  }
  txattn_table_class_describe(&key, cls, cls_size);
  if (c == NULL && key.ragged) { /* no ragged class: the dense class of the capacity */
    char ragged[96];
    snprintf(ragged, sizeof ragged, "%s", cls);
    key.ragged = 0;
    c = find_class(t, &key);
    txattn_table_class_describe(&key, cls, cls_size);
    if (c == NULL) {
      txattn__why_not(why, size, "no table entry: the table has no class %s nor %s", ragged, cls);
      return NULL;
    }
    size_t used = strlen(cls);
    snprintf(cls + used, cls_size - used, ", no ragged class: as if padded");
  }
  if (c == NULL) txattn__why_not(why, size, "no table entry: the table has no class %s", cls);
  return c;
}

void txattn__table_won_around(const txattn__ctx_table *ct, const txattn__registry *reg, int threads,
                              const txattn_problem *r, unsigned char *demoted) {
  if (!txattn__table_followed(ct)) return;
  int64_t n, rr;
  char cls[96], why[320];
  const txattn__class *c =
      lookup_class(ct->table, r, threads, &n, &rr, cls, sizeof cls, why, sizeof why);
  for (size_t i = 0; c != NULL && i < reg->n_kernels; i++) {
    if (!demoted[i]) continue;
    int64_t n_lo = INT64_MAX, n_hi = INT64_MIN, r_lo = INT64_MAX, r_hi = INT64_MIN;
    for (size_t j = 0; j < c->n_points; j++) {
      const txattn__point *p = &c->points[j];
      if (p->cands[0].k != &reg->kernels[i]) continue; /* not its winner */
      n_lo = p->n < n_lo ? p->n : n_lo;
      n_hi = p->n > n_hi ? p->n : n_hi;
      r_lo = p->r < r_lo ? p->r : r_lo;
      r_hi = p->r > r_hi ? p->r : r_hi;
    }
    if (n_lo <= n && n <= n_hi && r_lo <= rr && rr <= r_hi) demoted[i] = 0;
  }
}

int txattn__table_choose(const txattn__ctx_table *ct, int threads, const txattn_problem *r,
                         const txattn__kernel **k, const int64_t **tunables, char *why,
                         size_t size) {
  if (!txattn__table_followed(ct)) return no_table(ct, why, size);
  int64_t n, rr;
  char inner[256];
  around a = {0};
  a.c = lookup_class(ct->table, r, threads, &n, &rr, a.cls, sizeof a.cls, why, size);
  if (a.c == NULL) return 0;
  if (!find_corners(&a, n, rr, inner, sizeof inner))
    return txattn__why_not(why, size, "no table entry: %s", inner);
  ranked best = {NULL, 0, 0}, second = {NULL, 0, 0};
  char skipped[160] = "";
  rank(&a, r, &best, &second, skipped, sizeof skipped);
  if (best.k == NULL)
    return txattn__why_not(
        why, size,
        "no table entry: no kernel measured around this shape (class %s) can run it here%s%s",
        a.cls, *skipped ? ": " : "", skipped);
  *k = best.k;
  *tunables = best_of(a.at[a.nearest].p, best.k)->kvals;
  explain(&a, &best, &second, skipped, why, size);
  return 1;
}
