/* SPDX-License-Identifier: MIT */
/* A continuous-batching server in miniature over one attention layer: N synthetic requests of
 * varied prompt and output lengths arrive one per step; the K/V cache is a pool of pages of P keys
 * with a free list; requests that share a prompt prefix share its full pages (reference-counted);
 * prompts are prefilled in chunks of at most C rows; and each step is ONE packed, paged call to
 * txattn_attention holding every running request's prefill chunk or decode row. Sampled steps
 * check the sampled sequences' rows against txattn_reference within txattn_error_bound, and the
 * cache pages against the values their tokens were given. Prints tokens per second (prefill and
 * decode) and cache memory for f32, f16 and q8_0 caches (ggml's blocks, filled by txattn_convert;
 * q and o f16 then), or a q4_0 cache on request. Exits 1 if a library call fails, a row is not
 * exact, the cache holds a wrong value or a page is not back on the free list at the end; 2 on a
 * bad option. `serving --help` lists the options. */
#define _DEFAULT_SOURCE /* clock_gettime, madvise's MADV_HUGEPAGE (Linux) */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <txattn/txattn.h>

typedef struct options {
  int64_t requests, page_size, chunk, heads_q, heads_kv, d, max_running, pages, groups;
  int64_t prompt_max, output_max, check_every;
  uint64_t seed;
  int threads, require_sharing, n_types;
  const char *inject; /* self-test: break one thing the checks must catch */
  txattn_dtype types[3];
} options;

/* ---- synthetic values ---- */

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static double uniform(uint64_t *state) { /* [-1, 1) */
  return (double)(splitmix(state) >> 11) * 0x1p-52 - 1.0;
}
static int64_t between(uint64_t *state, int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(splitmix(state) % (uint64_t)(hi - lo + 1));
}
/* The generator of one token's values: K/V depend on what the token is (content), Q on which
   request asks, so a shared prefix has the same K/V in every request that holds it. */
static uint64_t token_state(uint64_t seed, uint64_t content, int64_t pos, uint64_t kind) {
  uint64_t s = seed ^ (content * 0x100000001b3u) ^ ((uint64_t)pos << 20) ^ (kind << 56);
  splitmix(&s);
  return s;
}

/* IEEE binary16, rounded to nearest even. */
static uint16_t f16_from_float(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
  if (ax < 0x38800000u) {                                   /* subnormal: a multiple of 2^-24 */
    float a;
    memcpy(&a, &ax, sizeof a);
    return (uint16_t)(sign | (uint32_t)lrintf(a * 0x1p24f));
  }
  uint32_t e = ax - 0x38000000u; /* rebias the exponent from 127 to 15 */
  e += 0xfffu + ((e >> 13) & 1u);
  return (uint16_t)(sign | (e >> 13));
}
static float f16_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24);
  uint32_t x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}
static void store(void *base, txattn_dtype t, int64_t i, double v) {
  if (t == TXATTN_DTYPE_F16)
    ((uint16_t *)base)[i] = f16_from_float((float)v);
  else
    ((float *)base)[i] = (float)v;
}
static double load(const void *base, txattn_dtype t, int64_t i) {
  return t == TXATTN_DTYPE_F16 ? f16_to_float(((const uint16_t *)base)[i])
                               : ((const float *)base)[i];
}

/* ---- the server's state ---- */

enum { WAITING, PREFILL, DECODE, DONE };

typedef struct request {
  int64_t prompt, output, group, prefix; /* prefix: the group's shared prompt tokens */
  int64_t kv, generated;                 /* tokens in the cache; decode rows done */
  int64_t reserved;                      /* pages it may still take from the pool */
  int32_t *pages;                        /* its block table row: n_held pages */
  int64_t n_held;
  int state;
} request;

typedef struct group {
  int32_t *pages; /* the prefix's full pages, once a request has written them; n_pages of them */
  int64_t n_pages, waiting; /* requests of the group not yet admitted */
} group;

