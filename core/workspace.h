/* SPDX-License-Identifier: MIT */
/* Internal: reusable kernel workspaces for one plan. Many threads may execute one plan at once,
 * each needing its own workspace; a free list keeps one per concurrent caller, so after warm-up no
 * call allocates or touches fresh pages (docs/measurements.md). */
#ifndef TXATTN_CORE_WORKSPACE_H
#define TXATTN_CORE_WORKSPACE_H

#include <stddef.h>

typedef struct txattn__workspace_pool txattn__workspace_pool;

/* A pool of workspaces of size bytes (> 0); NULL when out of memory or size is absurd. */
txattn__workspace_pool *txattn__workspace_pool_create(size_t size);
/* A 64-byte aligned workspace: a free one, or a new one; NULL when out of memory. */
void *txattn__workspace_take(txattn__workspace_pool *pool);
void txattn__workspace_give(txattn__workspace_pool *pool, void *ws);
void txattn__workspace_pool_free(txattn__workspace_pool *pool);

#endif
