/* SPDX-License-Identifier: MIT */
/* Large arrays for benchmarks: the tensors (buffers.c) and the read-bandwidth arrays (roofline). */
#ifndef TXTUNE_COMMON_BIG_ALLOC_H
#define TXTUNE_COMMON_BIG_ALLOC_H

#include <stddef.h>

/* bytes (free() them), 64-byte aligned; from 2 MiB on, 2 MiB aligned and in 2 MiB pages where the
   kernel grants them (madvise), as a server allocates its K/V pool: then neither a contiguous cache
   nor a shuffled page pool costs a page walk per 4 KiB read, and the read bandwidth measured
   beside them is that of the same kind of pages. NULL if it cannot (or bytes is near SIZE_MAX). */
void *tx_alloc_big(size_t bytes);

#endif