typedef struct server {
  const options *o;
  txattn_dtype type, qtype; /* the cache's (K and V) and q's and o's: f16 beside a q8_0 cache */
  int64_t P, hk, d, hq, max_pages, n_pages, max_ctx;
  void *k_pool, *v_pool, *q, *out, *out_ref;
  int32_t *free_list, *refs, *table;
  int64_t n_free, reserved, peak_used, shared_reuses;
  int injected;
  int64_t *q_offsets, *kv_lens, *rows;
  request *req;
  group *grp;
  request **slots;
} server;

static int failed(txattn_status s, const char *what) {
  if (s == TXATTN_OK) return 0;
  fprintf(stderr, "serving: %s: %s: %s\n", what, txattn_status_name(s), txattn_last_error());
  return 1;
}

/* Whether --inject names `what` and this is the time to break it, once per run: the first checked
   step (for "wrong-page", one whose first slot holds two pages) or the first finished request. */
static int inject(server *s, const char *what, int64_t step) {
  if (s->o->inject == NULL || strcmp(s->o->inject, what) != 0 || s->injected) return 0;
  if (strcmp(what, "leak") != 0 && (s->o->check_every == 0 || step % s->o->check_every != 0))
    return 0;
  if (strcmp(what, "row") == 0) /* the step's first output element (a sampled row's), 2^-6 off */
    store(s->out, s->qtype, 0, load(s->out, s->qtype, 0) * (1 + 0x1p-6) + 0x1p-6);
  s->injected = 1;
  return 1;
}

/* The byte offset of a row of a page: heads-major pages (all-zero layout), rows of d values,
   whole blocks when the cache is q8_0 or q4_0 (d is a multiple of 32). */
static int64_t pool_at(const server *s, int64_t page, int64_t h, int64_t row) {
  return txattn_dtype_bytes(s->type, ((page * s->hk + h) * s->P + row) * s->d);
}

/* The page for token `pos` of r, taken from the free list when pos starts a page. The admission
   reserved it, so the free list is never empty here. */
static int32_t page_for(server *s, request *r, int64_t pos) {
  if (pos / s->P < r->n_held) return r->pages[pos / s->P];
  const int32_t page = s->free_list[--s->n_free];
  s->refs[page] = 1;
  r->pages[r->n_held++] = page;
  r->reserved--;
  s->reserved--;
  if (s->n_pages - s->n_free > s->peak_used) s->peak_used = s->n_pages - s->n_free;
  return page;
}

static void page_release(server *s, int32_t page) {
  if (--s->refs[page] == 0) s->free_list[s->n_free++] = page;
}

/* The generator of the K and V of token `pos` of request r (number id): a prefix token's are its
   group's, so every request of the group gives it the same values. */
static uint64_t kv_state(const server *s, const request *r, int64_t id, int64_t pos) {
  return pos < r->prefix ? token_state(s->o->seed, (uint64_t)r->group, pos, 1)
                         : token_state(s->o->seed, (uint64_t)id, pos, 3);
}

/* The K and V rows of token `pos` of r, head h, as the cache stores them (txattn_convert from
   the fp32 values: rounded to f16, or quantised to q8_0 or q4_0 as ggml does) into k and v, each
   txattn_dtype_bytes(type, d) bytes. */
static int token_rows(const server *s, const request *r, int64_t id, int64_t pos, void *k,
                      void *v) {
  uint64_t st = kv_state(s, r, id, pos);
  float kf[512], vf[512]; /* d <= 512 */
  int rc = 0;
  for (int64_t h = 0; h < s->hk; h++) {
    for (int64_t x = 0; x < s->d; x++) {
      kf[x] = (float)uniform(&st);
      vf[x] = (float)uniform(&st);
    }
    const int64_t row = txattn_dtype_bytes(s->type, s->d);
    rc |= failed(txattn_convert(kf, TXATTN_DTYPE_F32, (char *)k + h * row, s->type, s->d, 1.0f),
                 "txattn_convert");
    rc |= failed(txattn_convert(vf, TXATTN_DTYPE_F32, (char *)v + h * row, s->type, s->d, 1.0f),
                 "txattn_convert");
  }
  return rc;
}

