/* SPDX-License-Identifier: MIT */
/* Internal: validation of what a plugin hands us, before anything in it is called. */
#ifndef TXATTN_CORE_PLUGIN_CHECK_H
#define TXATTN_CORE_PLUGIN_CHECK_H

#include <stddef.h>

#include "txattn/plugin.h"

#define TXATTN_MAX_KERNELS_PER_PLUGIN 1024
#define TXATTN_MAX_TUNABLES           64
/* The longest plugin version string: the dispatch table's limit on its texts (MAX_TEXT in
   table/table_model.c), so that every plugin that loads can be written into a table. */
#define TXATTN_MAX_PLUGIN_VERSION 63

/* 1 if every field of d (and of its kernels and tunables) is well-formed; else 0 and why says which
   field is wrong. Kernel names must match [a-z0-9_.-]{1,63} and contain a '.'; plugin and tunable
   names must match [a-z0-9_.-]{1,63}; names are unique within the plugin. The plugin's version
   is 1..TXATTN_MAX_PLUGIN_VERSION printable ASCII characters (safe to print and to write into a
   table). */
int txattn__plugin_desc_ok(const txattn_plugin_desc *d, char *why, size_t size);
/* 1 if v is an allowed value of t. */
int txattn__tunable_value_ok(const txattn_tunable *t, int64_t v);
/* Whether a kernel with these flags runs the resolved problem r one sequence at a time, the host
   splitting it: a ragged batch without TXATTN_KERNEL_RAGGED, packed rows without
   TXATTN_KERNEL_PACKED. */
static inline int txattn__per_sequence(const txattn_problem *r, unsigned flags) {
  return (r->ragged && !(flags & TXATTN_KERNEL_RAGGED)) ||
         (r->packed && !(flags & TXATTN_KERNEL_PACKED));
}
/* The types d takes for tensor 0..3 (q, k, v, o): a set of TXATTN_DTYPE_BIT, f32 for a kernel that
   declares none. */
unsigned txattn__desc_dtypes(const txattn_kernel_desc *d, int tensor);
/* The host's one gate before a kernel sees the resolved problem r (loader.h:
   txattn__kernel_applicable, which the plugin scanner shares): 1, or 0 with *why. */
int txattn__desc_applicable(const txattn_kernel_desc *d, const txattn_problem *r, const char **why);

#endif
