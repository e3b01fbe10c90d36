/* SPDX-License-Identifier: MIT */
/* The round trip of a cache line between two CPUs this process may run on: how far apart the
   cores that a team's threads share data across are, right now. A virtual machine's host can move
   its vCPUs between near and far cores for minutes at a time, and threaded kernels that share data
   slow down with it ("The host moves the vCPUs", docs/measurements.md). `txtune profile` measures
   it before and after each n (the header's levels[].core_round_trip_ns and
   core_round_trip_end_ns) and `txtune compare` does not compare threaded points measured across
   such a change. */
#ifndef TXTUNE_CORE_LATENCY_H
#define TXTUNE_CORE_LATENCY_H

/* The median round trip in nanoseconds between the first CPU of this process's affinity mask and
   each of up to max_pairs others (about 1 ms each); -1 where it cannot be measured (one CPU, no
   thread affinity). The calling thread's affinity is restored. */
double tx_core_round_trip_ns(int max_pairs);

/* Round trips this many times apart mean the host moved the CPUs between the measurements. */
#define TX_CORE_ROUND_TRIP_CHANGE 1.5

#endif
