/* SPDX-License-Identifier: MIT */
/* Internal: a class's lookup index and its regions (table_regions.c). */
#ifndef TXATTN_CORE_TABLE_REGIONS_H
#define TXATTN_CORE_TABLE_REGIONS_H

#include "table_types.h"

/* Derives the class's lookup index (its distinct n and r values and the point at each pair) and
   its regions from its points, and sets each point's region. 0 if out of memory or the class has
   too many distinct n and r values; the class is then unchanged. */
int txattn__tm_reindex(txattn__class *c);

#endif
