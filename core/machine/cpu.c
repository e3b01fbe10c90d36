/* SPDX-License-Identifier: MIT */
/* ISA detection: cpuid + XGETBV on x86-64, HWCAP on arm64. A kernel is only ever called when both
 * the CPU has its instructions and the OS saves their registers on context switches (a hypervisor
 * may hide the latter while cpuid still advertises the former: that is the classic SIGILL). */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu.h"
#include "log.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

typedef struct hw_state {
  int usable[TXATTN_ISA_COUNT_];
  char why[TXATTN_ISA_COUNT_][128];
} hw_state;

static hw_state hw;
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

/* TXATTN_MAX_ISA compares levels, so "neon" and "avx2" cap the same way on either architecture;
   "avx512" leaves avx512bf16 out. */
static const int isa_levels[TXATTN_ISA_COUNT_] = {0, 1, 2, 1, 3};

static void set_why(txattn_isa isa, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_why(txattn_isa isa, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hw.usable[isa] = 0;
  vsnprintf(hw.why[isa], sizeof hw.why[isa], fmt, ap);
  va_end(ap);
}

#if defined(__x86_64__)
typedef struct cpu_bit {
  int leaf; /* 1: leaf 1 ecx, 7: leaf 7 ebx */
  int bit;
  const char *name;
} cpu_bit;

static const cpu_bit avx2_bits[] = {
    {1, 28, "AVX"}, {1, 12, "FMA"}, {1, 29, "F16C"}, {7, 5, "AVX2"}};
static const cpu_bit avx512_bits[] = {{7, 16, "AVX-512F"},
                                      {7, 28, "AVX-512CD"},
                                      {7, 30, "AVX-512BW"},
                                      {7, 17, "AVX-512DQ"},
                                      {7, 31, "AVX-512VL"}};

static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  /* Spelled as inline asm because the _xgetbv intrinsic needs -mxsave, and core has no ISA flags.
   */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* The first required bit the CPU lacks, or NULL. */
static const cpu_bit *missing_bit(const cpu_bit *bits, size_t n, uint32_t ecx1, uint32_t ebx7) {
  for (size_t i = 0; i < n; i++) {
    uint32_t reg = bits[i].leaf == 1 ? ecx1 : ebx7;
    if (!((reg >> bits[i].bit) & 1u)) return &bits[i];
  }
  return NULL;
}

static void lack(txattn_isa isa, const cpu_bit *b) {
  hw.usable[isa] = 0;
  snprintf(hw.why[isa], sizeof hw.why[isa], "CPU lacks %s (cpuid leaf %d %s bit %d)", b->name,
           b->leaf, b->leaf == 1 ? "ecx" : "ebx", b->bit);
}

static void detect_avx(uint32_t ecx1, uint32_t ebx7, uint32_t eax7_1) {
  const cpu_bit *m2 = missing_bit(avx2_bits, sizeof avx2_bits / sizeof *avx2_bits, ecx1, ebx7);
  const cpu_bit *m5 =
      missing_bit(avx512_bits, sizeof avx512_bits / sizeof *avx512_bits, ecx1, ebx7);
  int osxsave = (ecx1 >> 27) & 1u;
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  char x[32];
  snprintf(x, sizeof x, "0x%llx", (unsigned long long)xcr0);

  hw.usable[TXATTN_ISA_AVX2] = 1;
  if (m2)
    lack(TXATTN_ISA_AVX2, m2);
  else if (!osxsave)
    set_why(TXATTN_ISA_AVX2, "OS has not enabled XSAVE (cpuid leaf 1 ecx bit 27 OSXSAVE is 0)");
  else if ((xcr0 & 0x6) != 0x6)
    set_why(TXATTN_ISA_AVX2, "OS has not enabled YMM state (XCR0=%s)", x);

  hw.usable[TXATTN_ISA_AVX512] = 1;
  if (m5)
    lack(TXATTN_ISA_AVX512, m5);
  else if (!hw.usable[TXATTN_ISA_AVX2])
    set_why(TXATTN_ISA_AVX512, "needs AVX2 too: %s", hw.why[TXATTN_ISA_AVX2]);
  else if ((xcr0 & 0xe0) != 0xe0)
    set_why(TXATTN_ISA_AVX512, "OS has not enabled ZMM state (XCR0=%s)", x);

  /* vdpbf16ps needs nothing of the OS beyond the AVX-512 state. */
  hw.usable[TXATTN_ISA_AVX512BF16] = 1;
  if (!((eax7_1 >> 5) & 1u))
    set_why(TXATTN_ISA_AVX512BF16, "CPU lacks AVX512_BF16 (cpuid leaf 7 subleaf 1 eax bit 5)");
  else if (!hw.usable[TXATTN_ISA_AVX512])
    set_why(TXATTN_ISA_AVX512BF16, "needs AVX-512 too: %s", hw.why[TXATTN_ISA_AVX512]);
}

static void detect(void) {
  uint32_t a, b, c, d, ecx1 = 0, ebx7 = 0, eax7_1 = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) ecx1 = c;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    ebx7 = b;
    if (a >= 1) { /* leaf 7's eax: its highest subleaf */
      __cpuid_count(7, 1, a, b, c, d);
      eax7_1 = a;
    }
  }
  detect_avx(ecx1, ebx7, eax7_1);
  set_why(TXATTN_ISA_NEON, "not an arm64 CPU");
}
#elif defined(__aarch64__)
static void detect(void) {
  hw.usable[TXATTN_ISA_NEON] = 1;
  if (!(getauxval(AT_HWCAP) & HWCAP_ASIMD))
    set_why(TXATTN_ISA_NEON, "CPU lacks Advanced SIMD (HWCAP_ASIMD not in AT_HWCAP)");
  set_why(TXATTN_ISA_AVX2, "not an x86-64 CPU");
  set_why(TXATTN_ISA_AVX512, "not an x86-64 CPU");
  set_why(TXATTN_ISA_AVX512BF16, "not an x86-64 CPU");
}
#else
static void detect(void) {
  set_why(TXATTN_ISA_AVX2, "not an x86-64 CPU");
  set_why(TXATTN_ISA_AVX512, "not an x86-64 CPU");
  set_why(TXATTN_ISA_AVX512BF16, "not an x86-64 CPU");
  set_why(TXATTN_ISA_NEON, "not an arm64 CPU");
}
#endif

