/* SPDX-License-Identifier: MIT */
/* The round trip of a cache line between two CPUs (core_latency.h). Linux: sched_getaffinity and
   pthread_setaffinity_np; elsewhere unknown. */
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np */
#include "core_latency.h"

#include <stdlib.h>

#include "timing.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define BATCHES 5
#define TRIPS   400 /* a batch: well under a millisecond (docs/measurements.md) */

typedef struct pong {
  _Alignas(64) atomic_long flag; /* odd: the ping is out; even: answered */
  int cpu;
  long trips;
} pong;

static void *answer(void *arg) {
  pong *p = arg;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(p->cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  for (long i = 0; i < p->trips; i++) {
    while (atomic_load_explicit(&p->flag, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&p->flag, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

/* The median batch's round trip between the calling thread (on its CPU) and one on cpu. */
static double pair_ns(int cpu) {
  pong p = {.cpu = cpu, .trips = (long)(BATCHES + 1) * TRIPS};
  atomic_init(&p.flag, 0);
  pthread_t th;
  if (pthread_create(&th, NULL, answer, &p) != 0) return -1;
  double batch[BATCHES];
  for (long b = 0; b <= BATCHES; b++) { /* batch 0 warms up: the thread starts and moves */
    double t0 = tx_clock();
    for (long i = b * TRIPS; i < (b + 1) * TRIPS; i++) {
      atomic_store_explicit(&p.flag, 2 * i + 1, memory_order_release);
      while (atomic_load_explicit(&p.flag, memory_order_acquire) != 2 * i + 2) {
      }
    }
    if (b > 0) batch[b - 1] = 1e9 * (tx_clock() - t0) / TRIPS;
  }
  pthread_join(th, NULL);
  qsort(batch, BATCHES, sizeof batch[0], tx_cmp_double);
  return batch[BATCHES / 2];
}

double tx_core_round_trip_ns(int max_pairs) {
  cpu_set_t mask, self;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0 ||
      pthread_getaffinity_np(pthread_self(), sizeof self, &self) != 0)
    return -1;
  int first = -1, n = 0;
  double ns[CPU_SETSIZE];
  for (int c = 0; c < CPU_SETSIZE && n < max_pairs; c++) {
    if (!CPU_ISSET(c, &mask)) continue;
    if (first < 0) {
      first = c;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return -1;
      continue;
    }
    double t = pair_ns(c);
    if (t > 0) ns[n++] = t;
  }
  pthread_setaffinity_np(pthread_self(), sizeof self, &self);
  if (n == 0) return -1;
  qsort(ns, (size_t)n, sizeof ns[0], tx_cmp_double);
  return ns[n / 2];
}
#else
double tx_core_round_trip_ns(int max_pairs) {
  (void)max_pairs;
  return -1;
}
#endif
