/* SPDX-License-Identifier: MIT */
/* The plausibility check of the per-core cache sizes that tiles are derived from. Virtual
 * machines report nonsense (a whole host's L3 as one guest core's, or none), so every value is
 * checked before a kernel sizes its blocks by it. The rules, level by level (h: hwloc's per-core
 * share, c: the CPU's own cache leaf -- x86 cpuid leaf 4 on Intel, 0x8000001D on AMD, giving
 * ways * partitions * line size * sets, shared by the cores its sharing field counts):
 *
 *  1. h within the plausible range (below) is used, unless c is also plausible and the two are
 *     more than 4x apart: then c, because a guest's hwloc counts only the guest's vCPUs among the
 *     sharers of a host cache, while cpuid counts every core of the hardware.
 *  2. h missing or outside the range: c if c is plausible;
 *  3. else h clamped to the range if it is at most 2x outside it (a slightly odd but real size);
 *  4. else the typical size of the level (further off, the number is not a measurement).
 *  5. An L3 missing where hwloc lists an L2 (and cpuid no L3): the machine's last level is its L2,
 *     and the L2's size stands for the L3 share (the kernels ask "does this fit in the last level").
 * Then across levels: L2 must be larger than L1d, else L2 becomes max(typical L2, 2 x L1d); the L3
 * share must be at least half the L2, else it becomes the L2's size.
 *
 * Plausible per-core ranges: L1d 8 KiB..256 KiB, L2 128 KiB..16 MiB, L3 512 KiB..64 MiB (an L3
 * "per core" is one L3's size divided by the cores sharing it). Typical sizes, used when nothing
 * can be trusted, err small, since a block sized for a small cache still fits in a larger one:
 * L1d 32 KiB, L2 512 KiB, L3 2 MiB per core. Every departure from hwloc's value is noted. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cache_check.h"

#define KIB TXATTN__KIB
#define MIB TXATTN__MIB

const txattn__cache_rule txattn__cache_rules[3] = {
    {"l1d", 8 * KIB, 256 * KIB, 32 * KIB},
    {"l2", 128 * KIB, 16 * MIB, 512 * KIB},
    {"l3", 512 * KIB, 64 * MIB, 2 * MIB},
};

enum { FROM_HWLOC = 1, FROM_CPUID = 2, FROM_CLAMPED = 4, FROM_TYPICAL = 8 };

void txattn__note_add(char *notes, size_t size, const char *fmt, ...) {
  size_t len = strnlen(notes, size);
  if (size < 2 || len >= size - 2) return;
  if (len > 0) notes[len++] = '\n';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(notes + len, size - len, fmt, ap);
  va_end(ap);
}

const char *txattn__bytes_text(int64_t bytes, char *buf, size_t size) {
  static const char *const units[] = {"GiB", "MiB", "KiB"};
  for (int u = 0; u < 3; u++) {
    int64_t unit = INT64_C(1) << (10 * (3 - u));
    if (bytes < unit) continue;
    char num[32];
    snprintf(num, sizeof num, "%.2f", (double)bytes / (double)unit);
    size_t n = strlen(num); /* 1.50 -> 1.5, 2.00 -> 2 */
    while (num[n - 1] == '0') num[--n] = '\0';
    if (num[n - 1] == '.') num[--n] = '\0';
    snprintf(buf, size, "%s %s", num, units[u]);
    return buf;
  }
  snprintf(buf, size, "%" PRId64 " B", bytes);
  return buf;
}

static int plausible(const txattn__cache_rule *r, int64_t v) {
  return v >= r->lo && v <= r->hi;
}

/* "hwloc reports 508 MiB per core (1016 MiB shared by 2 cores)" */
static void hw_text(const txattn__topo_cache *hw, char *buf, size_t size) {
  char a[24], b[24];
  if (hw->per_core == 0) {
    snprintf(buf, size, "not reported by hwloc");
  } else if (hw->cores > 1) {
    snprintf(buf, size, "hwloc reports %s per core (%s shared by %d cores)",
             txattn__bytes_text(hw->per_core, a, sizeof a),
             txattn__bytes_text(hw->total, b, sizeof b), hw->cores);
  } else {
    snprintf(buf, size, "hwloc reports %s per core", txattn__bytes_text(hw->per_core, a, sizeof a));
  }
}

/* "cpuid leaf 0x8000001D: 16 MiB shared by 2 cores = 8 MiB per core" */
static void cpu_text(const char *leaf, const txattn__cpu_cache *c, char *buf, size_t size) {
  char a[24], b[24];
  snprintf(buf, size, "cpuid %s: %s shared by %d core%s = %s per core", leaf,
           txattn__bytes_text(c->total, a, sizeof a), c->cores, c->cores == 1 ? "" : "s",
           txattn__bytes_text(c->per_core, b, sizeof b));
}

typedef struct checker {
  txattn__cache_checked *out;
  const char *leaf; /* the CPU's cache leaf, NULL when not comparable */
  unsigned from;    /* FROM_* of the values used */
} checker;

