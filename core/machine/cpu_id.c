/* SPDX-License-Identifier: MIT */
/* What the CPU says about itself: vendor, brand, family/model/stepping, and (x86) its own cache
 * description leaves, which the topology check compares with what hwloc reports. x86-64 reads
 * cpuid; arm64 reads MIDR_EL1 (the kernel emulates the register read for user space when it
 * advertises HWCAP_CPUID; under qemu-user it is the emulated CPU's). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu_id.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if defined(__x86_64__)
/* Copies s into a buffer of the given size without its leading and trailing blanks (brand
   strings are padded with spaces, at either end depending on the vendor). */
static void copy_trimmed(char *dst, size_t size, const char *s) {
  while (*s == ' ') s++;
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == ' ') n--;
  if (n >= size) n = size - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static void regs_to_text(char *dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  memcpy(dst, &a, 4);
  memcpy(dst + 4, &b, 4);
  memcpy(dst + 8, &c, 4);
  memcpy(dst + 12, &d, 4);
}

void txattn__cpu_ident_get(txattn__cpu_ident *out) {
  uint32_t a, b, c, d;
  char text[49] = {0};
  memset(out, 0, sizeof *out);
  __cpuid(0, a, b, c, d);
  regs_to_text(text, b, d, c, 0); /* the vendor is ebx, edx, ecx */
  text[12] = '\0';
  copy_trimmed(out->vendor, sizeof out->vendor, text);
  if (a >= 1) {
    __cpuid(1, a, b, c, d);
    int family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    /* The extended fields count only where the SDM and APM say they do. */
    if (family == 0xf) family += (a >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model += ((a >> 16) & 0xf) << 4;
    out->family = family;
    out->model = model;
    out->stepping = a & 0xf;
  }
  __cpuid(0x80000000, a, b, c, d);
  if (a >= 0x80000004) {
    for (uint32_t i = 0; i < 3; i++) {
      __cpuid(0x80000002 + i, a, b, c, d);
      regs_to_text(text + 16 * i, a, b, c, d);
    }
    text[48] = '\0';
    copy_trimmed(out->brand, sizeof out->brand, text);
  }
}

/* One cache of a leaf-4-style description (leaf 4 on Intel, 0x8000001D on AMD, same layout):
   size = ways * partitions * line size * sets; sharing = logical processors sharing it. */
typedef struct leaf_cache {
  int type, level, threads;
  int64_t size;
} leaf_cache;

static int read_leaf_cache(uint32_t leaf, uint32_t sub, leaf_cache *lc) {
  uint32_t a, b, c, d;
  __cpuid_count(leaf, sub, a, b, c, d);
  lc->type = (int)(a & 31u); /* 0: no more caches; 1 data, 2 instruction, 3 unified */
  if (lc->type == 0) return 0;
  lc->level = (int)((a >> 5) & 7u);
  lc->threads = (int)((a >> 14) & 0xfffu) + 1;
  lc->size =
      (int64_t)((b >> 22) + 1) * (((b >> 12) & 0x3ffu) + 1) * ((b & 0xfffu) + 1) * ((int64_t)c + 1);
  return 1;
}

/* The cache leaf this CPU has: AMD and Hygon describe caches in 0x8000001D (with TOPOEXT), the
   others in leaf 4. 0 when there is none. */
static uint32_t cache_leaf(const char *vendor) {
  uint32_t a, b, c, d;
  if (strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0) {
    __cpuid(0x80000000, a, b, c, d);
    if (a < 0x8000001d) return 0;
    __cpuid(0x80000001, a, b, c, d);
    return (c >> 22) & 1u ? 0x8000001d : 0;
  }
  return __get_cpuid_max(0, NULL) >= 4 ? 4 : 0;
}

void txattn__cpu_caches_get(txattn__cpu_caches *out) {
  txattn__cpu_ident id;
  leaf_cache lc;
  int l1d_threads = 0;
  memset(out, 0, sizeof *out);
  txattn__cpu_ident_get(&id);
  uint32_t leaf = cache_leaf(id.vendor);
  if (leaf == 0) return;
  out->leaf = leaf == 4 ? "leaf 4" : "leaf 0x8000001D";
  txattn__cpu_cache *levels[4] = {NULL, &out->l1d, &out->l2, &out->l3};
  int threads[4] = {0};
  for (uint32_t sub = 0; sub < 16 && read_leaf_cache(leaf, sub, &lc); sub++) {
    if (lc.type == 2 || lc.level < 1 || lc.level > 3) continue;
    levels[lc.level]->total = lc.size;
    threads[lc.level] = lc.threads;
    if (lc.level == 1) l1d_threads = lc.threads;
  }
  /* Threads sharing a cache over threads sharing the (per-core) L1d = cores sharing it. The
     fields count addressable IDs, rounded up to a power of two, so this may overstate the sharers
     (12 cores read as 16): the per-core share errs small, which is the safe side for tiles. */
  for (int l = 1; l <= 3; l++) {
    txattn__cpu_cache *cc = levels[l];
    if (cc->total <= 0) continue;
    int cores = l1d_threads > 0 ? threads[l] / l1d_threads : threads[l];
    cc->cores = cores > 0 ? cores : 1;
    cc->per_core = cc->total / cc->cores;
  }
}

#elif defined(__aarch64__)
/* Vendor names of the MIDR implementer codes seen in arm64 machines. */
static const char *implementer_name(unsigned code) {
  switch (code) {
  case 0x41:
    return "ARM";
  case 0x42:
    return "Broadcom";
  case 0x43:
    return "Cavium";
  case 0x46:
    return "Fujitsu";
  case 0x48:
    return "HiSilicon";
  case 0x4e:
    return "NVIDIA";
  case 0x50:
    return "APM";
  case 0x51:
    return "Qualcomm";
  case 0x61:
    return "Apple";
  case 0x6d:
    return "Microsoft";
  case 0xc0:
    return "Ampere";
  default:
    return NULL;
  }
}

static uint64_t read_midr(void) {
  if (getauxval(AT_HWCAP) & HWCAP_CPUID) {
    uint64_t midr;
    __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
    return midr;
  }
  unsigned long long v = 0;
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "re");
  if (f) {
    if (fscanf(f, "%llx", &v) != 1) v = 0;
    fclose(f);
  }
  return v;
}

/* arm64 has no family/model/stepping: family is the MIDR implementer code, model the part number
   and stepping (variant << 4) | revision, so "r1p2" of part 0xd0c reads as stepping 0x12. */
void txattn__cpu_ident_get(txattn__cpu_ident *out) {
  memset(out, 0, sizeof *out);
  uint64_t midr = read_midr();
  if (midr == 0) return;
  unsigned impl = (unsigned)(midr >> 24) & 0xffu;
  const char *name = implementer_name(impl);
  if (name)
    snprintf(out->vendor, sizeof out->vendor, "%s", name);
  else
    snprintf(out->vendor, sizeof out->vendor, "arm64 0x%02x", impl);
  out->family = (int)impl;
  out->model = (int)((midr >> 4) & 0xfffu);
  out->stepping = (int)((((midr >> 20) & 0xfu) << 4) | (midr & 0xfu));
}

/* CLIDR/CCSIDR are not readable from user space: hwloc (sysfs) is the only source. */
void txattn__cpu_caches_get(txattn__cpu_caches *out) {
  memset(out, 0, sizeof *out);
}

#else
void txattn__cpu_ident_get(txattn__cpu_ident *out) {
  memset(out, 0, sizeof *out);
}

void txattn__cpu_caches_get(txattn__cpu_caches *out) {
  memset(out, 0, sizeof *out);
}
#endif
