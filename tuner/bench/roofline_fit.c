/* SPDX-License-Identifier: MIT */
/* Each kernel against the roofs: its GFLOP/s as a fraction of the FMA peak of its own ISA at the
   thread count it ran on, and, when the shape is memory-bound, its GB/s (the bytes of the tensors
   in their element types: a 16-bit K and V count 2 bytes a value) as a fraction of the bandwidth
   at that count: the read bandwidth for decode, whose bytes are the KV cache read once, else the
   triad's. A decode's runs were also paired with read runs (tx_roofline_measure_paired): that
   fraction is shown beside it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "buffers.h"
#include "roofline.h"
#include "text_table.h"

tx_roof_work tx_roofline_work(const txattn_problem *p) {
  tx_roof_work w;
  w.flops = 2.0 * (double)(p->d_qk + p->d_v) * txattn_problem_visible_pairs(p);
  w.bytes = tx_buffers_bytes(p); /* Q and O rows, K and V rows, each in its type */
  w.decode = p->n_q == 1;
  snprintf(w.types, sizeof w.types, "q %s, k %s, v %s, o %s", txattn_dtype_name(p->q_type),
           txattn_dtype_name(p->k_type), txattn_dtype_name(p->v_type),
           txattn_dtype_name(p->o_type));
  return w;
}

static int count_index(const tx_roofline *r, int threads) {
  for (int c = 0; c < r->n_counts; c++)
    if (r->threads[c] == threads) return c;
  return -1;
}

static const tx_roof_peak *peak_of(const tx_roofline *r, const char *isa) {
  for (size_t i = 0; i < r->n_peaks; i++)
    if (strcmp(txattn_isa_name(r->peaks[i].isa.isa), isa) == 0) return &r->peaks[i];
  return NULL;
}

int tx_roofline_fit(const tx_roofline *r, const tx_roof_work *w, const tx_roof_kernel *k,
                    tx_roof_fit *out) {
  memset(out, 0, sizeof *out);
  int c = count_index(r, k->threads);
  if (k->seconds <= 0 || c < 0 || !k->isa) return 0;
  const tx_roof_peak *roof = peak_of(r, k->isa);
  /* A scalar kernel may still run SIMD code (masked.* calls OpenBLAS; the compiler vectorises
     loops for the baseline ISA): held to the scalar peak it could pass 100%. */
  if (roof && roof->isa.loop == &tx_peak_scalar) {
    const tx_roof_peak *simd = tx_roofline_best_simd(r, c);
    if (simd) {
      roof = simd;
      out->for_scalar = 1;
    }
  }
  if (!roof || roof->gflops[c] <= 0) return 0;
  out->roof = roof;
  out->peak_gflops = roof->gflops[c];
  out->gflops = 1e-9 * w->flops / k->seconds;
  out->fraction = out->gflops / out->peak_gflops;
  out->intensity = w->bytes > 0 ? w->flops / w->bytes : INFINITY;
  out->read_roof = w->decode && r->read_gbs[c] > 0;
  out->bandwidth_gbs = out->read_roof ? r->read_gbs[c] : r->triad_gbs[c];
  out->balance = out->bandwidth_gbs > 0 ? out->peak_gflops / out->bandwidth_gbs : INFINITY;
  out->memory_bound = out->intensity < out->balance;
  out->gbs = 1e-9 * w->bytes / k->seconds;
  out->bw_fraction = out->bandwidth_gbs > 0 ? out->gbs / out->bandwidth_gbs : NAN;
  return 1;
}

/* "78.3% (74.1-80.2, 14)": the median paired fraction, its range and the number of pairs. */
static void paired_cell(const tx_roof_paired *p, char *buf, size_t size) {
  if (p && p->pairs > 0)
    snprintf(buf, size, "%.1f%% (%.1f-%.1f, %d)", 100 * p->median, 100 * p->min, 100 * p->max,
             p->pairs);
  else
    snprintf(buf, size, "-");
}

/* The PAIRED cell is read only when the table has that column. */
static void fit_row(tx_table *t, const tx_roof_kernel *k, const tx_roof_fit *f) {
  char thr[16], roof[32], peak[32], gf[32], frac[32], ai[32], bal[32], gbs[32] = "-", bwf[32] = "-";
  char paired[64];
  snprintf(thr, sizeof thr, "%d", k->threads);
  snprintf(roof, sizeof roof, "%s%s", txattn_isa_name(f->roof->isa.isa),
           f->for_scalar ? " (a)" : "");
  snprintf(peak, sizeof peak, "%.1f", f->peak_gflops);
  snprintf(gf, sizeof gf, "%.2f", f->gflops);
  snprintf(frac, sizeof frac, "%.1f%%", 100 * f->fraction);
  snprintf(ai, sizeof ai, f->intensity < 1000 ? "%.3g" : "%.0f", f->intensity);
  snprintf(bal, sizeof bal, f->balance < 1000 ? "%.3g" : "%.0f", f->balance);
  if (f->memory_bound) {
    snprintf(gbs, sizeof gbs, "%.2f", f->gbs);
    snprintf(bwf, sizeof bwf, "%.1f%% %s", 100 * f->bw_fraction, f->read_roof ? "read" : "triad");
  }
  paired_cell(k->paired, paired, sizeof paired);
  const char *cells[] = {k->name, thr, roof, peak, gf, frac, ai, bal, gbs, bwf, paired};
  tx_table_add(t, cells);
}

