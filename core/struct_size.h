/* Internal: reading and writing the caller's public structs by their struct_size (the rule is in
 * txattn/txattn.h, "Public structs grow"). */
#ifndef TXATTN_CORE_STRUCT_SIZE_H
#define TXATTN_CORE_STRUCT_SIZE_H

#include <stddef.h>

#include "txattn/txattn.h"

/* Copies the caller's input struct `in` (of type `what`, whose struct_size sits at size_offset) into
   *copy, a struct of this header's size `cur`: the bytes the caller has, zeros for the fields it
   lacks, and struct_size = cur. struct_size 0 means `first`. E_INVALID naming `what` when
   struct_size cannot be a version of the struct or a field past `cur` is set. */
txattn_status txattn__struct_in(const char *what, const void *in, size_t size_offset, size_t first,
                                size_t cur, void *copy);
/* Writes `full` (this header's struct, `cur` bytes) to the caller's output struct `out` as far as
   out's struct_size reaches (0 or too small to be set: `first`), and sets out's struct_size to the
   bytes written. */
void txattn__struct_out(void *out, size_t size_offset, size_t first, const void *full, size_t cur);

#define TXATTN__STRUCT_IN(type, first, in, copy)                                                   \
  txattn__struct_in(#type, (in), offsetof(type, struct_size), (first), sizeof(type), (copy))
#define TXATTN__STRUCT_OUT(type, first, out, full)                                                 \
  txattn__struct_out((out), offsetof(type, struct_size), (first), (full), sizeof(type))

#endif
