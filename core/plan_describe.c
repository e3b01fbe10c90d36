/* SPDX-License-Identifier: MIT */
/* txattn_plan_describe: a plan in one line, e.g.
 *   tiled.avx2 block_q=64 block_k=256 threads=2 | b=1 hq=8 hkv=8 nq=4096 nkv=4096 d=64/64
 * mask=causal scale=0.125 (one line; wrapped here). Window sides print as numbers or "inf"; a
 * serving call adds "lse" and "ragged" (or "ragged(per sequence)": the host runs each sequence),
 * a modified one "softcap=C", "alibi", "sinks" and "sink_keys=K", one with a mask tensor
 * "mask_tensor=bool" or "mask_tensor=<its type>" (additive). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "error.h"
#include "plan.h"

typedef struct out {
  char *buf;
  size_t size;
  int len; /* what snprintf would have written so far; -1 after an encoding error */
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  if (o->len < 0) return;
  size_t at = (size_t)o->len < o->size ? (size_t)o->len : o->size;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf ? o->buf + at : NULL, o->buf ? o->size - at : 0, fmt, ap);
  va_end(ap);
  o->len = n < 0 ? -1 : o->len + n;
}

static void put_side(out *o, int64_t w) {
  if (w == TXATTN_UNBOUNDED)
    put(o, "inf");
  else
    put(o, "%" PRId64, w);
}

static void put_mask(out *o, const txattn_problem *p) {
  put(o, " mask=%s", txattn_mask_name(p->mask));
  if (p->mask != TXATTN_MASK_WINDOW) return;
  put(o, "(");
  put_side(o, p->window_left);
  put(o, ",");
  put_side(o, p->window_right);
  put(o, ")");
}

int txattn_plan_describe(const txattn_plan *plan, char *buf, size_t size) {
  if (plan == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_plan_describe: plan is NULL");
    return -1;
  }
  out o = {size ? buf : NULL, size, 0};
  const txattn_kernel_desc *d = plan->kernel->desc;
  const txattn_problem *p = &plan->problem;
  put(&o, "%s", d->name);
  for (size_t i = 0; i < d->n_tunables; i++)
    put(&o, " %s=%" PRId64, d->tunables[i].name, plan->tunables[i]);
  put(&o,
      " threads=%d | b=%" PRId64 " hq=%" PRId64 " hkv=%" PRId64 " nq=%" PRId64 " nkv=%" PRId64
      " d=%" PRId64 "/%" PRId64,
      plan->n_threads, p->batch, p->heads_q, p->heads_kv, p->n_q, p->n_kv, p->d_qk, p->d_v);
  put_mask(&o, p);
  put(&o, " scale=%g", (double)p->scale);
  if (p->lse) put(&o, " lse");
  if (p->ragged) put(&o, plan->per_sequence ? " ragged(per sequence)" : " ragged");
  if (p->softcap > 0.0f) put(&o, " softcap=%g", (double)p->softcap);
  if (p->alibi) put(&o, " alibi");
  if (p->sinks) put(&o, " sinks");
  if (p->sink_keys > 0) put(&o, " sink_keys=%" PRId64, p->sink_keys);
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL) put(&o, " mask_tensor=bool");
  if (p->mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE)
    put(&o, " mask_tensor=%s", txattn_dtype_name(p->mask_type));
  return o.len;
}
