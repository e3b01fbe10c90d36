/* SPDX-License-Identifier: MIT */
/* txtune bench as JSON (bench_json.c): one problem's object, or the sweep document. */
#ifndef TXTUNE_BENCH_JSON_H
#define TXTUNE_BENCH_JSON_H

#include <stddef.h>

#include "bench.h"
#include "json.h"

/* The object `txtune bench --json` prints for a single problem. */
void tx_bench_json_single(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt);
/* The sweep document (docs/bench_sweep.md): machine, settings, and every point. */
void tx_bench_json_sweep(tx_json *j, const tx_bench_setup *s, const txattn_context *ctx,
                         const tx_bench_point *pts, size_t n_pts);

#endif
