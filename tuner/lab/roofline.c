/* SPDX-License-Identifier: MIT */
/* `txtune bench --roofline` (roofline.h): the roofs measured in the same run as the kernels, in
   which order, and the header table and JSON object that report them; then each kernel against
   them: its GFLOP/s as a fraction of the FMA peak of its own ISA at the thread count it ran on,
   and, when the shape is memory-bound, its GB/s (the bytes of the tensors in their element types:
   a 16-bit K and V count 2 bytes a value) as a fraction of the bandwidth at that count: the read
   bandwidth for decode, whose bytes are the KV cache read once, else the triad's. A decode's runs
   are also paired with read runs (tx_roofline_measure_paired): that fraction is shown beside it. */
#define _GNU_SOURCE /* getloadavg, sched_getaffinity */
#include "roofline.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buffers.h"
#include "text_table.h"

#define MIB          (size_t)(1024 * 1024)
#define ROOF_RUNS    3    /* best of: a roof is what the machine reaches, so few runs suffice */
#define ROOF_LIMIT_S 2.0  /* per measurement, so a slow machine (or qemu) still finishes */
#define GEMM_N       2048 /* the size the sgemm figures are for */

void tx_roofline_args_init(tx_roofline_args *a) {
  a->enabled = 0;
  a->gemm_n = a->stream_mib = 0;
}

void tx_roofline_opts(tx_roofline_args *a, tx_opt *o) {
  o[0] = tx_opt_flag("roofline", &a->enabled,
                     "measure the machine's roofs first, show each kernel against them");
  o[1] = tx_opt_int("gemm-n", &a->gemm_n, "N", "sgemm size N x N x N for --roofline [2048]", 64,
                    16384);
  o[2] = tx_opt_int("stream-mib", &a->stream_mib, "MIB",
                    "bandwidth array size for --roofline [4 x L3, at least 64]", 1, 65536);
}

int tx_roofline_check_args(const tx_cmd_spec *spec, const tx_roofline_args *a) {
  if (!a->enabled && (a->gemm_n || a->stream_mib))
    return tx_args_usage_error(spec, "--%s needs --roofline", a->gemm_n ? "gemm-n" : "stream-mib");
  return 0;
}

/* STREAM's rule: each array at least 4 times the last-level cache. */
static size_t stream_bytes(const tx_roofline_args *a, size_t l3) {
  if (a->stream_mib) return (size_t)a->stream_mib * MIB;
  size_t bytes = 4 * l3;
  if (bytes < 64 * MIB) bytes = 64 * MIB;
  if (bytes > 512 * MIB) bytes = 512 * MIB; /* an implausible L3 from a VM must not eat the RAM */
  return bytes;
}

static void measure_peaks(tx_roofline *r, unsigned isa_mask, const tx_timing_opts *t) {
  tx_peak_isa isas[TX_PEAK_MAX_ISAS];
  r->n_peaks = tx_peak_isas(isa_mask, isas);
  for (size_t i = 0; i < r->n_peaks; i++) {
    tx_roof_peak *p = &r->peaks[i];
    p->isa = isas[i];
    for (int c = 0; c < r->n_counts; c++)
      p->gflops[c] = p->isa.usable ? tx_peak_gflops(p->isa.loop, r->threads[c], t) : -1;
  }
}

/* Keeps b and c in r->stream for the paired read runs (tx_roofline_measure_paired). */
static int measure_memory(tx_roofline *r, const tx_timing_opts *t) {
  tx_stream_arrays s;
  if (tx_stream_alloc(&s, r->stream_bytes) != 0) {
    fprintf(stderr, "txtune bench: --roofline: cannot allocate 3 x %zu MiB for the bandwidth\n",
            r->stream_bytes / MIB);
    return TX_EXIT_FAIL;
  }
  for (int c = 0; c < r->n_counts; c++) {
    r->triad_gbs[c] = tx_stream_triad_gbs(&s, r->threads[c], t);
    r->read_gbs[c] = tx_stream_read_gbs(&s, r->threads[c], t);
  }
  free(s.a); /* the triad's output: the read runs use b and c only */
  s.a = NULL;
  r->stream = s;
  return 0;
}

