/* SPDX-License-Identifier: MIT */
/* The topology as hwloc reports it: per-core cache shares, cores, hardware threads, NUMA nodes.
 * Read once per process, since hwloc_topology_init loads hwloc's plugins (libxml2 among them), a
 * cost of milliseconds (docs/measurements.md); every context then copies the result.
 *
 * hwloc honours HWLOC_XMLFILE (and HWLOC_SYNTHETIC) by itself, but when the XML file cannot be
 * read it silently falls back to this system, or (a file its built-in parser finds broken) fails
 * the load. We hand the file to hwloc_topology_set_xml ourselves so that either is reported
 * (errno) instead of going unnoticed; without a topology, machine.c takes the caches from cpuid
 * and the cores from the CPUs this process may use. hwloc is silent
 * about bad XML unless HWLOC_XML_VERBOSE is set (the user asked for it then); it may still print
 * "critical" errors about an inconsistent topology from the OS, which HWLOC_HIDE_ERRORS=2 silences:
 * we do not set that variable ourselves, since changing the environment of the host program from
 * a library is not thread-safe. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "topology.h"

static txattn__topology topo;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

/* The smallest per-core share over the caches of a level: kernels run the same tiles on every
   core, so on a machine whose cores differ (big and little clusters) the smaller share is the one
   every core can count on. */
static void read_level(hwloc_topology_t t, hwloc_obj_type_t type, txattn__topo_cache *out) {
  int n = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, i);
    if (o == NULL || o->attr == NULL || o->attr->cache.size == 0 ||
        o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
      continue;
    int cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_CORE);
    if (cores <= 0) cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_PU);
    if (cores <= 0) cores = 1;
    uint64_t size = o->attr->cache.size;
    int64_t total = size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)size;
    int64_t per_core = total / cores;
    if (out->per_core == 0 || per_core < out->per_core)
      *out = (txattn__topo_cache){.per_core = per_core, .total = total, .cores = cores};
  }
}

static int count(hwloc_topology_t t, hwloc_obj_type_t type) {
  int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? n : 0;
}

/* Formats into buf the text `fmt` makes of the file named by HWLOC_XMLFILE, a %s in fmt: its whole
   path when the text fits, else a stand-in that points at txattn_machine_info.topology_file, so a
   path is never cut. The rest of the text is the library's own and fits. */
static void about_file(char *buf, size_t size, const char *fmt, const char *xml, const char *why) {
  char stand_in[96];
  if ((size_t)snprintf(buf, size, fmt, xml, why) < size) return;
  snprintf(stand_in, sizeof stand_in, "(a %zu-byte path: txattn_machine_info.topology_file)",
           strlen(xml));
  snprintf(buf, size, fmt, stand_in, why);
}

/* Where the topology came from, in words. */
static void describe_source(hwloc_topology_t t, const char *xml) {
  const char *system = topo.this_system ? "this system" : "not this system (cpuid not compared)";
  if (xml) {
    about_file(topo.source, sizeof topo.source, "hwloc: XML file %s (HWLOC_XMLFILE), %s", xml,
               system);
    return;
  }
  hwloc_obj_t root = hwloc_get_root_obj(t);
  const char *version = root ? hwloc_obj_get_info_by_name(root, "hwlocVersion") : NULL;
  const char *backend = root ? hwloc_obj_get_info_by_name(root, "Backend") : NULL;
  snprintf(topo.source, sizeof topo.source, "hwloc%s%.16s: %.40s backend, %s", version ? " " : "",
           version ? version : "", backend ? backend : "unknown", system);
}

/* Points hwloc at HWLOC_XMLFILE itself; returns the file, or NULL when it is unset or unreadable
   (then topo.problem says why and hwloc reads this system). getenv, not secure_getenv: hwloc reads
   the same variable with getenv, and we only report on what it would do anyway. */
static const char *use_xml_file(hwloc_topology_t t) {
  const char *xml = getenv("HWLOC_XMLFILE");
  if (xml == NULL || xml[0] == '\0') return NULL;
  topo.file = strdup(xml); /* kept for the process: every context's machine info points at it */
  errno = 0;
  if (hwloc_topology_set_xml(t, xml) == 0) return xml;
  about_file(topo.problem, sizeof topo.problem,
             "cannot read HWLOC_XMLFILE=%s (%s): hwloc reads this system instead", xml,
             errno ? strerror(errno) : "not a topology");
  return NULL;
}

static void probe(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) {
    snprintf(topo.problem, sizeof topo.problem, "hwloc_topology_init failed (%s)", strerror(errno));
    return;
  }
  /* Caches, cores and NUMA nodes only: no PCI scan, which would be slow and tell us nothing. */
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  const char *xml = use_xml_file(t);
  if (hwloc_topology_load(t) != 0) {
    /* hwloc's own XML parser reads the file only here (libxml2's, a plugin, already in
       hwloc_topology_set_xml): a broken file fails the load, and hwloc, which reads HWLOC_XMLFILE
       again at every load, cannot be asked for this system instead */
    if (xml)
      about_file(topo.problem, sizeof topo.problem,
                 "cannot load HWLOC_XMLFILE=%s (%s): no topology from hwloc", xml, strerror(errno));
    else
      snprintf(topo.problem, sizeof topo.problem, "hwloc_topology_load failed (%s)",
               strerror(errno));
    hwloc_topology_destroy(t);
    return;
  }
  topo.loaded = 1;
  topo.this_system = hwloc_topology_is_thissystem(t);
  describe_source(t, xml);
  read_level(t, HWLOC_OBJ_L1CACHE, &topo.l1d);
  read_level(t, HWLOC_OBJ_L2CACHE, &topo.l2);
  read_level(t, HWLOC_OBJ_L3CACHE, &topo.l3);
  topo.n_cores = count(t, HWLOC_OBJ_CORE);
  topo.n_pus = count(t, HWLOC_OBJ_PU);
  topo.n_numa = count(t, HWLOC_OBJ_NUMANODE);
  hwloc_topology_destroy(t);
}

const txattn__topology *txattn__topology_get(void) {
  pthread_once(&topo_once, probe);
  return &topo;
}
