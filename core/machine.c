/* CPU count and cache sizes, best effort: sysconf reports what glibc reads from cpuid or sysfs,
 * which in VMs is often implausible (a whole socket's L3, or 0). Values outside a plausible range
 * fall back to a typical size, so cache-derived block sizes stay sane. (The tuner issue replaces
 * this with hwloc.) */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "cpu.h"

#define KIB INT64_C(1024)
#define MIB (KIB * KIB)

int txattn__online_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int64_t plausible(long v, int64_t lo, int64_t hi, int64_t fallback) {
  return v >= lo && v <= hi ? (int64_t)v : fallback;
}

static txattn_machine caches;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static void read_caches(void) {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  long sharers = sysconf(_SC_NPROCESSORS_ONLN); /* assume one L3 for the machine */
  if (l3 > 0 && sharers > 1) l3 /= sharers;
  caches.l1d_bytes = plausible(sysconf(_SC_LEVEL1_DCACHE_SIZE), 16 * KIB, 256 * KIB, 32 * KIB);
  caches.l2_bytes = plausible(sysconf(_SC_LEVEL2_CACHE_SIZE), 256 * KIB, 8 * MIB, 1 * MIB);
  caches.l3_bytes = plausible(l3, 1 * MIB, 64 * MIB, 8 * MIB);
}

void txattn__machine_get(txattn_machine *m) {
  pthread_once(&caches_once, read_caches);
  *m = caches;
  m->struct_size = sizeof *m;
  m->n_cores = txattn__online_cpus();
}
