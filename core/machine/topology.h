/* SPDX-License-Identifier: MIT */
/* Internal: the machine's topology as hwloc reports it, unchecked: cache sizes per core, cores,
 * hardware threads and NUMA nodes. machine.c checks the values for plausibility. */
#ifndef TXATTN_CORE_TOPOLOGY_H
#define TXATTN_CORE_TOPOLOGY_H

#include <stdint.h>

#include "txattn/txattn.h"

/* One cache level: the share per core of one cache, and the cache it came from. All 0 when hwloc
   lists no cache of the level. */
typedef struct txattn__topo_cache {
  int64_t per_core; /* total / cores: the smallest share over the level's caches */
  int64_t total;    /* the size of that cache */
  int cores;        /* the cores under it (hardware threads when hwloc lists no cores), >= 1 */
} txattn__topo_cache;

typedef struct txattn__topology {
  int loaded;      /* hwloc gave a topology; else only problem is set */
  int this_system; /* it describes the machine we run on, so cpuid may be compared with it */
  /* "hwloc 2.9.0: Linux backend, this system", "hwloc: XML file F (HWLOC_XMLFILE), ..." */
  char source[sizeof(((txattn_machine_info *)0)->topology_source)];
  /* why hwloc gave nothing, or why it ignored HWLOC_XMLFILE; "" if all went well. Sized so that
     machine.c's "none: " and it fill txattn_machine_info.topology_source. */
  char problem[sizeof(((txattn_machine_info *)0)->topology_source) - 6];
  const char *file; /* HWLOC_XMLFILE, whole, when set; NULL otherwise */
  txattn__topo_cache l1d, l2, l3;
  int n_cores, n_pus, n_numa; /* 0 when hwloc lists none of them */
} txattn__topology;

/* hwloc's view, probed once per process (a few milliseconds, mostly hwloc loading its plugins).
   HWLOC_XMLFILE and HWLOC_SYNTHETIC make hwloc read a faked topology, as in the tests. */
const txattn__topology *txattn__topology_get(void);

#endif