/* K and V of token `pos` of r into its page. */
static int write_kv(server *s, request *r, int64_t id, int64_t pos) {
  const int32_t page = page_for(s, r, pos);
  char k[512 * 4 * 16], v[sizeof k]; /* heads_kv <= 16 rows of d <= 512 values */
  if (token_rows(s, r, id, pos, k, v)) return 1;
  const int64_t row = txattn_dtype_bytes(s->type, s->d);
  for (int64_t h = 0; h < s->hk; h++) {
    memcpy((char *)s->k_pool + pool_at(s, page, h, pos % s->P), k + h * row, (size_t)row);
    memcpy((char *)s->v_pool + pool_at(s, page, h, pos % s->P), v + h * row, (size_t)row);
  }
  return 0;
}

/* Whether the pages a block table row names hold the values write_kv gave the tokens 0 .. kv - 1
   of request r (shared pages too). */
static int cache_holds(const server *s, const request *r, const int32_t *row, int64_t id,
                       int64_t kv) {
  char k[512 * 4 * 16], v[sizeof k];
  const int64_t bytes = txattn_dtype_bytes(s->type, s->d);
  for (int64_t pos = 0; pos < kv; pos++) {
    const int64_t page = row[pos / s->P];
    if (token_rows(s, r, id, pos, k, v)) return 0;
    for (int64_t h = 0; h < s->hk; h++) {
      const int64_t at = pool_at(s, page, h, pos % s->P);
      if (memcmp((const char *)s->k_pool + at, k + h * bytes, (size_t)bytes) != 0 ||
          memcmp((const char *)s->v_pool + at, v + h * bytes, (size_t)bytes) != 0)
        return 0;
    }
  }
  return 1;
}

/* Evicts the cached prefixes: their pages stay with the requests that hold them. */
static void drop_prefixes(server *s) {
  for (int64_t g = 0; g < s->o->groups; g++) {
    for (int64_t p = 0; p < s->grp[g].n_pages; p++) page_release(s, s->grp[g].pages[p]);
    s->grp[g].n_pages = 0;
  }
}

/* Admits waiting requests in arrival order while the pool can hold all they will ever write; a
   request whose group has registered its prefix pages references them and skips their prefill. */
static void admit(server *s, int64_t step, int64_t *running) {
  const options *o = s->o;
  for (int64_t i = 0; i < o->requests && *running < o->max_running; i++) {
    request *r = &s->req[i];
    if (r->state != WAITING) continue;
    if (i > step) break; /* request i arrives at step i */
    group *g = &s->grp[r->group];
    int64_t need = (r->prompt + r->output + s->P - 1) / s->P - g->n_pages;
    if (s->n_free - s->reserved < need && *running == 0) { /* only the cached prefixes hold pages */
      drop_prefixes(s);
      need = (r->prompt + r->output + s->P - 1) / s->P;
    }
    if (s->n_free - s->reserved < need) break; /* first come, first served */
    for (int64_t p = 0; p < g->n_pages; p++) {
      r->pages[r->n_held++] = g->pages[p];
      s->refs[g->pages[p]]++;
    }
    s->shared_reuses += g->n_pages;
    r->kv = g->n_pages * s->P;
    r->reserved = need;
    s->reserved += need;
    r->state = PREFILL;
    for (int64_t b = 0; b < o->max_running; b++)
      if (s->slots[b] == NULL) {
        s->slots[b] = r;
        break;
      }
    (*running)++;
    if (--g->waiting == 0) { /* no one else will ask for the prefix: drop the group's references */
      for (int64_t p = 0; p < g->n_pages; p++) page_release(s, g->pages[p]);
      g->n_pages = 0;
    }
  }
}

/* The full pages of r's group prefix, offered to the group's later requests once r wrote them. */
static void register_prefix(server *s, request *r) {
  group *g = &s->grp[r->group];
  const int64_t full = r->prefix / s->P;
  if (g->n_pages > 0 || g->waiting == 0 || full == 0 || r->kv < full * s->P) return;
  for (int64_t p = 0; p < full; p++) {
    g->pages[p] = r->pages[p];
    s->refs[r->pages[p]]++;
  }
  g->n_pages = full;
}