/* Rules 1 to 4 for one level. */
static int64_t check_level(checker *k, const txattn__cache_rule *r, const txattn__topo_cache *hw,
                           const txattn__cpu_cache *cpu) {
  char hws[96], cps[112], range[48], a[24], b[24];
  const int64_t h = hw->per_core, c = cpu && plausible(r, cpu->per_core) ? cpu->per_core : 0;
  hw_text(hw, hws, sizeof hws);
  if (c) cpu_text(k->leaf, cpu, cps, sizeof cps);
  if (plausible(r, h) && (c == 0 || (h <= 4 * c && c <= 4 * h))) {
    k->from |= FROM_HWLOC;
    return h;
  }
  if (plausible(r, h)) {
    txattn__note_add(k->out->notes, sizeof k->out->notes,
                     "%s: %s, but %s: more than 4x apart, using cpuid (in a VM, hwloc counts only "
                     "the guest's CPUs among a cache's sharers)",
                     r->name, hws, cps);
    k->from |= FROM_CPUID;
    return c;
  }
  if (h == 0)
    snprintf(range, sizeof range, "%s", "");
  else
    snprintf(range, sizeof range, ", %s the plausible %s", h < r->lo ? "below" : "above",
             txattn__bytes_text(h < r->lo ? r->lo : r->hi, a, sizeof a));
  if (c) {
    txattn__note_add(k->out->notes, sizeof k->out->notes, "%s: %s%s: using %s", r->name, hws, range,
                     cps);
    k->from |= FROM_CPUID;
    return c;
  }
  if (h > 0 && h >= r->lo / 2 && h <= 2 * r->hi) {
    int64_t v = h < r->lo ? r->lo : r->hi;
    txattn__note_add(k->out->notes, sizeof k->out->notes, "%s: %s%s: clamped to %s", r->name, hws,
                     range, txattn__bytes_text(v, b, sizeof b));
    k->from |= FROM_CLAMPED;
    return v;
  }
  txattn__note_add(k->out->notes, sizeof k->out->notes, "%s: %s%s%s: using the typical %s", r->name,
                   hws, range, h > 0 ? " by more than 2x, not a size to trust" : "",
                   txattn__bytes_text(r->typical, b, sizeof b));
  k->from |= FROM_TYPICAL;
  return r->typical;
}

/* The cross-level rules: an L2 no larger than the L1d, or an L3 share below half the L2, cannot
   be right (a cache level is there because it holds more than the one above it). */
static void check_order(checker *k, int64_t *v, int l3_is_l2) {
  const txattn__cache_rule *r2 = &txattn__cache_rules[1];
  char a[24], b[24], c[24];
  if (v[1] <= v[0]) {
    int64_t l2 = 2 * v[0] > r2->typical ? 2 * v[0] : r2->typical;
    if (l2 > r2->hi) l2 = r2->hi;
    txattn__note_add(k->out->notes, sizeof k->out->notes,
                     "l2: %s is not larger than l1d (%s): using %s",
                     txattn__bytes_text(v[1], a, 24), txattn__bytes_text(v[0], b, 24),
                     txattn__bytes_text(l2, c, 24));
    v[1] = l2;
    k->from |= FROM_TYPICAL;
  }
  if (!l3_is_l2 && v[2] < v[1] / 2) {
    txattn__note_add(k->out->notes, sizeof k->out->notes,
                     "l3: %s per core is less than half of l2 (%s): using l2's size",
                     txattn__bytes_text(v[2], a, 24), txattn__bytes_text(v[1], b, 24));
    v[2] = v[1];
  }
}

static void source_text(unsigned from, char *buf, size_t size) {
  static const char *const names[] = {"hwloc", "cpuid", "clamped", "typical"};
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < 4; i++)
    if (from & (1u << i) && len < size)
      len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "+" : "", names[i]);
}

void txattn__caches_check(const txattn__topology *topo, const txattn__cpu_caches *cpu,
                          txattn__cache_checked *out) {
  memset(out, 0, sizeof *out);
  checker k = {.out = out, .leaf = cpu ? cpu->leaf : NULL, .from = 0};
  const txattn__topo_cache *hw[3] = {&topo->l1d, &topo->l2, &topo->l3};
  const txattn__cpu_cache *cc[3] = {cpu ? &cpu->l1d : NULL, cpu ? &cpu->l2 : NULL,
                                    cpu ? &cpu->l3 : NULL};
  if (topo->problem[0]) txattn__note_add(out->notes, sizeof out->notes, "hwloc: %s", topo->problem);
  out->bytes[0] = check_level(&k, &txattn__cache_rules[0], hw[0], cc[0]);
  out->bytes[1] = check_level(&k, &txattn__cache_rules[1], hw[1], cc[1]);
  /* rule 5 */
  int l3_is_l2 = topo->l3.per_core == 0 && topo->l2.per_core > 0 &&
                 !(cc[2] && plausible(&txattn__cache_rules[2], cc[2]->per_core));
  if (l3_is_l2) {
    char a[24];
    out->bytes[2] = out->bytes[1];
    txattn__note_add(out->notes, sizeof out->notes,
                     "l3: not reported by hwloc, which lists an l2: the l2 is the last level, its "
                     "%s per core stands for the l3 share",
                     txattn__bytes_text(out->bytes[1], a, sizeof a));
  } else {
    out->bytes[2] = check_level(&k, &txattn__cache_rules[2], hw[2], cc[2]);
  }
  check_order(&k, out->bytes, l3_is_l2);
  source_text(k.from, out->source, sizeof out->source);
}
