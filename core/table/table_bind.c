/* SPDX-License-Identifier: MIT */
/* Binding a dispatch table to a context's kernels. A table's tunables are checked against what
 * the kernel declares here: a kernel whose build is unchanged declares what it declared when the
 * table was measured, so a mismatch means the table was edited or made elsewhere, and the whole
 * table is then treated as stale rather than trusted in part. A kernel of another build than the
 * table measured is left unbound (its candidates name no kernel, as if it were not loaded): its
 * tunables may differ and its times no longer hold. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "plugin_check.h"
#include "table_bind.h"
#include "table_model.h"

/* reg's kernel of that name, NULL if none; *other_build is set when it has one the table did not
   measure (unmeasured, may be NULL) and NULL is returned. */
static const txattn__kernel *kernel_named(const txattn__registry *reg, const char *name,
                                          const unsigned char *unmeasured, int *other_build) {
  *other_build = 0;
  for (size_t i = 0; i < reg->n_kernels; i++)
    if (strcmp(reg->kernels[i].desc->name, name) == 0) {
      *other_build = unmeasured != NULL && unmeasured[i];
      return *other_build ? NULL : &reg->kernels[i];
    }
  return NULL;
}

/* The value c gives for the kernel's tunable t, or 0 when c lacks it. */
static int value_of(const txattn__cand *c, const char *t, int64_t *v) {
  for (size_t i = 0; i < c->tun.n; i++)
    if (strcmp(c->tun.names[i], t) == 0) {
      *v = c->tun.values[i];
      return 1;
    }
  return 0;
}

/* 1 if c's tunables are exactly k's declared ones, each allowed; else why says which is not. */
static int cand_fits(const txattn__kernel *k, const txattn__cand *c, char *why, size_t size) {
  const txattn_kernel_desc *d = k->desc;
  if (c->tun.n != d->n_tunables) {
    snprintf(why, size, "%s has %zu tunables in the table, the kernel declares %zu", d->name,
             c->tun.n, d->n_tunables);
    return 0;
  }
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *t = &d->tunables[i];
    int64_t v;
    if (!value_of(c, t->name, &v)) {
      snprintf(why, size, "%s: the table lacks its tunable %s", d->name, t->name);
      return 0;
    }
    if (!txattn__tunable_value_ok(t, v)) {
      snprintf(why, size,
               "%s %s = %" PRId64 " is not allowed (the kernel declares %" PRId64 "..%" PRId64
               " in steps of %" PRId64 ")",
               d->name, t->name, v, t->min, t->max, t->multiple_of);
      return 0;
    }
  }
  return 1;
}

int txattn__table_fits(const txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured, char *why, size_t size) {
  char inner[384], cls[96];
  int other_build;
  for (size_t i = 0; i < t->n_classes; i++) {
    const txattn__class *c = &t->classes[i];
    for (size_t j = 0; j < c->n_points; j++)
      for (size_t k = 0; k < c->points[j].n_cands; k++) {
        const txattn__cand *x = &c->points[j].cands[k];
        const txattn__kernel *kk = kernel_named(reg, x->kernel, unmeasured, &other_build);
        if (kk == NULL || cand_fits(kk, x, inner, sizeof inner)) continue;
        txattn__tm_class_text(&c->key, cls, sizeof cls);
        snprintf(why, size, "classes[%zu] (%s) n=%" PRId64 " r=%" PRId64 ": %s", i, cls,
                 c->points[j].n, c->points[j].r, inner);
        return 0;
      }
  }
  return 1;
}

static int bind_cand(const txattn__registry *reg, const unsigned char *unmeasured,
                     txattn__cand *x) {
  int other_build;
  x->k = kernel_named(reg, x->kernel, unmeasured, &other_build);
  x->other_build = (unsigned char)other_build;
  free(x->kvals);
  x->kvals = NULL;
  if (x->k == NULL || x->k->desc->n_tunables == 0) return 1;
  const txattn_kernel_desc *d = x->k->desc;
  if ((x->kvals = malloc(d->n_tunables * sizeof *x->kvals)) == NULL) return 0;
  for (size_t i = 0; i < d->n_tunables; i++) value_of(x, d->tunables[i].name, &x->kvals[i]);
  return 1;
}

int txattn__table_bind(txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured) {
  for (size_t i = 0; i < t->n_classes; i++) {
    txattn__class *c = &t->classes[i];
    for (size_t j = 0; j < c->n_points; j++)
      for (size_t k = 0; k < c->points[j].n_cands; k++)
        if (!bind_cand(reg, unmeasured, &c->points[j].cands[k])) return 0;
  }
  return 1;
}
