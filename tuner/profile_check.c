/* txtune profile: is a candidate exact on its class? Each (class, r, kernel, tunables) is run once
   on a small shape of the class and compared with txattn_reference (fp64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "tensors.h"
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

struct prof_checks {
  check_entry *e;
  size_t n, cap;
};

prof_checks *prof_checks_new(void) {
  return calloc(1, sizeof(prof_checks));
}

void prof_checks_free(prof_checks *c) {
  if (c) free(c->e);
  free(c);
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

static void run_check(txattn_context *ctx, const txattn_problem *p, const prof_cand *cand,
                      check_entry *e) {
  tx_buffers b;
  txattn_plan *plan = NULL;
  e->verdict = -1;
  e->err = NAN;
  if (tx_buffers_alloc(&b, p, TX_LAYOUT_CONTIGUOUS, 1, e->why, sizeof e->why) != 0) return;
  tx_buffers_fill(&b, CHECK_SEED, 1.0f);
  txattn_status s = txattn_plan_create_tuned(ctx, p, cand->name, cand->tun_names, cand->tun_values,
                                             cand->n_tun, &plan);
  if (s == TXATTN_OK && txattn_reference(p, &b.t_ref) == TXATTN_OK) {
    tx_fill_value(b.o, b.o_len, POISON);
    s = txattn_plan_execute(plan, &b.t);
    if (s == TXATTN_OK) {
      tx_verdict v;
      tx_verify(&b, b.o, b.o_ref, NULL, &v);
      e->verdict = tx_verdict_pass(&v);
      e->err = v.rel_error; /* NaN when the output was not finite */
      tx_verdict_explain(&v, e->why, sizeof e->why);
    } else {
      e->verdict = 0;
      snprintf(e->why, sizeof e->why, "the kernel failed: %s: %s", txattn_status_name(s),
               txattn_last_error());
    }
  }
  txattn_plan_free(plan);
  tx_buffers_free(&b);
}

int prof_check(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *small,
               const prof_cand *cand, double *err, char *why, size_t why_size, int *fresh) {
  int64_t r = small->mask == TXATTN_MASK_WINDOW ? small->window_left : 0;
  check_entry *e = find(c, cls, r, cand);
  *fresh = e == NULL;
  if (!e) {
    if (c->n == c->cap) {
      size_t cap = c->cap ? 2 * c->cap : 64;
      check_entry *grown = realloc(c->e, cap * sizeof *grown);
      if (!grown) return -1;
      c->e = grown;
      c->cap = cap;
    }
    e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->cls = cls;
    e->r = r;
    e->kernel = cand->kernel;
    e->n_tun = cand->n_tun;
    memcpy(e->values, cand->tun_values, cand->n_tun * sizeof(int64_t));
    run_check(ctx, small, cand, e);
  }
  *err = e->err;
  snprintf(why, why_size, "%s", e->why);
  return e->verdict;
}
