/* SPDX-License-Identifier: MIT */
/* Internal: the per-context cache of plans behind txattn_attention(). */
#ifndef TXATTN_CORE_PLAN_CACHE_H
#define TXATTN_CORE_PLAN_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "txattn/txattn.h"

#define TXATTN_PLAN_CACHE_SIZE 16

typedef struct txattn__cache_entry {
  txattn_problem key; /* resolved */
  char forced[64];    /* TXATTN_FORCE_KERNEL when the plan was made: it changes the choice */
  txattn_plan *plan;  /* the cache holds one reference; NULL when the slot is free */
  uint64_t last_used;
} txattn__cache_entry;

typedef struct txattn__plan_cache {
  pthread_mutex_t lock;
  txattn__cache_entry entries[TXATTN_PLAN_CACHE_SIZE];
  uint64_t clock;
} txattn__plan_cache;

/* 0 if the mutex cannot be created. */
int txattn__plan_cache_init(txattn__plan_cache *c);
/* Drops the cache's references to its plans (which hold references to the context). */
void txattn__plan_cache_clear(txattn__plan_cache *c);
void txattn__plan_cache_destroy(txattn__plan_cache *c);

#endif
