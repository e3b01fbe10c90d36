/* SPDX-License-Identifier: MIT */
/* What other processes took of the CPUs (tuner/common/cpu_use.c): /proc/stat's text parsed on
   made-up counters, the arithmetic of the share, and on Linux the counters of this very process. */
#include <math.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "cpu_use.h"
#include "timing.h"

Test(cpu_use, the_aggregate_line_gives_busy_and_stolen_seconds) {
  const char *text = "cpu  100 20 30 1000 5 6 7 8 0 0\n"
                     "cpu0 50 10 15 500 2 3 3 4 0 0\n"
                     "cpu1 50 10 15 500 3 3 4 4 0 0\n"
                     "intr 12345\n";
  double busy = -1, steal = -1;
  cr_assert_eq(tx_cpu_use_parse(text, 100, &busy, &steal), 0);
  /* user + nice + system + irq + softirq; idle and iowait are not busy */
  cr_expect_float_eq(busy, (100 + 20 + 30 + 6 + 7) / 100.0, 1e-12);
  cr_expect_float_eq(steal, 0.08, 1e-12);
}

Test(cpu_use, the_line_is_found_after_others_and_per_cpu_lines_are_not_it) {
  double busy = -1, steal = -1;
  cr_expect_eq(tx_cpu_use_parse("ctxt 1\ncpu  1 0 1 9 0 0 0 2\n", 10, &busy, &steal), 0);
  cr_expect_float_eq(busy, 0.2, 1e-12);
  cr_expect_float_eq(steal, 0.2, 1e-12);
  cr_expect_eq(tx_cpu_use_parse("cpu0 1 2 3 4 5 6 7 8\n", 100, &busy, &steal), -1);
}

Test(cpu_use, old_kernels_without_steal_and_broken_text) {
  double busy = -1, steal = -1;
  cr_expect_eq(tx_cpu_use_parse("cpu  10 0 10 100 0 0 0\n", 100, &busy, &steal), 0);
  cr_expect_float_eq(busy, 0.2, 1e-12);
  cr_expect_float_eq(steal, 0, 1e-12);
  cr_expect_eq(tx_cpu_use_parse("cpu  10 0 x\n", 100, &busy, &steal), -1);
  cr_expect_eq(tx_cpu_use_parse("", 100, &busy, &steal), -1);
  cr_expect_eq(tx_cpu_use_parse("cpu  1 2 3 4 5 6 7 8\n", 0, &busy, &steal), -1);
}

Test(cpu_use, others_are_the_busy_time_less_this_process_over_the_wall_time) {
  tx_cpu_use a = {.wall_s = 10, .busy_s = 100, .steal_s = 1, .self_s = 5};
  tx_cpu_use b = {.wall_s = 12, .busy_s = 104, .steal_s = 1.5, .self_s = 7};
  double others, steal;
  tx_cpu_use_others(&a, &b, &others, &steal);
  cr_expect_float_eq(others, 1.0, 1e-12); /* (4 - 2) s over 2 s */
  cr_expect_float_eq(steal, 0.25, 1e-12);
  /* counters that tick coarser than getrusage: a little less busy time than our own is none */
  b.busy_s = 101.9;
  tx_cpu_use_others(&a, &b, &others, &steal);
  cr_expect_float_eq(others, 0, 1e-12);
  /* unknown counters, or no time between the two: unknown */
  b.busy_s = -1;
  tx_cpu_use_others(&a, &b, &others, &steal);
  cr_expect_lt(others, 0);
  cr_expect_lt(steal, 0);
  b = a;
  tx_cpu_use_others(&a, &b, &others, &steal);
  cr_expect_lt(others, 0);
}

#ifdef __linux__
/* This process's own work shows in both counters: busy time grows at least as much as its own CPU
   time, less the ticks' rounding. */
Test(cpu_use, this_process_work_is_counted_busy_and_its_own) {
  tx_cpu_use a, b;
  tx_cpu_use_now(&a);
  cr_assert_geq(a.busy_s, 0, "/proc/stat unreadable");
  /* spin until getrusage counts 0.2 s of this process (however busy the machine is: ctest runs
     other tests beside this one), within 30 s */
  volatile double x = 0;
  double give_up = tx_clock() + 30;
  do {
    for (int i = 0; i < 1000000; i++) x += 1;
    tx_cpu_use_now(&b);
  } while (b.self_s - a.self_s < 0.2 && tx_clock() < give_up);
  double self = b.self_s - a.self_s, busy = b.busy_s - a.busy_s;
  cr_assert_geq(self, 0.2, "getrusage counted %.3f s in 30 s of spinning", self);
  cr_expect_geq(busy, self - 0.05, "busy %.3f s < own %.3f s", busy, self);
}
#endif
