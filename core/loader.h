/* SPDX-License-Identifier: MIT */
/* Internal: the plugins and kernels a context loaded, and the files it skipped. */
#ifndef TXATTN_CORE_LOADER_H
#define TXATTN_CORE_LOADER_H

#include <sys/types.h>

#include "machine/cpu.h"
#include "file_hash.h"
#include "txattn/plugin.h"

typedef struct txattn__plugin {
  void *handle;
  char *path;
  const txattn_plugin_desc *desc;
  dev_t dev; /* file identity, so that one file reached twice loads once */
  ino_t ino;
  char build[TXATTN_BUILD_ID_LEN]; /* "fnv1a64x4:..." of the file's bytes (txattn_kernel_info) */
  int shipped; /* came with this library (txattn__plugin_shipped); else third-party */
} txattn__plugin;

typedef struct txattn__kernel {
  const txattn_kernel_desc *desc;
  size_t plugin; /* index in txattn__registry.plugins */
  int usable;
  const char *why_unusable; /* "" when usable; points into the registry's isa state */
} txattn__kernel;

typedef struct txattn__rejected {
  char *path;
  char *reason;
} txattn__rejected;

/* Filled once by txattn__registry_load and immutable afterwards, so readers need no lock. */
typedef struct txattn__registry {
  txattn__plugin *plugins;
  size_t n_plugins, cap_plugins;
  txattn__kernel *kernels;
  size_t n_kernels, cap_kernels;
  txattn__rejected *rejected;
  size_t n_rejected, cap_rejected;
  char *search_path; /* the directories searched, for messages */
  char *own_dirs;    /* this library's own plugin directories (txattn__own_plugin_dirs) */
  txattn__isa_state isa;
} txattn__registry;

/* The plugin that holds kernel k of reg. */
static inline const txattn__plugin *txattn__registry_plugin(const txattn__registry *reg,
                                                            const txattn__kernel *k) {
  return &reg->plugins[k->plugin];
}

/* 1 if k takes the element types of the resolved problem r, writes lse if r asks for it
   (TXATTN_KERNEL_LSE; else "it does not write lse"), declares each score modifier r has
   (TXATTN_KERNEL_SOFTCAP ... SINK_KEYS; else "it does not compute ...") and its applicable() accepts r (r without
   ragged for a kernel without TXATTN_KERNEL_RAGGED, which runs one sequence at a time); else 0 and
   *why (never NULL then) says why; a paged r goes only to a kernel with TXATTN_KERNEL_PAGED. The
   host's one gate before a kernel sees a problem. */
int txattn__kernel_applicable(const txattn__kernel *k, const txattn_problem *r, const char **why);
/* The types k takes for tensor 0..3 (q, k, v, o): a set of TXATTN_DTYPE_BIT, f32 for a kernel that
   declares none. */
unsigned txattn__kernel_dtypes(const txattn__kernel *k, int tensor);

/* Loads every acceptable plugin of the path; skipped files and directories are recorded with a
   reason. Fails only when out of memory (reg is then still safe to free). */
txattn_status txattn__registry_load(txattn__registry *reg, const char *plugin_path);
void txattn__registry_free(txattn__registry *reg);

#endif