typedef struct tally {
  double prefill_s, decode_s, max_err, worst_ratio;
  int64_t prefill_tokens, decode_tokens, steps, checked_rows, checked_seqs;
} tally;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sequence b of the step alone, as the same packed, paged problem with one sequence: its rows
   against txattn_reference within txattn_error_bound. Returns 0 if exact, 1 if not or on error. */
static int check_sequence(server *s, const txattn_problem *p, const txattn_tensors *t, int64_t b,
                          int64_t id, tally *ty) {
  txattn_problem sp = *p;
  sp.batch = 1;
  const int64_t off = s->q_offsets[b], rows = s->rows[b], row_elems = s->hq * s->d;
  const int64_t offsets[2] = {0, rows}, kv[1] = {s->kv_lens[b]};
  txattn_tensors st = *t;
  st.q_data = (const char *)t->q_data + txattn_dtype_bytes(s->qtype, off * row_elems);
  st.o_data = s->out_ref;
  st.q_offsets = offsets;
  st.kv_lens = kv;
  st.block_table = t->block_table + b * s->max_pages;
  double bound = 0;
  if (failed(txattn_reference(&sp, &st), "txattn_reference") ||
      failed(txattn_error_bound(&sp, &st, &bound), "txattn_error_bound"))
    return 1;
  double err = 0;
  for (int64_t i = 0; i < rows * row_elems; i++) {
    const double e =
        fabs(load(s->out, s->qtype, off * row_elems + i) - load(s->out_ref, s->qtype, i));
    if (!(e <= err)) err = e; /* a NaN sticks */
  }
  ty->checked_rows += rows;
  ty->checked_seqs++;
  if (!(err <= ty->max_err)) ty->max_err = err;
  if (bound > 0 && err / bound > ty->worst_ratio) ty->worst_ratio = err / bound;
  if (!(err <= bound)) {
    fprintf(stderr,
            "serving: request %" PRId64 " (%" PRId64 " rows, %" PRId64
            " keys): max error %.3g above the bound %.3g\n",
            id, rows, kv[0], err, bound);
    return 1;
  }
  if (!cache_holds(s, &s->req[id], st.block_table, id, kv[0])) {
    fprintf(stderr, "serving: request %" PRId64 ": a page of its cache holds another token\n", id);
    return 1;
  }
  return 0;
}

static void *zalloc(int64_t n, size_t size) {
  return calloc((size_t)(n > 0 ? n : 1), size);
}

/* A page pool as servers allocate it: 2 MiB aligned and, where the kernel grants them, in 2 MiB
   pages (madvise is a hint), so that reading pages in a shuffled order costs no page walk per
   4 KiB. Zeroed. */
static void *pool_alloc(int64_t n, size_t size) {
  const size_t huge = (size_t)2 << 20, count = (size_t)(n > 0 ? n : 1);
  if (size == 0 || count > (SIZE_MAX - huge) / size) return NULL; /* n * size would wrap */
  const size_t whole = (count * size + huge - 1) / huge * huge;
  void *m = aligned_alloc(huge, whole);
  if (!m) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(m, whole, MADV_HUGEPAGE);
#endif
  return memset(m, 0, whole);
}

static void server_free(server *s) {
  if (s->req)
    for (int64_t i = 0; i < s->o->requests; i++) free(s->req[i].pages);
  if (s->grp)
    for (int64_t g = 0; g < s->o->groups; g++) free(s->grp[g].pages);
  free(s->k_pool), free(s->v_pool), free(s->q), free(s->out), free(s->out_ref);
  free(s->free_list), free(s->refs), free(s->table), free(s->q_offsets), free(s->kv_lens);
  free(s->rows), free(s->req), free(s->grp), free(s->slots);
}

