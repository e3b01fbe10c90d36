/* SPDX-License-Identifier: MIT */
/* The least time a call can take on this machine (roof_floor.h): no kernel computes faster than
   the machine can. */
#include "roof_floor.h"

#include <math.h>
#include <stdio.h>

#include "roof_measure.h"

/* Each roof is the best of many short runs: on a busy machine some of them get a core (or the
   memory) to themselves, and a roof measured low would refuse honest kernels. */
#define CEILING_MIN_RUN_S 0.002
#define CEILING_RUNS      30
#define CEILING_LIMIT_S   0.15
#define MIB               (1024.0 * 1024.0)

void tx_roof_ceiling_measure(unsigned isa_mask, int threads, double cache_bytes,
                             tx_roof_ceiling *c) {
  tx_timing_opts t = {
      .min_run_s = CEILING_MIN_RUN_S, .runs = CEILING_RUNS, .limit_s = CEILING_LIMIT_S};
  tx_peak_isa isas[TX_PEAK_MAX_ISAS];
  size_t n = tx_peak_isas(isa_mask, isas);
  *c = (tx_roof_ceiling){
      .gflops_1t = -1, .read_gbs = -1, .threads = threads, .cache_bytes = cache_bytes};
  /* every loop, the scalar one too: under an emulator (qemu) it may outrun the SIMD ones */
  for (size_t i = 0; i < n; i++)
    if (isas[i].usable) c->gflops_1t = fmax(c->gflops_1t, tx_peak_gflops(isas[i].loop, 1, &t));
  /* arrays beyond the caches, so that the reads come from memory */
  double bytes = fmin(fmax(cache_bytes, 64 * MIB), 512 * MIB);
  tx_stream_arrays s;
  if (tx_stream_alloc(&s, (size_t)bytes) != 0) return;
  c->read_gbs = tx_stream_read_gbs(&s, threads, &t);
  tx_stream_free(&s);
}

double tx_roof_floor_s(const tx_roof_ceiling *c, int threads, double flops, double bytes,
                       int half_inputs, double slack, char *why, size_t size) {
  const double units = half_inputs ? TX_ROOF_MATRIX_UNITS : 1;
  const double peak = c->gflops_1t * (double)threads * units; /* GFLOP/s */
  const double beyond = bytes - c->cache_bytes;
  const double t_flop = c->gflops_1t > 0 ? flops / (slack * peak * 1e9) : 0;
  const double t_read = c->read_gbs > 0 && beyond > 0 ? beyond / (slack * c->read_gbs * 1e9) : 0;
  if (t_flop <= 0 && t_read <= 0)
    snprintf(why, size, "(no roof of this machine is known)");
  else if (t_flop >= t_read)
    snprintf(why, size,
             "a call of %.3g GFLOP needs at %g x this machine's peak: %d thread%s x %.3g GFLOP/s "
             "(the best FMA peak of one thread, measured)%s",
             1e-9 * flops, slack, threads, threads == 1 ? "" : "s", c->gflops_1t,
             half_inputs ? " x 16 (matrix units, for 16-bit inputs)" : "");
  else
    snprintf(why, size,
             "a call that reads %.3g MB beyond the caches' %.3g MB needs at %g x this machine's "
             "read bandwidth (%.3g GB/s on %d threads, measured)",
             1e-6 * beyond, 1e-6 * c->cache_bytes, slack, c->read_gbs, c->threads);
  return fmax(t_flop, t_read);
}
