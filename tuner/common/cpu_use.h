/* SPDX-License-Identifier: MIT */
/* What other processes took of the CPUs while txtune measured: the machine's busy time
   (/proc/stat) less txtune's own CPU time (getrusage), and what the hypervisor stole. A tuner's
   timings measure whatever else runs: `txtune profile` says so when it was not alone. */
#ifndef TXTUNE_CPU_USE_H
#define TXTUNE_CPU_USE_H

/* Other processes using this much of a core on average make timings unreliable enough to say so
   ("Beside a busy process", docs/measurements.md). */
#define TX_CPU_OTHERS_WARN 0.25

typedef struct tx_cpu_use {
  double wall_s;  /* tx_clock() */
  double busy_s;  /* every CPU's user, nice, system, irq and softirq time; < 0: unknown */
  double steal_s; /* every CPU's time the hypervisor gave to another guest; < 0: unknown */
  double self_s;  /* this process's user and system time, all its threads */
} tx_cpu_use;

/* Parses the "cpu " line of /proc/stat's text (clock ticks of ticks_per_s): the busy and stolen
   seconds. Returns 0, or -1 if the text has no such line. */
int tx_cpu_use_parse(const char *proc_stat, double ticks_per_s, double *busy_s, double *steal_s);

/* The counters now (busy_s and steal_s < 0 where /proc/stat cannot be read). */
void tx_cpu_use_now(tx_cpu_use *u);

/* Between a and b: the cores' worth of CPU the other processes used on average (their busy time
   over the wall time) and the hypervisor stole; both < 0 if unknown. */
void tx_cpu_use_others(const tx_cpu_use *a, const tx_cpu_use *b, double *others_cores,
                       double *steal_cores);

/* The counters over `seconds` of sleep: what others use while txtune does nothing. */
void tx_cpu_use_sample(double seconds, double *others_cores, double *steal_cores);

#endif