/* Serves every request with the cache of `type`; 0 on success. */
static int serve(txattn_context *ctx, const options *o, txattn_dtype type) {
  server s = {.o = o,
              .type = type,
              .qtype = txattn_dtype_block(type) == 32 ? TXATTN_DTYPE_F16 : type,
              .P = o->page_size,
              .hk = o->heads_kv,
              .d = o->d,
              .hq = o->heads_q};
  int rc = 1;
  uint64_t st = o->seed;
  s.req = zalloc(o->requests, sizeof *s.req);
  s.grp = zalloc(o->groups, sizeof *s.grp);
  if (!s.req || !s.grp) goto oom;
  int64_t *prefix = zalloc(o->groups, sizeof *prefix);
  if (!prefix) goto oom;
  for (int64_t g = 0; g < o->groups; g++) prefix[g] = between(&st, 1, o->prompt_max / 2);
  for (int64_t i = 0; i < o->requests; i++) {
    request *r = &s.req[i];
    r->group = (int64_t)(splitmix(&st) % (uint64_t)o->groups);
    r->prefix = prefix[r->group];
    r->prompt = r->prefix + between(&st, 1, o->prompt_max - o->prompt_max / 2);
    r->output = between(&st, 1, o->output_max);
    s.grp[r->group].waiting++;
    if (r->prompt + r->output > s.max_ctx) s.max_ctx = r->prompt + r->output;
  }
  free(prefix);
  s.max_pages = (s.max_ctx + s.P - 1) / s.P;
  s.n_pages = o->pages > 0 ? o->pages : o->max_running * s.max_pages;
  if (s.n_pages > INT32_MAX) { /* block tables hold int32 page indices */
    fprintf(stderr, "serving: a pool of %" PRId64 " pages is more than int32 indices address\n",
            s.n_pages);
    server_free(&s);
    return 1;
  }
  if (s.n_pages < s.max_pages) {
    fprintf(stderr,
            "serving: --pages %" PRId64 " cannot hold a request of %" PRId64 " tokens (%" PRId64
            " pages)\n",
            s.n_pages, s.max_ctx, s.max_pages);
    server_free(&s);
    return 1;
  }
  const int64_t page_elems = s.P * s.hk * s.d, row_elems = s.hq * s.d;
  const int64_t max_rows = o->max_running * o->chunk;
  const size_t esize = txattn_dtype_size(s.qtype),
               pool_bytes = (size_t)txattn_dtype_bytes(type, page_elems);
  for (int64_t i = 0; i < o->requests; i++)
    if (!(s.req[i].pages = zalloc(s.max_pages, sizeof(int32_t)))) goto oom;
  for (int64_t g = 0; g < o->groups; g++)
    if (!(s.grp[g].pages = zalloc(s.max_pages, sizeof(int32_t)))) goto oom;
  s.k_pool = pool_alloc(s.n_pages, pool_bytes);
  s.v_pool = pool_alloc(s.n_pages, pool_bytes);
  s.q = zalloc(max_rows * row_elems, esize);
  s.out = zalloc(max_rows * row_elems, esize);
  s.out_ref = zalloc(o->chunk * row_elems, esize);
  s.free_list = zalloc(s.n_pages, sizeof *s.free_list);
  s.refs = zalloc(s.n_pages, sizeof *s.refs);
  s.table = zalloc(o->max_running * s.max_pages, sizeof *s.table);
  s.q_offsets = zalloc(o->max_running + 1, sizeof *s.q_offsets);
  s.kv_lens = zalloc(o->max_running, sizeof *s.kv_lens);
  s.rows = zalloc(o->max_running, sizeof *s.rows);
  s.slots = zalloc(o->max_running, sizeof *s.slots);
  if (!s.k_pool || !s.v_pool || !s.q || !s.out || !s.out_ref || !s.free_list || !s.refs ||
      !s.table || !s.q_offsets || !s.kv_lens || !s.rows || !s.slots)
    goto oom;
  for (int64_t i = 0; i < s.n_pages; i++) s.free_list[i] = (int32_t)(s.n_pages - 1 - i);
  s.n_free = s.n_pages;

  /* One problem for every step, sized at the server's capacity (max_running sequences of at most
     C rows and max_ctx keys), so txattn_attention plans once and its plan cache serves each step;
     a step's own rows, keys and pages are in q_offsets, kv_lens and the block table. */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.batch = o->max_running;
  p.heads_q = s.hq;
  p.heads_kv = s.hk;
  p.n_q = o->chunk;
  p.n_kv = s.max_ctx;
  p.d_qk = s.d;
  p.mask = TXATTN_MASK_CAUSAL; /* bottom-right within each sequence */
  p.k_type = p.v_type = type;
  p.q_type = p.o_type = s.qtype;
  p.page_size = s.P;
  p.max_pages = s.max_pages;
  p.n_pages = s.n_pages;
  p.packed = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q_data = s.q;
  t.k_data = s.k_pool;
  t.v_data = s.v_pool;
  t.o_data = s.out;
  t.kv_lens = s.kv_lens;
  t.block_table = s.table;
  t.q_offsets = s.q_offsets;

  txattn_plan *plan = NULL; /* the kernel txattn_attention's cached plan will run, said once */
  if (failed(txattn_plan_create(ctx, &p, NULL, &plan), "txattn_plan_create")) goto out;
  printf("%s cache: kernel %s (%s; q and o %s)\n", txattn_dtype_name(type),
         txattn_plan_kernel(plan), txattn_plan_why(plan), txattn_dtype_name(s.qtype));
  txattn_plan_free(plan);

  tally ty = {0};
  int64_t running = 0, finished = 0;
  for (int64_t step = 0; finished < o->requests; step++) {
    admit(&s, step, &running);
    double prefill_pairs = 0, decode_pairs = 0;
    int64_t total = 0;
    for (int64_t b = 0; b < o->max_running; b++) {
      request *r = s.slots[b];
      const int64_t id = r ? r - s.req : -1;
      int64_t rows = 0;
      if (r)
        rows =
            r->state == PREFILL ? (r->prompt - r->kv < o->chunk ? r->prompt - r->kv : o->chunk) : 1;
      s.q_offsets[b] = total;
      s.rows[b] = rows;
      for (int64_t i = 0; i < rows; i++) { /* the new tokens' K/V into their pages, their Q rows */
        const int64_t pos = r->kv + i;
        if (write_kv(&s, r, id, pos)) goto out;
        uint64_t qs = token_state(o->seed, (uint64_t)id, pos, 2);
        for (int64_t x = 0; x < row_elems; x++)
          store(s.q, s.qtype, (total + i) * row_elems + x, uniform(&qs));
        if (r->state == PREFILL)
          prefill_pairs += (double)(pos + 1);
        else
          decode_pairs += (double)(pos + 1);
      }
      s.kv_lens[b] = r ? r->kv + rows : 0;
      for (int64_t i = 0; i < s.max_pages; i++) /* entries past a sequence's keys are never read */
        s.table[b * s.max_pages + i] = r && i < r->n_held ? r->pages[i] : -1;
      total += rows;
    }
    s.q_offsets[o->max_running] = total;
    if (s.slots[0] && s.slots[0]->n_held > 1 && inject(&s, "wrong-page", step)) {
      const int32_t first = s.table[0]; /* a sequence whose table names its pages out of order */
      s.table[0] = s.table[1];
      s.table[1] = first;
    }
    if (total == 0) continue; /* nothing has arrived yet */

    const double t0 = now();
    if (failed(txattn_attention(ctx, &p, &t), "txattn_attention")) goto out;
    const double dt = now() - t0;
    inject(&s, "row", step);
    ty.steps++;
    /* One call serves both kinds of rows: its time is split by their query-key pairs. */
    ty.prefill_s += dt * prefill_pairs / (prefill_pairs + decode_pairs);
    ty.decode_s += dt * decode_pairs / (prefill_pairs + decode_pairs);

    int64_t sampled = 0;
    for (int64_t b = 0; b < o->max_running; b++) {
      request *r = s.slots[b];
      if (!r) continue;
      const int64_t id = r - s.req;
      if (o->check_every > 0 && step % o->check_every == 0 && sampled < 3 && s.rows[b] > 0) {
        sampled++;
        if (check_sequence(&s, &p, &t, b, id, &ty)) goto out;
      }
      if (r->state == PREFILL)
        ty.prefill_tokens += s.rows[b];
      else
        ty.decode_tokens += s.rows[b];
      r->kv += s.rows[b];
      if (r->state == PREFILL) {
        register_prefix(&s, r);
        if (r->kv == r->prompt) r->state = DECODE;
      } else if (++r->generated == r->output) {    /* done: its pages go back unless shared */
        if (inject(&s, "leak", step)) r->n_held--; /* its last page is never given back */
        for (int64_t i = 0; i < r->n_held; i++) page_release(&s, r->pages[i]);
        s.reserved -= r->reserved;
        r->n_held = r->reserved = 0;
        r->state = DONE;
        s.slots[b] = NULL;
        running--;
        finished++;
      }
    }
  }

  const double mib = 1.0 / (1024.0 * 1024.0), page_bytes = 2.0 * (double)pool_bytes;
  printf("%s cache: %" PRId64 " requests in %" PRId64 " steps; prefill %" PRId64
         " tokens, %.0f tokens/s; decode %" PRId64 " tokens, %.0f tokens/s\n",
         txattn_dtype_name(type), o->requests, ty.steps, ty.prefill_tokens,
         ty.prefill_s > 0 ? (double)ty.prefill_tokens / ty.prefill_s : 0.0, ty.decode_tokens,
         ty.decode_s > 0 ? (double)ty.decode_tokens / ty.decode_s : 0.0);
  printf("%s cache: pool %" PRId64 " pages of %" PRId64 " keys (%.2f MiB K+V), peak %" PRId64
         " pages in use (%.2f MiB); %" PRId64 " prefix pages shared on admission\n",
         txattn_dtype_name(type), s.n_pages, s.P, (double)s.n_pages * page_bytes * mib, s.peak_used,
         (double)s.peak_used * page_bytes * mib, s.shared_reuses);
  printf("%s cache: checked %" PRId64 " rows of %" PRId64
         " sampled sequences against txattn_reference: max error %.3g, at most %.3g of the bound\n",
         txattn_dtype_name(type), ty.checked_rows, ty.checked_seqs, ty.max_err, ty.worst_ratio);

  int leaked = s.n_free != s.n_pages || s.reserved != 0;
  for (int64_t i = 0; i < s.n_pages; i++) leaked |= s.refs[i] != 0;
  if (leaked) {
    fprintf(stderr, "serving: %" PRId64 " of %" PRId64 " pages are not back on the free list\n",
            s.n_pages - s.n_free, s.n_pages);
    goto out;
  }
  if (o->require_sharing && s.shared_reuses == 0) {
    fprintf(stderr, "serving: no request shared a prefix page (--require-sharing)\n");
    goto out;
  }
  if (o->check_every > 0 && ty.checked_rows == 0) {
    fprintf(stderr, "serving: no row was checked\n");
    goto out;
  }
  rc = 0;
out:
  server_free(&s);
  return rc;
oom:
  fprintf(stderr, "serving: out of memory\n");
  server_free(&s);
  return 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: serving [--requests N] [--seed S] [--page-size P] [--chunk C] [--heads HQ]\n"
             "               [--heads-kv HK] [--d D] [--dtype f32|f16|q8_0|q4_0|both|all]\n"
             "               [--max-running B]\n"
             "               [--pages N] [--groups G] [--prompt-max L] [--output-max L]\n"
             "               [--check-every K] [--threads T] [--require-sharing]\n"
             "               [--inject leak|wrong-page|row]\n"
             "Serves N requests (prompt up to L tokens, a prefix shared within each of G groups)\n"
             "with a paged K/V cache, B requests at a time, one packed call per step; checks\n"
             "(both: f32 and f16 caches; all, the default: also q8_0, with f16 q and o, as\n"
             "q4_0 alone)\n"
             "every K-th step's sampled rows against txattn_reference (0: never).\n"
             "--inject breaks one thing on purpose (a page kept, a block table out of order, an\n"
             "output element off) to show that the checks catch it.\n");
}