static int measure_sgemm(tx_roofline *r, const tx_timing_opts *t) {
  tx_sgemm_bufs g;
  if (tx_sgemm_alloc(&g, r->gemm_n) != 0) {
    fprintf(stderr, "txtune bench: --roofline: cannot allocate the %lld^2 sgemm matrices\n",
            (long long)r->gemm_n);
    return TX_EXIT_FAIL;
  }
  for (int c = 0; c < r->n_counts; c++) r->sgemm_gflops[c] = tx_sgemm_gflops(&g, r->threads[c], t);
  tx_sgemm_free(&g);
  return 0;
}

int tx_roofline_measure(const tx_roofline_args *a, const txattn_machine_info *m, int threads,
                        double min_run_s, tx_roofline *r) {
  double start = tx_clock(), load[1];
  *r = (tx_roofline){.n_counts = threads > 1 ? 2 : 1,
                     .threads = {1, threads},
                     .gemm_n = a->gemm_n ? a->gemm_n : GEMM_N,
                     .l3_bytes = (size_t)m->hw_cache_total_bytes[2],
                     .min_run_s = min_run_s,
                     .runs = ROOF_RUNS,
                     .load_before = getloadavg(load, 1) == 1 ? load[0] : -1};
  r->stream_bytes = stream_bytes(a, r->l3_bytes);
  tx_timing_opts t = {.min_run_s = min_run_s, .runs = ROOF_RUNS, .limit_s = ROOF_LIMIT_S};
  measure_peaks(r, m->isa_mask, &t);
  int rc = measure_sgemm(r, &t);
  if (rc == 0) rc = measure_memory(r, &t);
  r->seconds = tx_clock() - start;
  return rc;
}

void tx_roofline_free(tx_roofline *r) {
  tx_stream_free(&r->stream);
}

/* ---- a decode's timed runs paired with read runs ---- */

int tx_roofline_pairs(const tx_roofline *r, const tx_roof_work *w) {
  return r && r->stream.b && w->decode;
}

/* One entry of the interleaved measurement: a read pass or a kernel call. */
typedef struct paired_entry {
  tx_run_fn fn;
  void *arg;
} paired_entry;

static txattn_status run_entry(void *arg) {
  const paired_entry *e = arg;
  return e->fn(e->arg);
}

