/* SPDX-License-Identifier: MIT */
/* Choosing kernels by name for a subcommand: every usable one by default, or those --kernel names.
 */
#ifndef TXTUNE_KERNELS_H
#define TXTUNE_KERNELS_H

#include <stddef.h>

#include "args.h"
#include "txattn/txattn.h"

typedef struct tx_kernel_sel {
  txattn_kernel_info info;
  int requested; /* named by --kernel: being unusable is then an error, not a note */
} tx_kernel_sel;

/* Fills sel with every kernel of ctx (names == NULL or empty) or with the named ones, in the order
   given. Returns 0, or prints a usage error for an unknown name and returns TX_EXIT_USAGE. *out is
   freed by the caller with free(). */
int tx_kernels_select(const tx_cmd_spec *spec, const txattn_context *ctx, const tx_strlist *names,
                      tx_kernel_sel **out, size_t *n_out);
/* Kernel `name` of ctx: 1 with its info (and its index, if index is not NULL), else 0. */
int tx_kernel_find(const txattn_context *ctx, const char *name, size_t *index,
                   txattn_kernel_info *out);
/* Whether kernel `name` of ctx declines the element types of p, as its info says
   (txattn_kernel_info.dtypes): 1 with why ("it does not take f16 k"), else 0 (also for a kernel
   ctx does not have). */
int tx_kernel_declines_types(const txattn_context *ctx, const char *name, const txattn_problem *p,
                             char *why, size_t size);
/* "threaded,sparse,lse,ragged,softcap,alibi,sinks,sink_keys" (the flags set, in that order) or
   "-" */
void tx_kernel_flags_text(unsigned flags, char *buf, size_t size);

#endif