static void print_scalar_note(const tx_roofline *r, FILE *f) {
  const tx_roof_peak *sp = peak_of(r, "scalar");
  fprintf(f,
          "  (a) a scalar kernel held to the best SIMD peak: it may still run SIMD code (masked.*\n"
          "  calls OpenBLAS; compilers vectorise for the baseline ISA). The scalar mul+add peak\n"
          "  is");
  for (int c = 0; c < r->n_counts; c++)
    fprintf(f, "%s %.1f GFLOP/s on %d thread%s", c ? "," : "", sp ? sp->gflops[c] : NAN,
            r->threads[c], r->threads[c] == 1 ? "" : "s");
  fprintf(f, ".\n");
}

void tx_roofline_print_fits(const tx_roofline *r, const tx_roof_work *w, const tx_roof_kernel *ks,
                            size_t n, FILE *f) {
  int any_paired = 0;
  for (size_t i = 0; i < n; i++) any_paired |= ks[i].paired != NULL;
  tx_table t;
  tx_table_init(&t, any_paired ? "KERNEL|>THREADS|ROOF|>PEAK GFLOP/s|>GFLOP/s|>% PEAK|>FLOP/B|"
                                 ">BALANCE|>GB/s|>% BW|>PAIRED % READ (RANGE, PAIRS)"
                               : "KERNEL|>THREADS|ROOF|>PEAK GFLOP/s|>GFLOP/s|>% PEAK|>FLOP/B|"
                                 ">BALANCE|>GB/s|>% BW");
  int rows = 0, any_scalar = 0;
  for (size_t i = 0; i < n; i++) {
    tx_roof_fit fit;
    if (!tx_roofline_fit(r, w, &ks[i], &fit)) continue;
    fit_row(&t, &ks[i], &fit);
    any_scalar |= fit.for_scalar;
    rows++;
  }
  if (rows == 0) {
    fprintf(f, "\nroofline: no measured kernel has a roof for its ISA and thread count\n");
  } else {
    fprintf(f, "\nagainst the roofline (each kernel at the thread count it ran on):\n");
    tx_table_print(&t, f, "  ");
    fprintf(f,
            "  %% PEAK: GFLOP/s / the FMA peak of the kernel's ISA at its thread count.\n"
            "  FLOP/B: flops / bytes of Q, K, V and O each read or written once, in their types\n"
            "  (%s). BALANCE: peak / bandwidth; below it the shape is\n"
            "  memory-bound and GB/s (those bytes / median time) is shown as %% BW of the\n"
            "  bandwidth at that thread count in the table above: the read bandwidth for decode\n"
            "  (n_q = 1: the KV cache read once), else the triad's.\n",
            w->types);
    if (any_paired)
      fprintf(f, "  PAIRED %% READ: each timed run of the kernel came right after a read run (the\n"
                 "  read row's loop over the same arrays, at the kernel's thread count, >= the\n"
                 "  shortest timed run); per round, (bytes / that run's time per call) / (that\n"
                 "  read run's GB/s); the median over the rounds, their smallest and largest, and\n"
                 "  how many (the calibration runs are not paired: \"-\" with --reps 1). A ratio\n"
                 "  within one round cancels the machine's drift, which %% BW, against a roof\n"
                 "  measured seconds before, does not.\n");
    if (any_scalar) print_scalar_note(r, f);
  }
  tx_table_free(&t);
}

void tx_roofline_json_fit(tx_json *j, const tx_roofline *r, const tx_roof_work *w,
                          const tx_roof_kernel *k) {
  tx_roof_fit f;
  if (!tx_roofline_fit(r, w, k, &f)) {
    tx_json_null(j);
    return;
  }
  tx_json_begin_object(j);
  tx_json_kv_int(j, "threads", k->threads);
  tx_json_kv_string(j, "roof_isa", txattn_isa_name(f.roof->isa.isa));
  tx_json_kv_bool(j, "scalar_held_to_simd_peak", f.for_scalar);
  tx_json_kv_double(j, "peak_gflops", f.peak_gflops);
  tx_json_kv_double(j, "fraction_of_peak", f.fraction);
  tx_json_kv_double(j, "flop_per_byte", f.intensity);
  tx_json_kv_double(j, "balance_flop_per_byte", f.balance);
  tx_json_kv_bool(j, "memory_bound", f.memory_bound);
  tx_json_kv_double(j, "gbs", f.gbs);
  tx_json_kv_double(j, "bytes", w->bytes);
  tx_json_kv_string(j, "bandwidth_kind", f.read_roof ? "read" : "triad");
  tx_json_kv_double(j, "bandwidth_gbs", f.bandwidth_gbs);
  tx_json_kv_double(j, "fraction_of_bandwidth", f.memory_bound ? f.bw_fraction : NAN);
  tx_json_key(j, "paired"); /* null: not a decode, so not paired */
  const tx_roof_paired *p = k->paired;
  if (!p) {
    tx_json_null(j);
  } else {
    tx_json_begin_object(j);
    tx_json_kv_string(j, "how",
                      "per round, (bytes / the kernel run's time per call) / (the read run right "
                      "before it, GB/s); median and spread over the rounds");
    tx_json_kv_int(j, "pairs", p->pairs);
    const int any = p->pairs > 0; /* none with --reps 1: the fractions are null */
    tx_json_kv_double(j, "fraction_median", any ? p->median : NAN);
    tx_json_kv_double(j, "fraction_min", any ? p->min : NAN);
    tx_json_kv_double(j, "fraction_q1", any ? p->q1 : NAN);
    tx_json_kv_double(j, "fraction_q3", any ? p->q3 : NAN);
    tx_json_kv_double(j, "fraction_max", any ? p->max : NAN);
    tx_json_kv_double(j, "read_gbs_median", any ? p->read_gbs : NAN);
    tx_json_end_object(j);
  }
  tx_json_end_object(j);
}
