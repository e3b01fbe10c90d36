/* SPDX-License-Identifier: MIT */
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_table.h"
#include "txattn/plugin.h"

int tx_kernel_find(const txattn_context *ctx, const char *name, size_t *index,
                   txattn_kernel_info *out) {
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    *out = (txattn_kernel_info)TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, out) == TXATTN_OK && strcmp(out->name, name) == 0) {
      if (index) *index = i;
      return 1;
    }
  }
  return 0;
}

int tx_kernels_select(const tx_cmd_spec *spec, const txattn_context *ctx, const tx_strlist *names,
                      tx_kernel_sel **out, size_t *n_out) {
  size_t n = names && names->n ? names->n : txattn_kernel_count(ctx);
  tx_kernel_sel *sel = calloc(n ? n : 1, sizeof *sel);
  if (!sel) return tx_args_usage_error(spec, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(names && names->n)) {
      sel[k].info = (txattn_kernel_info)TXATTN_KERNEL_INFO_INIT;
      if (txattn_kernel_get(ctx, i, &sel[k].info) == TXATTN_OK) k++;
      continue;
    }
    size_t j = 0; /* a name given twice is checked or timed once */
    while (j < k && strcmp(sel[j].info.name, names->items[i]) != 0) j++;
    if (j < k) continue;
    if (!tx_kernel_find(ctx, names->items[i], NULL, &sel[k].info)) {
      free(sel);
      return tx_args_usage_error(spec, "no kernel named '%s' ('txtune list' shows them)",
                                 names->items[i]);
    }
    sel[k++].requested = 1;
  }
  *out = sel;
  *n_out = k;
  return 0;
}

void tx_kernel_flags_text(unsigned flags, char *buf, size_t size) {
  size_t len = 0;
  if (size) buf[0] = '\0';
  for (unsigned bit = 0; bit < 32; bit++) {
    const char *name = txattn_kernel_flag_name(flags & (1u << bit));
    if (name != NULL) tx_appendf(buf, size, &len, "%s%s", len ? "," : "", name);
  }
  if (size && !*buf) snprintf(buf, size, "-");
}

int tx_kernel_declines_types(const txattn_context *ctx, const char *name, const txattn_problem *p,
                             char *why, size_t size) {
  const txattn_dtype t[4] = {p->q_type, p->k_type, p->v_type, p->o_type};
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  if (!tx_kernel_find(ctx, name, NULL, &info)) return 0;
  for (int i = 0; i < 4; i++)
    if (!(info.dtypes[i] & TXATTN_DTYPE_BIT(t[i]))) {
      snprintf(why, size, "it does not %s %s %c", i == 3 ? "make" : "take", txattn_dtype_name(t[i]),
               "qkvo"[i]);
      return 1;
    }
  return 0;
}
