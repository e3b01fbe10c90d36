/* SPDX-License-Identifier: MIT */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE (Linux) */
#include "big_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

void *tx_alloc_big(size_t bytes) {
  const size_t huge = (size_t)2 << 20;
  if (bytes > SIZE_MAX - huge) return NULL; /* rounding up would wrap */
  if (bytes < huge) return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
  const size_t whole = (bytes + huge - 1) / huge * huge;
  void *m = aligned_alloc(huge, whole);
#ifdef MADV_HUGEPAGE
  if (m) (void)madvise(m, whole, MADV_HUGEPAGE); /* a hint: the kernel may decline */
#endif
  return m;
}
