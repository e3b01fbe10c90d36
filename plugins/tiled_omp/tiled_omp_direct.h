/* The direct path for few query rows per kv head (decode): the tiled online softmax, but reading K
 * and V rows where they are, without packing them.
 *
 * Why: with one query block of a handful of rows per head (n_q = 1, a GQA group of 4), the tiled
 * path packs every key block for a single use. Measured on Zen 2 (tiled.avx2, n_q = 1, n_kv = 4096,
 * d = 128, heads 32 / 8): packing K and V took 55% of the time and the 6-row micro-kernels over 4
 * real rows most of the rest, about 350 cycles per key, so two threads read K and V at 12 GB/s
 * where the memory gives 25. Here a key costs one pass over its K row (4 rows x 2 keys of dot
 * products) and one over its V row (4 rows x NT vectors of outputs), about 60 cycles for d = 128 in
 * AVX2, well under what the memory takes to deliver the row, and K and V stream sequentially.
 *
 * Same semantics as the tiled path (plugins/tiled/tiled_algo.h): scores in base 2, deferred
 * normalisation, a key a row does not see never multiplied into it, NaN spread over the row.
 */
#ifndef TILED_OMP_DIRECT_H
#define TILED_OMP_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "tiled_internal.h"

/* Rows per (batch, kv head) up to which the direct path replaces the tiled one (n_q x group). */
#define TOMP_DIRECT_MAX_ROWS 8
/* Keys per chunk: the chunk's scores and probabilities are a TOMP_DIRECT_MAX_ROWS x 64 tile, and its
   V rows (64 x d_v floats, 32 KiB at d_v = 128) are read once per column tile from L1/L2. */
#define TOMP_DIRECT_CHUNK 32

/* One thread's scratch for the direct path (64-byte aligned arrays). */
typedef struct tomp_direct_scratch {
  float *q;         /* rows x dqkp: queries times qsign, zero beyond d_qk and beyond the last row */
  float *kc, *vc;   /* the chunk's K and V rows, padded with zeros to dqkp and dvp floats */
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