/* v (n > 0) sorted ascending: the q-quantile, interpolated between neighbours. */
static double quantile(const double *v, size_t n, double q) {
  double x = q * (double)(n - 1);
  size_t i = (size_t)x;
  return i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* Kernel run k pairs with read run k for k >= 1: both are made in round k, the read run first
   (tx_time). scratch holds one value per run. */
static tx_roof_paired pair_up(const double *read_s, int read_runs, const double *kernel_s,
                              int kernel_runs, double read_bytes, double bytes, double *scratch) {
  tx_roof_paired p = {0};
  const int n = read_runs < kernel_runs ? read_runs : kernel_runs;
  if (n < 2) return p;
  const size_t m = (size_t)(n - 1);
  p.pairs = n - 1;
  for (size_t k = 1; k <= m; k++) scratch[k - 1] = read_bytes / read_s[k];
  p.read_gbs = 1e-9 * tx_sort_median(scratch, m);
  for (size_t k = 1; k <= m; k++) scratch[k - 1] = (bytes / kernel_s[k]) / (read_bytes / read_s[k]);
  p.median = tx_sort_median(scratch, m);
  p.min = scratch[0];
  p.max = scratch[m - 1];
  p.q1 = quantile(scratch, m, 0.25);
  p.q3 = quantile(scratch, m, 0.75);
  return p;
}

void tx_roofline_measure_paired(tx_roofline *r, double bytes, tx_run_fn fn, void *const *args,
                                const int *threads, size_t n, const tx_timing_opts *o,
                                tx_timing *tm, txattn_status *status, tx_roof_paired *out) {
  tx_timing_opts to = *o;
  to.runs = to.runs < 1 ? 1 : to.runs > 1000 ? 1000 : to.runs;
  const size_t want = (size_t)to.runs, n2 = 2 * n;
  paired_entry *ent = calloc(n2 + 1, sizeof *ent);
  tx_stream_run *reads = calloc(n + 1, sizeof *reads);
  void **argp = calloc(n2 + 1, sizeof *argp);
  tx_timing *tm2 = calloc(n2 + 1, sizeof *tm2);
  txattn_status *st2 = calloc(n2 + 1, sizeof *st2);
  double *runs = calloc(n2 * want + 1, sizeof *runs), *scratch = calloc(want + 1, sizeof *scratch);
  for (size_t i = 0; i < n; i++) out[i] = (tx_roof_paired){0};
  if (!ent || !reads || !argp || !tm2 || !st2 || !runs || !scratch) {
    tx_time(fn, args, n, o, tm, status, NULL); /* unpaired */
  } else {
    for (size_t i = 0; i < n; i++) {
      reads[i] = (tx_stream_run){.s = &r->stream, .threads = threads[i]};
      ent[2 * i] = (paired_entry){tx_stream_read_pass, &reads[i]};
      ent[2 * i + 1] = (paired_entry){fn, args[i]};
    }
    for (size_t i = 0; i < n2; i++) argp[i] = &ent[i];
    tx_time(run_entry, argp, n2, &to, tm2, st2, runs);
    const double read_bytes = tx_stream_read_bytes(&r->stream);
    for (size_t i = 0; i < n; i++) {
      const size_t rd = 2 * i, k = 2 * i + 1;
      status[i] = st2[k];
      if (st2[k] != TXATTN_OK) continue;
      tm[i] = tm2[k];
      if (st2[rd] == TXATTN_OK)
        out[i] = pair_up(runs + rd * want, tm2[rd].runs, runs + k * want, tm2[k].runs, read_bytes,
                         bytes, scratch);
    }
  }
  free(ent);
  free(reads);
  free(argp);
  free(tm2);
  free(st2);
  free(runs);
  free(scratch);
}

/* The fastest SIMD FMA peak at thread count index c, or NULL if no SIMD ISA is usable. */
static const tx_roof_peak *tx_roofline_best_simd(const tx_roofline *r, int c) {
  const tx_roof_peak *best = NULL;
  for (size_t i = 0; i < r->n_peaks; i++) {
    const tx_roof_peak *p = &r->peaks[i];
    if (p->isa.loop != &tx_peak_scalar && p->gflops[c] > 0 &&
        (!best || p->gflops[c] > best->gflops[c]))
      best = p;
  }
  return best;
}

/* ---- report ---- */

static const char *const blas_env[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
enum { N_BLAS_ENV = sizeof blas_env / sizeof blas_env[0] };

enum { COL_ROOF, COL_HOW, COL_RATES }; /* then one column per thread count, then the unit */

static void add_row(tx_table *t, const tx_roofline *r, const char *roof, const char *how,
                    const double *v, const char *unit) {
  char rates[TX_ROOF_MAX_COUNTS][32];
  const char *cells[COL_RATES + TX_ROOF_MAX_COUNTS + 1] = {roof, how};
  for (int c = 0; c < r->n_counts; c++) {
    if (v && v[c] > 0)
      snprintf(rates[c], sizeof rates[c], "%.1f", v[c]);
    else
      snprintf(rates[c], sizeof rates[c], "-");
    cells[COL_RATES + c] = rates[c];
  }
  cells[COL_RATES + r->n_counts] = unit;
  tx_table_add(t, cells);
}

static void add_balance_row(tx_table *t, const tx_roofline *r) {
  double balance[TX_ROOF_MAX_COUNTS];
  const tx_roof_peak *best = NULL;
  for (int c = 0; c < r->n_counts; c++) {
    const tx_roof_peak *p = tx_roofline_best_simd(r, c);
    if (!p) p = &r->peaks[0]; /* no SIMD ISA here: the scalar peak */
    balance[c] = r->triad_gbs[c] > 0 ? p->gflops[c] / r->triad_gbs[c] : -1;
    best = p;
  }
  char how[64];
  snprintf(how, sizeof how, "%s peak / triad bandwidth", txattn_isa_name(best->isa.isa));
  add_row(t, r, "balance", how, balance, "flop/B");
}

static void fill_table(tx_table *t, const tx_roofline *r) {
  char buf[160];
  for (size_t i = 0; i < r->n_peaks; i++) {
    const tx_roof_peak *p = &r->peaks[i];
    snprintf(buf, sizeof buf, "fma %s", txattn_isa_name(p->isa.isa));
    add_row(t, r, buf, p->isa.usable ? p->isa.loop->how : "-", p->gflops, "GFLOP/s");
    if (!p->isa.usable) tx_table_note(t, "%s", p->isa.why);
  }
  snprintf(buf, sizeof buf, "OpenBLAS cblas_sgemm %lld^3, core %s", (long long)r->gemm_n,
           tx_openblas_corename());
  add_row(t, r, "sgemm", buf, r->sgemm_gflops, "GFLOP/s");
  snprintf(buf, sizeof buf, "STREAM triad a = b + q c, 3 x %zu MiB, 12 B/element",
           r->stream_bytes / MIB);
  add_row(t, r, "triad", buf, r->triad_gbs, "GB/s");
  snprintf(buf, sizeof buf, "sum of b and c, 2 x %zu MiB, 8 B/element", r->stream_bytes / MIB);
  add_row(t, r, "read", buf, r->read_gbs, "GB/s");
  add_balance_row(t, r);
}

static int cpus_available(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Cores that other processes keep busy halve a thread's share, and the multi-thread roofs with it:
   say so when the best FMA peak scales clearly worse than the cores it could use. Writes the
   warning into buf and returns 1, or returns 0. */
static int scaling_warning(const tx_roofline *r, char *buf, size_t size) {
  if (r->n_counts < 2) return 0;
  const tx_roof_peak *p = tx_roofline_best_simd(r, 1);
  if (!p) p = &r->peaks[0];
  int cores = cpus_available();
  double expect = r->threads[1] < cores ? r->threads[1] : cores;
  double got = p->gflops[0] > 0 ? p->gflops[1] / p->gflops[0] : 0;
  if (got >= 0.85 * expect) return 0;
  snprintf(buf, size,
           "the %d-thread %s peak is only %.2f x the 1-thread one with %d CPUs available (other"
           " processes on the cores?): figures at %d threads understate the machine",
           r->threads[1], txattn_isa_name(p->isa.isa), got, cores, r->threads[1]);
  return 1;
}

void tx_roofline_print(const tx_roofline *r, FILE *f) {
  char spec[128] = "ROOF|WHAT";
  for (int c = 0; c < r->n_counts; c++) {
    size_t len = strlen(spec);
    snprintf(spec + len, sizeof spec - len, "|>%d THREAD%s", r->threads[c],
             r->threads[c] == 1 ? "" : "S");
  }
  strcat(spec, "|UNIT");
  tx_table t;
  tx_table_init(&t, spec);
  fill_table(&t, r);
  fprintf(f, "\nroofline, measured in this run (%.1f s): best of %d runs of >= %g ms each",
          r->seconds, r->runs, 1e3 * r->min_run_s);
  if (r->load_before >= 0) fprintf(f, "; load average %.2f before", r->load_before);
  fprintf(f, "\n");
  tx_table_print(&t, f, "  ");
  tx_table_free(&t);
  fprintf(f, "  OpenBLAS: %s (%s build);", tx_openblas_config(), tx_openblas_threading());
  for (int i = 0; i < N_BLAS_ENV; i++) {
    const char *v = getenv(blas_env[i]);
    fprintf(f, " %s=%s", blas_env[i], v ? v : "(unset)");
  }
  fprintf(f, "\n");
  char warn[256];
  if (scaling_warning(r, warn, sizeof warn)) fprintf(f, "  warning: %s\n", warn);
  if (r->l3_bytes && r->stream_bytes < 4 * r->l3_bytes)
    fprintf(f, "  note: the bandwidth arrays are under 4 x L3 (%zu MiB): caches inflate the GB/s\n",
            r->l3_bytes / MIB);
}

static void json_rates(tx_json *j, const char *key, const tx_roofline *r, const double *v) {
  tx_json_kv_array(j, key);
  for (int c = 0; c < r->n_counts; c++) tx_json_double(j, v[c] > 0 ? v[c] : NAN);
  tx_json_end_array(j);
}

static void json_peaks(tx_json *j, const tx_roofline *r) {
  tx_json_kv_array(j, "fma_peak");
  for (size_t i = 0; i < r->n_peaks; i++) {
    const tx_roof_peak *p = &r->peaks[i];
    tx_json_begin_object(j);
    tx_json_kv_string(j, "isa", txattn_isa_name(p->isa.isa));
    tx_json_kv_string(j, "loop", p->isa.loop->how);
    tx_json_kv_bool(j, "usable", p->isa.usable);
    tx_json_kv_string(j, "reason", p->isa.usable ? NULL : p->isa.why);
    json_rates(j, "gflops", r, p->gflops);
    tx_json_end_object(j);
  }
  tx_json_end_array(j);
}

static void json_sgemm(tx_json *j, const tx_roofline *r) {
  tx_json_kv_object(j, "sgemm");
  tx_json_kv_int(j, "n", r->gemm_n);
  tx_json_kv_string(j, "corename", tx_openblas_corename());
  tx_json_kv_string(j, "config", tx_openblas_config());
  tx_json_kv_string(j, "threading", tx_openblas_threading());
  for (int i = 0; i < N_BLAS_ENV; i++) tx_json_kv_string(j, blas_env[i], getenv(blas_env[i]));
  json_rates(j, "gflops", r, r->sgemm_gflops);
  tx_json_end_object(j);
}

static void json_bandwidth(tx_json *j, const tx_roofline *r) {
  tx_json_kv_object(j, "bandwidth");
  tx_json_kv_int(j, "array_bytes", (int64_t)r->stream_bytes);
  tx_json_kv_int(j, "l3_bytes", (int64_t)r->l3_bytes);
  tx_json_kv_string(j, "triad", "a[i] = b[i] + q * c[i], 12 bytes per element");
  json_rates(j, "triad_gbs", r, r->triad_gbs);
  tx_json_kv_string(j, "read", "sum of b[i] and c[i], 8 bytes per element");
  json_rates(j, "read_gbs", r, r->read_gbs);
  tx_json_end_object(j);
}

void tx_roofline_json(tx_json *j, const tx_roofline *r) {
  tx_json_begin_object(j);
  tx_json_kv_double(j, "seconds", r->seconds);
  tx_json_kv_int(j, "runs", r->runs);
  tx_json_kv_double(j, "min_run_s", r->min_run_s);
  tx_json_kv_double(j, "load_average_before", r->load_before >= 0 ? r->load_before : NAN);
  tx_json_kv_array(j, "threads");
  for (int c = 0; c < r->n_counts; c++) tx_json_int(j, r->threads[c]);
  tx_json_end_array(j);
  char warn[256];
  tx_json_kv_string(j, "warning", scaling_warning(r, warn, sizeof warn) ? warn : NULL);
  json_peaks(j, r);
  json_sgemm(j, r);
  json_bandwidth(j, r);
  tx_json_end_object(j);
}

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
