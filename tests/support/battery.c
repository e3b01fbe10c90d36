/* SPDX-License-Identifier: MIT */
#include "battery.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "elements.h"

uint64_t battery_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double battery_uniform(uint64_t *state) {
  return (double)(battery_random(state) >> 11) * 0x1p-52 - 1.0;
}

size_t battery_count(int64_t a, int64_t b, int64_t c, int64_t d) {
  return (size_t)(a * b * c * d);
}

void *battery_buffer(size_t n, txattn_dtype t, uint64_t *state, double amp) {
  void *x = malloc(n * elem_size(t) + 1);
  cr_assert(x != NULL);
  for (size_t i = 0; i < n; i++) elem_store(x, t, i, state ? amp * battery_uniform(state) : NAN);
  return x;
}

void battery_data_init(struct battery_data *d, const txattn_problem *p, uint64_t *state,
                       double amp) {
  const int64_t b = p->batch, hq = p->heads_q, hkv = p->heads_kv, nq = p->n_q, nkv = p->n_kv;
  const int64_t dd = p->d_qk;
  d->q = battery_buffer(battery_count(b, hq, nq, dd), p->q_type, state, amp);
  d->k = battery_buffer(battery_count(b, hkv, nkv, dd), p->q_type, state, amp);
  d->v = battery_buffer(battery_count(b, hkv, nkv, dd), p->q_type, state, 1.0);
  d->o = battery_buffer(battery_count(b, hq, nq, dd), p->q_type, NULL, 0);
  d->o_ref = battery_buffer(battery_count(b, hq, nq, dd), p->q_type, NULL, 0);
  d->lse = battery_buffer(battery_count(b, hq, nq, 1), TXATTN_DTYPE_F32, NULL, 0);
  d->lse_ref = battery_buffer(battery_count(b, hq, nq, 1), TXATTN_DTYPE_F32, NULL, 0);
  d->slopes = malloc((size_t)hq * sizeof *d->slopes);
  d->sinks = malloc((size_t)hq * sizeof *d->sinks);
  d->q_lens = malloc((size_t)b * sizeof *d->q_lens);
  d->kv_lens = malloc((size_t)b * sizeof *d->kv_lens);
  cr_assert(d->slopes && d->sinks && d->q_lens && d->kv_lens);
  for (int64_t i = 0; i < b; i++) {
    d->q_lens[i] = p->ragged ? nq - i % nq : nq;
    d->kv_lens[i] = p->ragged ? (nkv - 2 * i > 0 ? nkv - 2 * i : 0) : nkv;
  }
}

void battery_data_free(struct battery_data *d) {
  void *all[] = {d->q,       d->k,      d->v,     d->o,      d->o_ref,  d->lse,
                 d->lse_ref, d->slopes, d->sinks, d->q_lens, d->kv_lens};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

txattn_tensors battery_tensors(const struct battery_data *d, int ref) {
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q_data = d->q;
  t.k_data = d->k;
  t.v_data = d->v;
  t.o_data = ref ? d->o_ref : d->o;
  t.lse = ref ? d->lse_ref : d->lse;
  t.q_lens = d->q_lens;
  t.kv_lens = d->kv_lens;
  t.alibi_slopes = d->slopes;
  t.sinks = d->sinks;
  return t;
}

int battery_check_kernel(txattn_context *ctx, const txattn_kernel_info *k, unsigned need,
                         const struct battery_call *c, const char *name, double *worst) {
  const txattn_problem *p = c->p;
  txattn_plan *plan = NULL;
  txattn_status st = txattn_plan_create(ctx, p, k->name, &plan);
  if ((k->flags & need) != need) {
    cr_assert_eq(st, TXATTN_E_UNSUPPORTED, "%s: %s lacks a flag the problem needs but planned (%s)",
                 name, k->name, txattn_status_name(st));
    return -1;
  }
  if (st == TXATTN_E_UNSUPPORTED) return 0; /* declined the shape itself (e.g. dtypes) */
  cr_assert_eq(st, TXATTN_OK, "%s: %s: %s", name, k->name, txattn_last_error());
  const int64_t d_v = p->d_v ? p->d_v : p->d_qk; /* 0: d_qk */
  const size_t dv = (size_t)d_v, n = battery_count(p->batch, p->heads_q, p->n_q, d_v);
  for (size_t i = 0; i < n; i++) elem_store(c->t.o_data, p->o_type, i, NAN);
  cr_assert_eq(txattn_plan_execute(plan, &c->t), TXATTN_OK, "%s: %s: %s", name, k->name,
               txattn_last_error());
  txattn_plan_free(plan);
  double bound, lse_abs, lse_rel;
  cr_assert_eq(txattn_error_bound(p, &c->t, &bound), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_lse_error_bound(p, &c->t, &lse_abs, &lse_rel), TXATTN_OK, "%s",
               txattn_last_error());
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < c->q_lens[b]; i++) {
        const size_t row = (size_t)((b * p->heads_q + h) * p->n_q + i);
        const float lr = c->lse_ref[row], l = c->t.lse[row];
        for (size_t x = 0; x < dv; x++) {
          const double got = elem_load(c->t.o_data, p->o_type, row * dv + x);
          const double want = elem_load(c->o_ref, p->o_type, row * dv + x);
          if (lr == -INFINITY)
            cr_assert(got == 0.0 && !signbit(got), "%s: %s: a row that sees no key has o %g", name,
                      k->name, got);
          const double err = fabs(got - want);
          cr_assert(err <= bound,
                    "%s: %s: o(%lld, %lld, %lld, %lld) = %.9g, reference %.9g: %.3g past the "
                    "bound %.3g",
                    name, k->name, (long long)b, (long long)h, (long long)i, (long long)x, got,
                    want, err, bound);
          if (err / bound > *worst) *worst = err / bound;
        }
        if (lr == -INFINITY)
          cr_assert(l == -INFINITY, "%s: %s: lse of an empty row is %g", name, k->name, l);
        else
          cr_assert(fabs((double)l - lr) <= lse_abs + lse_rel * fabs(lr),
                    "%s: %s: lse (%lld, %lld, %lld) = %.9g, reference %.9g, bound %.3g", name,
                    k->name, (long long)b, (long long)h, (long long)i, l, lr,
                    lse_abs + lse_rel * fabs(lr));
      }
  return 1;
}
