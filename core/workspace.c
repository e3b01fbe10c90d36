/* SPDX-License-Identifier: MIT */
/* The workspace pool: a mutex-protected stack of 64-byte aligned blocks. The link lives in a
 * 64-byte header before each workspace, so giving one back never allocates.
 *
 * Blocks of HUGE_MIN bytes or more are 2 MiB aligned, whole 2 MiB pages, and advised to the
 * kernel as transparent huge pages (where the kernel offers them: /sys/kernel/mm/
 * transparent_hugepage/enabled "always" or "madvise"). Why: a tiled kernel keeps a packed K/V
 * block of up to half of L2 and its scores beside it, and on 4 KiB pages where those land in the
 * physically indexed L2 depends on which pages the allocator recycled, so the same plan's time
 * varied from process to process and within a profile; a huge page is contiguous, so the blocks'
 * cache sets are the same wherever the block lands, which removed most of that variation
 * (docs/measurements.md). The cost: a block takes whole 2 MiB pages (a workspace of 300 KiB,
 * 2 MiB), once per plan and thread. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE (Linux) */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "workspace.h"

#define ALIGN      64
#define HUGE_MIN   ((size_t)256 * 1024)
#define HUGE_ALIGN ((size_t)2 * 1024 * 1024)

typedef struct node {
  struct node *next;
} node;

struct txattn__workspace_pool {
  pthread_mutex_t lock;
  node *free_list;
  size_t block; /* header + workspace rounded up to ALIGN, or to HUGE_ALIGN from HUGE_MIN on */
  size_t align; /* ALIGN or HUGE_ALIGN */
};

txattn__workspace_pool *txattn__workspace_pool_create(size_t size) {
  if (size > SIZE_MAX - 2 * ALIGN) return NULL;
  txattn__workspace_pool *p = malloc(sizeof *p);
  if (p == NULL) return NULL;
  if (pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p);
    return NULL;
  }
  p->free_list = NULL;
  p->block = ALIGN + (size + ALIGN - 1) / ALIGN * ALIGN;
  p->align = ALIGN;
  if (p->block >= HUGE_MIN && p->block <= SIZE_MAX - HUGE_ALIGN) {
    p->block = (p->block + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
    p->align = HUGE_ALIGN;
  }
  return p;
}

void *txattn__workspace_take(txattn__workspace_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  node *n = pool->free_list;
  if (n != NULL) pool->free_list = n->next;
  pthread_mutex_unlock(&pool->lock);
  if (n == NULL) {
    if ((n = aligned_alloc(pool->align, pool->block)) == NULL) return NULL;
#ifdef MADV_HUGEPAGE
    if (pool->align == HUGE_ALIGN) (void)madvise(n, pool->block, MADV_HUGEPAGE); /* a hint */
#endif
  }
  return (char *)n + ALIGN;
}

void txattn__workspace_give(txattn__workspace_pool *pool, void *ws) {
  node *n = (node *)((char *)ws - ALIGN);
  pthread_mutex_lock(&pool->lock);
  n->next = pool->free_list;
  pool->free_list = n;
  pthread_mutex_unlock(&pool->lock);
}

void txattn__workspace_pool_free(txattn__workspace_pool *pool) {
  if (pool == NULL) return;
  for (node *n = pool->free_list, *next; n != NULL; n = next) {
    next = n->next;
    free(n);
  }
  pthread_mutex_destroy(&pool->lock);
  free(pool);
}
