/* The direct path for few query rows per kv head (decode): the tiled online softmax over K and V
 * rows copied chunk by chunk, without the tiled path's packing into panels.
 *
 * Why: with one query block of at most 4 rows per head (n_q = 1 with a GQA group of up to 4), the
 * tiled path packs (transposes) every key block for a single use and runs 6-row micro-kernels over
 * the 4 rows; packing took 55% of its time (tiled.avx2, n_q = 1, d = 128, heads 32 / 8, K and V in
 * L3). Here each K and V row is copied once into an L1 chunk buffer, a few rows at a time between
 * the micro-kernels of the chunk before, so that the copy's cache misses overlap their arithmetic
 * (on this Zen 2 VM, loads whose values feed the FMAs right away did not overlap with them: time
 * was memory time plus compute time). Same shape with n_kv = 32768 (K and V 268 MB): one thread
 * 24.4 ms against 39.0 for the tiled path, two threads 13.6 against 20.1.
 *
 * Same semantics as the tiled path (plugins/tiled/tiled_algo.h): scores in base 2, deferred
 * normalisation, a key a row does not see never multiplied into it, NaN spread over the row.
 */
#ifndef TILED_OMP_DIRECT_H
#define TILED_OMP_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "tiled_internal.h"

/* Rows per (batch, kv head) up to which the direct path replaces the tiled one (n_q x group): one
   register group. With 8 rows (two groups) the tiled path was as fast (n_kv = 16384, d = 128:
   2.39 ms both) or faster (n_kv = 1024: 133 us against 147). */
#define TOMP_DIRECT_MAX_ROWS 4
/* Keys per chunk: two chunks' K and V rows (32 KiB at d = 128) stay in L1 and L2. Decode,
   n_kv = 32768, d = 128, heads 32 / 8, two threads: 13.4 ms with 16 keys, 13.9 with 32. */
#define TOMP_DIRECT_CHUNK 16

/* One thread's scratch for the direct path (64-byte aligned arrays). */
typedef struct tomp_direct_scratch {
  float *q;         /* rows x dqkp: queries times qsign, zero beyond d_qk and beyond the last row */
  float *kc, *vc;   /* two chunks' K and V rows, padded with zeros to dqkp and dvp floats */
  float *s;         /* rows x TOMP_DIRECT_CHUNK: scores, then probabilities */
  float *acc;       /* rows x dvp: unnormalised outputs */
  float *m, *l;     /* rows: running max (base 2) and sum */
  float *alpha;     /* rows: this chunk's rescale factors */
  int64_t *lo, *hi; /* rows: visible keys clipped to the range being processed */
} tomp_direct_scratch;

/* Rows [t0, t1) of (b, kvh), at most TOMP_DIRECT_MAX_ROWS, against keys [k0, k1): writes the output
   rows when out is NULL, else the partial triples (as tiled_ops.run_krange does). */
typedef void (*tomp_direct_fn)(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                               int64_t k0, int64_t k1, const tiled_partial *out,
                               const tomp_direct_scratch *s);

size_t tomp_direct_scratch_bytes(const tiled_geom *g, int w);
void tomp_direct_scratch_carve(const tiled_geom *g, int w, void *mem, tomp_direct_scratch *s);

extern const tomp_direct_fn tomp_direct_scalar;
#if defined(__x86_64__)
extern const tomp_direct_fn tomp_direct_avx2;
extern const tomp_direct_fn tomp_direct_avx512;
#endif
#if defined(__aarch64__)
extern const tomp_direct_fn tomp_direct_neon;
#endif

#endif /* TILED_OMP_DIRECT_H */
