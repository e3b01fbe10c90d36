/* SPDX-License-Identifier: MIT */
/* Internal: reading and writing the caller's public structs by their struct_size (the rule is in
 * txattn/txattn.h, "Public structs grow"). */
#ifndef TXATTN_CORE_STRUCT_SIZE_H
#define TXATTN_CORE_STRUCT_SIZE_H

#include <stddef.h>

#include "txattn/table.h"
#include "txattn/txattn.h"

/* Every size a released header gave each public struct, the one struct_size 0 means first. A
   struct that grows keeps its old sizes here and adds its new one (TXATTN_*_SIZE_... in the public
   header); this header's own size is always taken and need not be listed. */
#define TXATTN__RELEASED_txattn_options TXATTN_OPTIONS_SIZE_0_2
#define TXATTN__RELEASED_txattn_problem                                                            \
  TXATTN_PROBLEM_SIZE_0_2, TXATTN_PROBLEM_SIZE_0_2_SERVING, TXATTN_PROBLEM_SIZE_0_2_MODIFIERS
#define TXATTN__RELEASED_txattn_tensors                                                            \
  TXATTN_TENSORS_SIZE_0_2, TXATTN_TENSORS_SIZE_0_2_SERVING, TXATTN_TENSORS_SIZE_0_2_MODIFIERS,     \
      TXATTN_TENSORS_SIZE_0_2_PAGED
#define TXATTN__RELEASED_txattn_kernel_info   TXATTN_KERNEL_INFO_SIZE_0_2
#define TXATTN__RELEASED_txattn_rejected_info TXATTN_REJECTED_INFO_SIZE_0_2
#define TXATTN__RELEASED_txattn_machine_info  TXATTN_MACHINE_INFO_SIZE_0_2
#define TXATTN__RELEASED_txattn_tunable_info  TXATTN_TUNABLE_INFO_SIZE_0_2
#define TXATTN__RELEASED_txattn_table_class                                                        \
  TXATTN_TABLE_CLASS_SIZE_0_2, TXATTN_TABLE_CLASS_SIZE_0_2_DTYPES
#define TXATTN__RELEASED_txattn_table_candidate TXATTN_TABLE_CANDIDATE_SIZE_0_2
#define TXATTN__RELEASED_txattn_table_point     TXATTN_TABLE_POINT_SIZE_0_2
#define TXATTN__RELEASED_txattn_table_region    TXATTN_TABLE_REGION_SIZE_0_2
#define TXATTN__RELEASED_txattn_table_exclusion                                                    \
  TXATTN_TABLE_EXCLUSION_SIZE_0_2, TXATTN_TABLE_EXCLUSION_SIZE_0_2_DTYPES
#define TXATTN__RELEASED_txattn_table_plugin     TXATTN_TABLE_PLUGIN_SIZE_0_2
#define TXATTN__RELEASED_txattn_table_header     TXATTN_TABLE_HEADER_SIZE_0_2
#define TXATTN__RELEASED_txattn_model_info       TXATTN_MODEL_INFO_SIZE_0_2_MODELS
#define TXATTN__RELEASED_txattn_model_layer_info TXATTN_MODEL_LAYER_INFO_SIZE_0_2_MODELS

/* The sizes a public struct takes: the released ones and this header's, `cur`, up to a few KiB
   more (a newer header's); struct_size sits at byte `at`. */
typedef struct txattn__struct_sizes {
  size_t at, cur, n_released;
  const size_t *released;
} txattn__struct_sizes;

/* Copies the caller's input struct `in` (of type `what`) into *copy, a struct of this header's
   size: the bytes the caller has, zeros for the fields it lacks, and struct_size = cur. E_INVALID
   naming `what` when struct_size is no size the struct has had, or a field past `cur` is set. */
txattn_status txattn__struct_in(const char *what, const void *in, const txattn__struct_sizes *s,
                                void *copy);
/* Writes `full` (this header's struct) to the caller's output struct `out` as far as out's
   struct_size reaches (0: released[0]), and sets out's struct_size to the bytes written. E_INVALID
   naming `what`, with out untouched, when struct_size is no size the struct has had. */
txattn_status txattn__struct_out(const char *what, void *out, const txattn__struct_sizes *s,
                                 const void *full);

#define TXATTN__STRUCT_SIZES_(type, ...)                                                           \
  (&(const txattn__struct_sizes){offsetof(type, struct_size), sizeof(type),                        \
                                 sizeof((const size_t[]){__VA_ARGS__}) / sizeof(size_t),           \
                                 (const size_t[]){__VA_ARGS__}})
#define TXATTN__STRUCT_SIZES(type) TXATTN__STRUCT_SIZES_(type, TXATTN__RELEASED_##type)
#define TXATTN__STRUCT_IN(type, in, copy)                                                          \
  txattn__struct_in(#type, (in), TXATTN__STRUCT_SIZES(type), (copy))
#define TXATTN__STRUCT_OUT(type, out, full)                                                        \
  txattn__struct_out(#type, (out), TXATTN__STRUCT_SIZES(type), (full))

#endif
