/* The round trip of a cache line between two CPUs this process may run on: how far apart the
   cores that a team's threads share data across are, right now. On the 2-vCPU development VM the
   host moved the vCPUs for minutes at a time between cores close together (a round trip of 60-70
   ns) and far apart (about 470 ns, another core complex); in the far stretches a 2-thread
   tiled_omp call at h 2, n 128 took 93-130 us against 68 us (its threads read the K/V blocks the
   other packed), banded_omp's 67 us hardly moved, and two profiles taken either side of such a
   change disagreed at the 2-thread points of n 128 and 256. Each thread's FMA rate did not move
   (2 threads at 2.0 times one). `txtune profile` measures it before and after each n (the
   header's levels[].core_round_trip_ns and core_round_trip_end_ns) and `txtune compare` does not compare threaded points measured
   across such a change. */
#ifndef TXTUNE_CORE_LATENCY_H
#define TXTUNE_CORE_LATENCY_H

/* The median round trip in nanoseconds between the first CPU of this process's affinity mask and
   each of up to max_pairs others (about 1 ms each); -1 where it cannot be measured (one CPU, no
   thread affinity). The calling thread's affinity is restored. */
double tx_core_round_trip_ns(int max_pairs);

/* Round trips this many times apart mean the host moved the CPUs between the measurements. */
#define TX_CORE_ROUND_TRIP_CHANGE 1.5

#endif
