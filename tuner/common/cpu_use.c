/* SPDX-License-Identifier: MIT */
/* Other processes' share of the CPUs (cpu_use.h). Linux: /proc/stat; elsewhere unknown. */
#define _POSIX_C_SOURCE 200809L
#include "cpu_use.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

int tx_cpu_use_parse(const char *proc_stat, double ticks_per_s, double *busy_s, double *steal_s) {
  /* the aggregate line comes first: "cpu  user nice system idle iowait irq softirq steal ..." */
  const char *line = proc_stat;
  while (line && strncmp(line, "cpu ", 4) != 0) {
    line = strchr(line, '\n');
    if (line) line++;
  }
  if (!line || !(ticks_per_s > 0)) return -1;
  unsigned long long v[8] = {0};
  int got = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
  if (got < 7) return -1; /* the kernels without steal (before 2.6.11) still give the rest */
  *busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / ticks_per_s;
  *steal_s = got >= 8 ? (double)v[7] / ticks_per_s : 0;
  return 0;
}

void tx_cpu_use_now(tx_cpu_use *u) {
  u->wall_s = tx_clock();
  u->busy_s = u->steal_s = -1;
  struct rusage ru;
  u->self_s = getrusage(RUSAGE_SELF, &ru) == 0
                  ? (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                        (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec
                  : 0;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return;
  char buf[512];
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[got] = '\0';
  double busy, steal;
  if (tx_cpu_use_parse(buf, (double)sysconf(_SC_CLK_TCK), &busy, &steal) == 0) {
    u->busy_s = busy;
    u->steal_s = steal;
  }
}

void tx_cpu_use_others(const tx_cpu_use *a, const tx_cpu_use *b, double *others_cores,
                       double *steal_cores) {
  double wall = b->wall_s - a->wall_s;
  *others_cores = *steal_cores = -1;
  if (a->busy_s < 0 || b->busy_s < 0 || !(wall > 0)) return;
  double others = (b->busy_s - a->busy_s) - (b->self_s - a->self_s);
  /* the counters tick at 100 Hz or so: a small negative difference is zero */
  *others_cores = others > 0 ? others / wall : 0;
  *steal_cores = b->steal_s >= a->steal_s ? (b->steal_s - a->steal_s) / wall : 0;
}

void tx_cpu_use_sample(double seconds, double *others_cores, double *steal_cores) {
  tx_cpu_use a, b;
  tx_cpu_use_now(&a);
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  tx_cpu_use_now(&b);
  tx_cpu_use_others(&a, &b, others_cores, steal_cores);
}
