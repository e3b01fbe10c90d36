/* txtune profile: is a candidate exact on its class? Each (class, r, kernel, tunables) is run once
   on a small shape of the class and compared with txattn_reference (fp64). The inputs and the
   reference output of each (class, r) are made once and shared by its candidates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_isolate.h"
#include "buffers.h"
#include "verify.h"

#define CHECK_SEED UINT64_C(0x70726f66)
#define POISON     1.0e30f /* an output the kernel leaves unwritten must not pass */

typedef struct check_entry {
  size_t cls, kernel;
  int64_t r, values[PROF_MAX_TUNABLES];
  size_t n_tun;
  int verdict; /* 1 exact, 0 not, -1 cannot run */
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

struct prof_checks {
  check_entry *e;
  size_t n, cap;
  check_shape *s;
  size_t n_s, cap_s;
  prof_isolation *iso; /* NULL: checks run in this process */
};

prof_checks *prof_checks_new(void) {
  return calloc(1, sizeof(prof_checks));
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
  tx_buffers_fill(&sh->b, CHECK_SEED, 1.0f);
  txattn_status s = tx_buffers_reference(&sh->b);
  sh->ok = s == TXATTN_OK;
  if (!sh->ok)
    snprintf(sh->why, sizeof sh->why, "the reference failed: %s: %s", txattn_status_name(s),
             txattn_last_error());
  return sh;
}

static check_entry *find(prof_checks *c, size_t cls, int64_t r, const prof_cand *cand) {
  for (size_t i = 0; i < c->n; i++) {
    check_entry *e = &c->e[i];
    if (e->cls == cls && e->r == r && e->kernel == cand->kernel && e->n_tun == cand->n_tun &&
        memcmp(e->values, cand->tun_values, cand->n_tun * sizeof(int64_t)) == 0)
      return e;
  }
  return NULL;
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
  if (s == TXATTN_OK) {
    tx_fill_value(b->o, b->p.o_type, b->o_len, POISON);
    s = txattn_plan_execute(plan, &b->t);
    if (s == TXATTN_OK) {
      tx_verdict v;
      tx_verify(b, b->o, b->o_ref, NULL, &v);
      e->verdict = tx_verdict_pass(&v);
      e->err = v.scaled_error; /* the relative error, as the table counts it (verify.h) */
      tx_verdict_explain(&v, e->why, sizeof e->why);
    } else {
      e->verdict = 0;
      snprintf(e->why, sizeof e->why, "the kernel failed: %s: %s", txattn_status_name(s),
               txattn_last_error());
    }
  }
  txattn_plan_free(plan);
}

int prof_check(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *small,
               const prof_cand *cand, double *err, char *why, size_t why_size, int *fresh) {
  int64_t r = small->mask == TXATTN_MASK_WINDOW ? small->window_left : 0;
  check_entry *e = find(c, cls, r, cand);
  *fresh = e == NULL;
  if (!e) {
    if (!grow((void **)&c->e, &c->cap, c->n, sizeof *c->e)) return -1;
    e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->cls = cls;
    e->r = r;
    e->kernel = cand->kernel;
    e->n_tun = cand->n_tun;
    memcpy(e->values, cand->tun_values, cand->n_tun * sizeof(int64_t));
    e->verdict = c->iso ? prof_isolated_check(c->iso, txattn_context_threads(ctx), cls, small, cand,
                                              &e->err, e->why, sizeof e->why)
                        : -2;
    if (e->verdict == -2) { /* in this process */
      check_shape *sh = shape_of(c, cls, small);
      if (!sh) return -1;
      run_check(ctx, sh, cand, e);
    }
    c->n++;
  }
  *err = e->err;
  snprintf(why, why_size, "%s", e->why);
  return e->verdict;
}
