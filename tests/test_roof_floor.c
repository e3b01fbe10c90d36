/* SPDX-License-Identifier: MIT */
/* The least time a call can take on this machine (tuner/lab/roof_measure.c), which txtune profile
   refuses a timed call below: a call's flops at the FMA peak of its threads (16 times that for
   16-bit inputs, which matrix units may multiply), and the bytes it must read beyond the caches at
   the read bandwidth, each with the profile's slack; on made-up roofs. And the roofs measured here
   are figures at all. */
#include <criterion/criterion.h>
#include <string.h>

#include "roof_measure.h"

static char why[512];

Test(roof_floor, a_call_needs_its_flops_at_the_peak_of_its_threads) {
  const tx_roof_ceiling c = {.gflops_1t = 100, .read_gbs = 10, .threads = 2, .cache_bytes = 1e6};
  /* 1 GFLOP on 2 threads of 100 GFLOP/s at 4 x: 1.25 ms */
  cr_expect_float_eq(tx_roof_floor_s(&c, 2, 1e9, 0, 0, 4, why, sizeof why), 1.25e-3, 1e-12);
  cr_expect(strstr(why, "a call of 1 GFLOP needs at 4 x this machine's peak: 2 threads x 100 "
                        "GFLOP/s") == why,
            "%s", why);
  cr_expect_float_eq(tx_roof_floor_s(&c, 2, 1e9, 0, 1, 4, why, sizeof why), 1.25e-3 / 16, 1e-12);
  cr_expect(strstr(why, "x 16 (matrix units, for 16-bit inputs)") != NULL, "%s", why);
}

Test(roof_floor, a_call_needs_the_bytes_beyond_the_caches_at_the_read_bandwidth) {
  const tx_roof_ceiling c = {.gflops_1t = 100, .read_gbs = 10, .threads = 2, .cache_bytes = 1e6};
  /* 1 GB beyond 1 MB of caches at 4 x 10 GB/s: 25 ms, more than its flops need */
  cr_expect_float_eq(tx_roof_floor_s(&c, 1, 1e6, 1e9 + 1e6, 0, 4, why, sizeof why), 0.025, 1e-12);
  cr_expect(strstr(why, "a call that reads 1e+03 MB beyond the caches' 1 MB needs at 4 x this "
                        "machine's read bandwidth (10 GB/s on 2 threads") == why,
            "%s", why);
  /* what fits in the caches need not come from memory: its flops alone */
  cr_expect_float_eq(tx_roof_floor_s(&c, 1, 1e6, 1e6, 0, 4, why, sizeof why), 2.5e-6, 1e-15);
}

Test(roof_floor, without_a_roof_there_is_no_floor) {
  const tx_roof_ceiling c = {.gflops_1t = -1, .read_gbs = -1, .threads = 1, .cache_bytes = 0};
  cr_expect_eq(tx_roof_floor_s(&c, 1, 1e12, 1e12, 0, 4, why, sizeof why), 0);
  cr_expect_str_eq(why, "(no roof of this machine is known)");
}

Test(roof_floor, the_roofs_are_measured) {
  tx_roof_ceiling c;
  tx_roof_ceiling_measure(1u << TXATTN_ISA_SCALAR, 1, 1e6, &c);
  cr_expect_gt(c.gflops_1t, 0, "no FMA peak measured");
  cr_expect_gt(c.read_gbs, 0, "no read bandwidth measured");
  cr_expect_eq(c.threads, 1);
  cr_expect_eq(c.cache_bytes, 1e6);
}

/* Which FMA loops may run is the library's answer (txattn_machine_info.isa_mask), not a cpuid of
   txtune's own: an ISA outside the mask is not run, whatever the CPU has, and says why; the scalar
   loop always runs. */
Test(roof_floor, the_loops_follow_the_librarys_isa_mask) {
  tx_peak_isa isas[TX_PEAK_MAX_ISAS];
  size_t n = tx_peak_isas(0, isas);
  cr_assert_geq(n, 1);
  for (size_t i = 0; i < n; i++) {
    cr_expect_eq(isas[i].usable, isas[i].isa == TXATTN_ISA_SCALAR, "%s",
                 txattn_isa_name(isas[i].isa));
    if (!isas[i].usable) cr_expect(strstr(isas[i].why, "machine info") != NULL, "%s", isas[i].why);
  }
  n = tx_peak_isas(~0u, isas);
  for (size_t i = 0; i < n; i++) cr_expect(isas[i].usable, "%s", txattn_isa_name(isas[i].isa));
}
