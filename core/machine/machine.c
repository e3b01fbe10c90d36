/* SPDX-License-Identifier: MIT */
/* The machine as a context sees it (txattn_machine_info): the CPU's identity and ISAs, hwloc's
 * topology, the cache sizes after the plausibility check (cache_check.c), and on top of them the
 * user's override. The hardware is probed once per process; the override is read at every
 * context creation, so a program (or test) that changes $TXATTN_CACHES sees it in its next
 * context. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_check.h"
#include "cache_spec.h"
#include "cpu.h"
#include "cpu_id.h"
#include "error.h"
#include "log.h"
#include "machine.h"
#include "topology.h"

int txattn__online_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static txattn_machine_info probed;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void copy_topology(const txattn__topology *t, txattn_machine_info *m) {
  const txattn__topo_cache *levels[3] = {&t->l1d, &t->l2, &t->l3};
  int64_t *hw[3] = {&m->hw_l1d_bytes, &m->hw_l2_bytes, &m->hw_l3_bytes};
  for (int l = 0; l < 3; l++) {
    *hw[l] = levels[l]->per_core;
    m->hw_cache_total_bytes[l] = levels[l]->total;
    m->hw_cache_cores[l] = levels[l]->cores;
  }
  /* without hwloc's counts, the CPUs this process may use stand for cores and threads */
  m->n_pus = t->n_pus > 0 ? t->n_pus : txattn__online_cpus();
  m->n_cores = t->n_cores > 0 ? t->n_cores : m->n_pus;
  m->n_numa = t->n_numa > 0 ? t->n_numa : 1;
  /* topology.c sized both texts to fit whole */
  if (t->loaded)
    snprintf(m->topology_source, sizeof m->topology_source, "%s", t->source);
  else
    snprintf(m->topology_source, sizeof m->topology_source, "none: %s", t->problem);
  m->topology_file = t->file;
}

static void probe(void) {
  txattn_machine_info *m = &probed;
  m->struct_size = sizeof *m;
  txattn__cpu_ident id;
  txattn__cpu_caches cpu;
  txattn__cache_checked checked;
  txattn__cpu_ident_get(&id);
  memcpy(m->vendor, id.vendor, sizeof m->vendor);
  memcpy(m->brand, id.brand, sizeof m->brand);
  m->family = id.family;
  m->model = id.model;
  m->stepping = id.stepping;
  m->isa_mask = txattn__isa_hw_mask();
  const txattn__topology *t = txattn__topology_get();
  copy_topology(t, m);
  /* cpuid describes this CPU: it says nothing about a topology read from another machine's file */
  txattn__cpu_caches_get(&cpu);
  const int comparable = cpu.leaf != NULL && (!t->loaded || t->this_system);
  txattn__caches_check(t, comparable ? &cpu : NULL, &checked);
  m->l1d_bytes = checked.bytes[0];
  m->l2_bytes = checked.bytes[1];
  m->l3_bytes = checked.bytes[2];
  memcpy(m->cache_source, checked.source, sizeof m->cache_source);
  memcpy(m->cache_notes, checked.notes, sizeof m->cache_notes);
}

/* Puts the override's values over the checked ones, each with a note. An override is the user's
   word: used as given (within the parser's 1 KiB .. 1 TiB), even outside the plausible range,
   which the note then mentions. */
static void apply_override(const txattn__cache_spec *spec, const char *origin,
                           txattn_machine_info *m) {
  const int64_t want[3] = {spec->l1d, spec->l2, spec->l3};
  int64_t *used[3] = {&m->l1d_bytes, &m->l2_bytes, &m->l3_bytes};
  int any = 0;
  for (int l = 0; l < 3; l++) {
    const txattn__cache_rule *r = &txattn__cache_rules[l];
    char a[24], b[24], lo[24], hi[24], outside[96] = "";
    if (want[l] == 0) continue;
    if (want[l] < r->lo || want[l] > r->hi)
      snprintf(outside, sizeof outside, ", outside the plausible %s..%s: used as given",
               txattn__bytes_text(r->lo, lo, sizeof lo), txattn__bytes_text(r->hi, hi, sizeof hi));
    txattn__note_add(m->cache_notes, sizeof m->cache_notes, "%s: set to %s by %s (instead of %s)%s",
                     r->name, txattn__bytes_text(want[l], a, sizeof a), origin,
                     txattn__bytes_text(*used[l], b, sizeof b), outside);
    *used[l] = want[l];
    any = 1;
  }
  size_t len = strlen(m->cache_source);
  if (any) snprintf(m->cache_source + len, sizeof m->cache_source - len, "+%s", origin);
}

static void log_machine(const txattn_machine_info *m) {
  if (!txattn__verbose()) return;
  char a[24], b[24], c[24];
  txattn__log("machine: %s \"%s\" family %d model %d stepping %d; %d cores, %d PUs, %d NUMA nodes "
              "(%s)",
              m->vendor, m->brand, m->family, m->model, m->stepping, m->n_cores, m->n_pus,
              m->n_numa, m->topology_source);
  if (m->topology_file) txattn__log("topology file: %s", m->topology_file);
  txattn__log("caches per core: l1d %s, l2 %s, l3 %s (%s)", txattn__bytes_text(m->l1d_bytes, a, 24),
              txattn__bytes_text(m->l2_bytes, b, 24), txattn__bytes_text(m->l3_bytes, c, 24),
              m->cache_source);
  for (const char *p = m->cache_notes; *p;) {
    size_t n = strcspn(p, "\n");
    txattn__log("cache note: %.*s", (int)n, p);
    p += n + (p[n] == '\n');
  }
}

txattn_status txattn__machine_init(const char *caches, txattn_machine_info *info,
                                   txattn_machine *m) {
  pthread_once(&probe_once, probe);
  *info = probed;
  /* getenv, not secure_getenv: the variable only sizes blocks, it names no file to load */
  const char *origin = caches ? "txattn_options.caches" : "TXATTN_CACHES";
  const char *text = caches ? caches : getenv("TXATTN_CACHES");
  if (text) {
    txattn__cache_spec spec;
    txattn_status s = txattn__cache_spec_parse(text, origin, &spec);
    if (s != TXATTN_OK && caches == NULL) {
      /* a malformed variable is ignored with a note, as a malformed table is: the caller's
         environment must not fail every context; a malformed option is the caller's error */
      txattn__note_add(info->cache_notes, sizeof info->cache_notes,
                       "%.600s: ignored, the detected sizes are used", txattn_last_error());
      txattn__log("cache note: %.600s: ignored, the detected sizes are used", txattn_last_error());
    } else {
      TXATTN_FORWARD_IF_ERROR(s);
      apply_override(&spec, origin, info);
    }
  }
  *m = (txattn_machine){
      .struct_size = sizeof *m,
      .l1d_bytes = info->l1d_bytes,
      .l2_bytes = info->l2_bytes,
      .l3_bytes = info->l3_bytes,
      .n_cores = txattn__online_cpus(),
  };
  log_machine(info);
  return TXATTN_OK;
}