static int parse_int(const char *s, int64_t lo, int64_t *out) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > (1ll << 40)) return 1;
  *out = (int64_t)v;
  return 0;
}

int main(int argc, char **argv) {
  options o = {.requests = 24,
               .page_size = 16,
               .chunk = 32,
               .heads_q = 8,
               .heads_kv = 2,
               .d = 64,
               .max_running = 8,
               .groups = 4,
               .prompt_max = 192,
               .output_max = 48,
               .check_every = 16,
               .seed = 1,
               .n_types = 3,
               .types = {TXATTN_DTYPE_F32, TXATTN_DTYPE_F16, TXATTN_DTYPE_Q8_0}};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t n = 0;
    struct {
      const char *name;
      int64_t *field, lo;
    } ints[] = {{"--requests", &o.requests, 1},
                {"--page-size", &o.page_size, 1},
                {"--chunk", &o.chunk, 1},
                {"--heads", &o.heads_q, 1},
                {"--heads-kv", &o.heads_kv, 1},
                {"--d", &o.d, 1},
                {"--max-running", &o.max_running, 1},
                {"--pages", &o.pages, 1},
                {"--groups", &o.groups, 1},
                {"--prompt-max", &o.prompt_max, 2},
                {"--output-max", &o.output_max, 1},
                {"--check-every", &o.check_every, 0}};
    int known = 0;
    for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
      if (strcmp(a, ints[j].name) == 0) {
        known = 1;
        if (!v || parse_int(v, ints[j].lo, ints[j].field)) {
          fprintf(stderr, "serving: %s takes an integer >= %" PRId64 "\n", a, ints[j].lo);
          return 2;
        }
        i++;
      }
    if (known) continue;
    if (strcmp(a, "--seed") == 0 && v && !parse_int(v, 0, &n)) {
      o.seed = (uint64_t)n, i++;
    } else if (strcmp(a, "--threads") == 0 && v && !parse_int(v, 0, &n) && n < 4096) {
      o.threads = (int)n, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "f32") == 0) {
      o.n_types = 1, o.types[0] = TXATTN_DTYPE_F32, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "f16") == 0) {
      o.n_types = 1, o.types[0] = TXATTN_DTYPE_F16, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "q8_0") == 0) {
      o.n_types = 1, o.types[0] = TXATTN_DTYPE_Q8_0, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "q4_0") == 0) {
      o.n_types = 1, o.types[0] = TXATTN_DTYPE_Q4_0, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "both") == 0) {
      o.n_types = 2, i++;
    } else if (strcmp(a, "--dtype") == 0 && v && strcmp(v, "all") == 0) {
      o.n_types = 3, i++;
    } else if (strcmp(a, "--inject") == 0 && v &&
               (strcmp(v, "leak") == 0 || strcmp(v, "wrong-page") == 0 || strcmp(v, "row") == 0)) {
      o.inject = v, i++;
    } else if (strcmp(a, "--require-sharing") == 0) {
      o.require_sharing = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "serving: bad option or value: %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (o.heads_q % o.heads_kv != 0) {
    fprintf(stderr, "serving: --heads %" PRId64 " is not a multiple of --heads-kv %" PRId64 "\n",
            o.heads_q, o.heads_kv);
    return 2;
  }
  if (o.d > 512 || o.heads_kv > 16) {
    fprintf(stderr, "serving: --d is at most 512 and --heads-kv at most 16\n");
    return 2;
  }
  for (int i = 0; i < o.n_types; i++)
    if (txattn_dtype_block(o.types[i]) == 32 && o.d % 32 != 0) {
      fprintf(stderr,
              "serving: a %s cache needs --d a multiple of 32 (its blocks), not %" PRId64
              "; --dtype both leaves it out\n",
              txattn_dtype_name(o.types[i]), o.d);
      return 2;
    }
  txattn_options opts = TXATTN_OPTIONS_INIT;
  opts.n_threads = o.threads;
  txattn_context *ctx = NULL;
  if (failed(txattn_context_create(&opts, &ctx), "txattn_context_create")) return 1;
  int rc = 0;
  for (int i = 0; i < o.n_types && rc == 0; i++) rc = serve(ctx, &o, o.types[i]);
  txattn_context_free(ctx);
  return rc;
}