static void detect_once(void) {
  hw.usable[TXATTN_ISA_SCALAR] = 1;
  detect();
}

/* The cap's level for the value v of TXATTN_MAX_ISA, or -1 when v is unset or unknown (then *note
   says why: a typo must not make context creation fail, but it must not pass unnoticed either). */
static int max_isa_level(const char *v, char *note, size_t size) {
  note[0] = '\0';
  if (v == NULL || v[0] == '\0') return -1;
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (strcasecmp(v, txattn_isa_name((txattn_isa)i)) == 0) return isa_levels[i];
  snprintf(note, size,
           "unknown value \"%.40s\" ignored (use scalar, avx2, avx512, avx512bf16 or neon)", v);
  txattn__log("TXATTN_MAX_ISA: %s", note);
  return -1;
}

void txattn__isa_state_get(txattn__isa_state *st) {
  pthread_once(&hw_once, detect_once);
  const char *v = getenv("TXATTN_MAX_ISA");
  int cap = max_isa_level(v, st->cap_note, sizeof st->cap_note);
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++) {
    st->usable[i] = hw.usable[i];
    memcpy(st->why[i], hw.why[i], sizeof st->why[i]);
    if (st->usable[i] && cap >= 0 && isa_levels[i] > cap) {
      st->usable[i] = 0;
      snprintf(st->why[i], sizeof st->why[i], "capped by TXATTN_MAX_ISA=%.40s", v);
    }
  }
}

unsigned txattn__isa_hw_mask(void) {
  pthread_once(&hw_once, detect_once);
  unsigned mask = 0;
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (hw.usable[i]) mask |= 1u << i;
  return mask;
}
