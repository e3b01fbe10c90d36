/* The workspace pool: a mutex-protected stack of 64-byte aligned blocks. The link lives in a
 * 64-byte header before each workspace, so giving one back never allocates. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "workspace.h"

#define ALIGN 64

typedef struct node {
  struct node *next;
} node;

struct txattn__workspace_pool {
  pthread_mutex_t lock;
  node *free_list;
  size_t block; /* header + workspace rounded up to ALIGN */
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
  return p;
}

void *txattn__workspace_take(txattn__workspace_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  node *n = pool->free_list;
  if (n != NULL) pool->free_list = n->next;
  pthread_mutex_unlock(&pool->lock);
  if (n == NULL && (n = aligned_alloc(ALIGN, pool->block)) == NULL) return NULL;
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
