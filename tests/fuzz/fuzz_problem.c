/* SPDX-License-Identifier: MIT */
/* Fuzz target: problem validation, planning and tiny problems against the reference. The input
   decodes into a txattn_problem (small sizes mostly, and now and then huge, negative or overflowing
   ones; masks and windows, element types, scales from 1e-45 to FLT_MAX, NaN and Inf; struct_size
   variants with garbage past the fields), per-tensor strides (contiguous, small, or huge, negative
   and overflowing), the values (a seed, a magnitude and maybe a NaN) and a kernel of the shipped
   plugins or the dispatcher, on 1 or 2 threads.
   Then: a problem txattn_problem_resolve refuses must not plan; strides that are negative or whose
   span overflows must be refused; a problem small enough to hold in memory runs on tensors of
   exactly the size its strides claim (so ASan sees a read or write outside them), and when the
   call succeeds the output must agree with txattn_reference within txattn_error_bound (NaN where
   the reference has NaN), the inputs must be unchanged and no element of o outside the problem
   (between strided rows) may be written. Any disagreement aborts: it is a finding. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "txattn/txattn.h"

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    dprintf(2, "fuzz_problem: " __VA_ARGS__);                                                      \
    dprintf(2, "\n");                                                                              \
    abort();                                                                                       \
  } while (0)

/* Small enough to run: elements in one tensor's span, and multiply-adds of the reference. */
#define MAX_SPAN  (INT64_C(1) << 18)
#define MAX_WORK  (INT64_C(1) << 18)
#define N_THREADS 2

/* A malloc too large fails as the library expects instead of ending the process (ASan's default):
   the library must refuse what it cannot allocate. ASAN_OPTIONS adds to this. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}

static txattn_context *contexts[N_THREADS]; /* 1 and 2 threads */

static void cleanup(void) {
  for (int i = 0; i < N_THREADS; i++) txattn_context_free(contexts[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  for (int i = 0; i < N_THREADS; i++) {
    txattn_options opts = TXATTN_OPTIONS_INIT;
    opts.table_path = ""; /* the estimate chooses: no file of this machine's decides */
    opts.n_threads = i + 1;
    opts.caches = "l1d=48K,l2=1M,l3=32M";
    if (txattn_context_create(&opts, &contexts[i]) != TXATTN_OK)
      FAIL("no context: %s", txattn_last_error());
  }
  if (txattn_kernel_count(contexts[0]) == 0) FAIL("no kernel loaded");
  atexit(cleanup);
  return 0;
}

/* ---- decoding ---- */

static int64_t special(fuzz_input *in, uint8_t sel) {
  static const int64_t values[] = {-1,
                                   -2,
                                   INT64_MIN,
                                   INT64_MAX,
                                   INT64_MAX / 2,
                                   (INT64_C(1) << 31) - 1,
                                   INT64_C(1) << 31,
                                   INT64_C(1) << 32,
                                   INT64_C(1) << 40,
                                   INT64_C(1) << 60,
                                   INT64_C(1) << 62,
                                   INT64_C(3037000500), /* about sqrt(INT64_MAX) */
                                   65536,
                                   100000};
  size_t n = sizeof values / sizeof values[0];
  size_t i = sel % (n + 1);
  return i < n ? values[i] : (int64_t)fuzz_u64(in);
}

/* Mostly 0..small_max; a byte of 224 or more picks a special value. */
static int64_t size_field(fuzz_input *in, int64_t small_max) {
  uint8_t sel = fuzz_u8(in);
  if (sel < 224) return sel % (small_max + 1);
  return special(in, sel);
}

static float scale_field(fuzz_input *in) {
  uint8_t sel = fuzz_u8(in);
  if (sel < 128) return 0.0f; /* the default */
  static const float values[] = {1.0f,   -1.0f, 0.125f,  0.0625f,  1e-30f,  1e-45f, 1e5f,
                                 1e10f,  1e30f, FLT_MAX, -FLT_MAX, FLT_MIN, NAN,    INFINITY,
                                 -1e10f, 3.0f,  100.0f,  -0.5f,    1000.0f, 2e4f};
  size_t n = sizeof values / sizeof values[0];
  size_t i = (size_t)(sel - 128) % (n + 1);
  if (i < n) return values[i];
  uint32_t bits = fuzz_u32(in);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static txattn_dtype dtype_field(fuzz_input *in) {
  uint8_t sel = fuzz_u8(in);
  return sel < 248 ? (txattn_dtype)(sel % 3) : (txattn_dtype)(sel - 245); /* 3..10: unknown */
}

static size_t dtype_bytes(txattn_dtype t) {
  return t == TXATTN_DTYPE_F32 ? 4 : 2;
}

/* ---- element conversions (exact reads; stores truncate, which is enough to make inputs) ---- */

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  float f;
  if (exp == 31) {
    uint32_t bits = sign | 0x7f800000u | (man << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  f = exp ? ldexpf((float)(man | 1024), (int)exp - 25) : ldexpf((float)man, -24);
  return sign ? -f : f;
}

static uint16_t f32_to_f16(float f) {
  if (isnan(f)) return 0x7e00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  float a = fabsf(f);
  if (a >= 65504.0f) return sign | 0x7bff; /* the largest finite: inputs stay finite */
  if (a < 6.103515625e-05f) return sign | (uint16_t)(a * 16777216.0f); /* subnormal */
  int e;
  float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  return sign | (uint16_t)((e + 14) << 10) | ((uint16_t)(m * 2048.0f) & 1023);
}

static float load(txattn_dtype t, const void *base, int64_t i) {
  if (t == TXATTN_DTYPE_F32) return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  if (t == TXATTN_DTYPE_F16) return f16_to_f32(h);
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void store(txattn_dtype t, void *base, int64_t i, float v) {
  if (t == TXATTN_DTYPE_F32) {
    ((float *)base)[i] = v;
  } else if (t == TXATTN_DTYPE_F16) {
    ((uint16_t *)base)[i] = f32_to_f16(v);
  } else {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    ((uint16_t *)base)[i] = (uint16_t)(bits >> 16);
  }
}

/* ---- tensors ---- */

/* A stride as decoded: below 160, padded past the dimensions inside it (by sel % 8 elements, so
   o's elements stay apart); 160..223, sel - 160 whatever the shape (inputs may alias); above,
   a special value. */
typedef struct stride_code {
  uint8_t sel;
  int64_t value;
} stride_code;

typedef struct tensor {
  int64_t count[4];     /* batch, heads, rows, dim */
  txattn_layout given;  /* what the call gets: all zero means contiguous */
  txattn_layout layout; /* the strides in effect */
  txattn_dtype type;
  int64_t span;        /* elements from the first to past the last; -1: overflows */
  int bad_stride;      /* a stride is negative */
  void *data;          /* span elements */
  unsigned char *used; /* o only: which elements the problem has */
} tensor;

/* The strides in effect (all-zero layout: contiguous) and the span they give. */
static void tensor_span(tensor *t) {
  t->layout = t->given;
  int64_t s[4] = {t->layout.batch, t->layout.head, t->layout.row, 1};
  if (!s[0] && !s[1] && !s[2]) {
    s[2] = t->count[3];
    int ov = __builtin_mul_overflow(s[2], t->count[2], &s[1]);
    ov |= __builtin_mul_overflow(s[1], t->count[1], &s[0]);
    if (ov) {
      t->span = -1;
      return;
    }
    t->layout = (txattn_layout){s[0], s[1], s[2]};
  }
  t->bad_stride = s[0] < 0 || s[1] < 0 || s[2] < 0;
  int64_t span = 1, term;
  for (int d = 0; d < 4; d++) {
    if (t->count[d] <= 0) {
      t->span = -1;
      return;
    }
    if (__builtin_mul_overflow(t->count[d] - 1, s[d], &term) ||
        __builtin_add_overflow(span, term, &span)) {
      t->span = -1;
      return;
    }
  }
  t->span = span;
}

static void strides_of(tensor *t, const stride_code code[3]) {
  int64_t inner = t->count[3], *out[3] = {&t->given.row, &t->given.head, &t->given.batch};
  for (int d = 0; d < 3; d++) { /* row, head, batch */
    int64_t v;
    if (code[d].sel < 160) {
      if (__builtin_add_overflow(inner, code[d].sel % 8, &v)) v = INT64_MAX;
    } else {
      v = code[d].sel < 224 ? code[d].sel - 160 : code[d].value;
    }
    *out[d] = v;
    if (__builtin_mul_overflow(v > 0 ? v : 1, t->count[2 - d], &inner)) inner = INT64_MAX;
  }
}

static int64_t index_of(const tensor *t, int64_t b, int64_t h, int64_t i, int64_t c) {
  return b * t->layout.batch + h * t->layout.head + i * t->layout.row + c;
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void fill(tensor *t, uint64_t *seed, float magnitude) {
  size_t bytes = (size_t)t->span * dtype_bytes(t->type);
  memset(t->data, 0xa5, bytes); /* the elements between strided rows */
  for (int64_t b = 0; b < t->count[0]; b++)
    for (int64_t h = 0; h < t->count[1]; h++)
      for (int64_t i = 0; i < t->count[2]; i++)
        for (int64_t c = 0; c < t->count[3]; c++) {
          double u = (double)(next(seed) >> 11) * 0x1p-53 * 2.0 - 1.0;
          store(t->type, t->data, index_of(t, b, h, i, c), (float)(u * magnitude));
        }
}

static void free_tensors(tensor *t, int n) {
  for (int i = 0; i < n; i++) {
    free(t[i].data);
    free(t[i].used);
  }
}

/* ---- the check ---- */

static void describe(const txattn_problem *p, char *buf, size_t size) {
  snprintf(buf, size,
           "b=%lld h=%lld/%lld n_q=%lld n_kv=%lld d=%lld/%lld mask=%d window=(%lld,%lld) scale=%g "
           "types=%d,%d,%d,%d",
           (long long)p->batch, (long long)p->heads_q, (long long)p->heads_kv, (long long)p->n_q,
           (long long)p->n_kv, (long long)p->d_qk, (long long)p->d_v, (int)p->mask,
           (long long)p->window_left, (long long)p->window_right, (double)p->scale, (int)p->q_type,
           (int)p->k_type, (int)p->v_type, (int)p->o_type);
}

static void compare(const txattn_problem *r, const tensor *o, const void *ref, double bound,
                    const char *who, const char *what) {
  for (int64_t b = 0; b < o->count[0]; b++)
    for (int64_t h = 0; h < o->count[1]; h++)
      for (int64_t i = 0; i < o->count[2]; i++)
        for (int64_t c = 0; c < o->count[3]; c++) {
          int64_t at = index_of(o, b, h, i, c);
          double x = load(o->type, o->data, at), y = load(o->type, ref, at);
          int ok;
          if (isnan(y) || isnan(x))
            ok = isnan(x) && isnan(y);
          else if (isinf(x) || isinf(y))
            ok = x == y || (r->o_type == TXATTN_DTYPE_F16 && fmin(fabs(x), fabs(y)) >= 65504.0);
          else
            ok = fabs(x - y) <= bound * (1.0 + 1e-9);
          if (!ok)
            FAIL("%s on %s: o[%lld][%lld][%lld][%lld] = %.9g, the reference %.9g, bound %.3g", who,
                 what, (long long)b, (long long)h, (long long)i, (long long)c, x, y, bound);
        }
  size_t width = dtype_bytes(o->type);
  for (int64_t e = 0; e < o->span; e++)
    if (!o->used[e] && memcmp((const char *)o->data + (size_t)e * width,
                              (const char *)ref + (size_t)e * width, width) != 0)
      FAIL("%s on %s wrote o's element %lld, which is outside the problem", who, what,
           (long long)e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_input in = {data, size, 0};
  /* the problem, inside zero padding that a struct_size past sizeof makes the library read */
  struct {
    txattn_problem p;
    unsigned char tail[32];
  } pp;
  memset(&pp, 0, sizeof pp);
  txattn_problem *p = &pp.p;
  p->batch = size_field(&in, 2);
  p->heads_q = size_field(&in, 4);
  p->heads_kv = size_field(&in, 4);
  p->n_q = size_field(&in, 72);
  p->n_kv = size_field(&in, 72);
  p->d_qk = size_field(&in, 40);
  p->d_v = size_field(&in, 40);
  uint8_t mask = fuzz_u8(&in);
  p->mask = mask < 252 ? (txattn_mask)(mask % 3) : (txattn_mask)(mask - 249);
  p->window_left = size_field(&in, 80);
  p->window_right = size_field(&in, 80);
  if (p->window_left > 72 && p->window_left < 81) p->window_left = TXATTN_UNBOUNDED;
  if (p->window_right > 72 && p->window_right < 81) p->window_right = TXATTN_UNBOUNDED;
  p->scale = scale_field(&in);
  p->q_type = dtype_field(&in);
  p->k_type = dtype_field(&in);
  p->v_type = dtype_field(&in);
  p->o_type = dtype_field(&in);
  uint8_t ss = fuzz_u8(&in);
  p->struct_size = ss < 232   ? sizeof *p
                   : ss < 240 ? 0
                   : ss < 248 ? TXATTN_PROBLEM_SIZE_0_2
                   : ss < 252 ? sizeof *p + 8 * (ss - 247)
                              : (size_t)(ss - 252) * 3; /* too small */
  if (ss >= 248 && ss < 252 && (fuzz_u8(&in) & 1)) pp.tail[fuzz_u8(&in) % 32] = 1;

  tensor t[4] = {0};
  stride_code codes[4][3] = {0};
  int strided[4] = {0};
  for (int i = 0; i < 4; i++) {
    strided[i] = fuzz_u8(&in) >= 176; /* else contiguous */
    for (int d = 0; d < 3 && strided[i]; d++) {
      codes[i][d].sel = fuzz_u8(&in);
      if (codes[i][d].sel >= 224) codes[i][d].value = special(&in, codes[i][d].sel);
    }
  }
  uint8_t mag_sel = fuzz_u8(&in);
  static const float magnitudes[] = {1.0f, 0.5f, 4.0f, 1e-3f, 30.0f, 300.0f, 5e4f, 1e-20f};
  float qk_mag = magnitudes[mag_sel & 7], v_mag = magnitudes[(mag_sel >> 3) & 7];
  uint8_t nan_sel = fuzz_u8(&in); /* >= 240: a NaN in tensor nan_sel & 3 */
  uint64_t nan_at = fuzz_u64(&in);
  uint8_t kernel_sel = fuzz_u8(&in), how = fuzz_u8(&in);
  uint64_t seed = fuzz_u64(&in) | 1;

  txattn_context *ctx = contexts[how & 1];
  size_t n_kernels = txattn_kernel_count(ctx);
  const char *kernel = NULL, *who = "the dispatcher";
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  if (kernel_sel >= 64 && txattn_kernel_get(ctx, kernel_sel % n_kernels, &info) == TXATTN_OK)
    kernel = who = info.name;
  char what[512];
  describe(p, what, sizeof what);

  txattn_problem r = TXATTN_PROBLEM_INIT;
  txattn_status resolved = txattn_problem_resolve(p, &r);
  txattn_plan *plan = NULL;
  txattn_status planned = txattn_plan_create(ctx, p, kernel, &plan);
  if (resolved != TXATTN_OK) {
    if (planned == TXATTN_OK) FAIL("%s planned %s, which resolve refuses", who, what);
    txattn_plan_free(plan);
    return 0;
  }
  if (planned == TXATTN_E_INTERNAL)
    FAIL("%s on %s: E_INTERNAL: %s", who, what, txattn_last_error());

  /* the tensors as the problem describes them */
  int64_t dims[4][4] = {{r.batch, r.heads_q, r.n_q, r.d_qk},
                        {r.batch, r.heads_kv, r.n_kv, r.d_qk},
                        {r.batch, r.heads_kv, r.n_kv, r.d_v},
                        {r.batch, r.heads_q, r.n_q, r.d_v}};
  const txattn_dtype types[4] = {r.q_type, r.k_type, r.v_type, r.o_type};
  int any_bad = 0, too_big = 0;
  for (int i = 0; i < 4; i++) {
    memcpy(t[i].count, dims[i], sizeof t[i].count);
    t[i].type = types[i];
    if (strided[i]) strides_of(&t[i], codes[i]);
    tensor_span(&t[i]);
    any_bad |= t[i].bad_stride || t[i].span < 0;
    too_big |= t[i].span < 0 || t[i].span > MAX_SPAN;
  }
  double work = (double)r.batch * (double)r.heads_q * (double)r.n_q * (double)r.n_kv *
                (double)(r.d_qk + r.d_v);
  too_big |= work > (double)MAX_WORK;

  txattn_tensors ts = TXATTN_TENSORS_INIT;
  ts.q_layout = t[0].given;
  ts.k_layout = t[1].given;
  ts.v_layout = t[2].given;
  ts.o_layout = t[3].given;
  if (any_bad) {
    /* negative strides or a span past int64: refused before anything is read or written */
    static float dummy[4][16];
    ts.q = dummy[0];
    ts.k = dummy[1];
    ts.v = dummy[2];
    ts.o = dummy[3];
    txattn_status st =
        planned == TXATTN_OK ? txattn_plan_execute(plan, &ts) : txattn_attention(ctx, p, &ts);
    if (st == TXATTN_OK) FAIL("%s ran %s on strides it should refuse", who, what);
    txattn_plan_free(plan);
    return 0;
  }
  if (too_big) {
    txattn_plan_free(plan);
    return 0;
  }

  void *inputs_copy[3] = {0};
  void *o_ref = NULL;
  int ok = 1;
  for (int i = 0; i < 4 && ok; i++) {
    size_t bytes = (size_t)t[i].span * dtype_bytes(t[i].type);
    t[i].data = malloc(bytes);
    ok = t[i].data != NULL;
    if (ok) fill(&t[i], &seed, i < 2 ? qk_mag : v_mag);
  }
  if (ok && nan_sel >= 240) {
    tensor *n = &t[nan_sel & 3];
    if ((nan_sel & 3) < 3) store(n->type, n->data, (int64_t)(nan_at % (uint64_t)n->span), NAN);
  }
  size_t o_bytes = (size_t)t[3].span * dtype_bytes(t[3].type);
  if (ok) {
    o_ref = malloc(o_bytes);
    t[3].used = calloc((size_t)t[3].span, 1);
    ok = o_ref && t[3].used;
  }
  for (int i = 0; i < 3 && ok; i++) {
    size_t bytes = (size_t)t[i].span * dtype_bytes(t[i].type);
    inputs_copy[i] = malloc(bytes);
    ok = inputs_copy[i] != NULL;
    if (ok) memcpy(inputs_copy[i], t[i].data, bytes);
  }
  if (!ok) {
    free(o_ref);
    for (int i = 0; i < 3; i++) free(inputs_copy[i]);
    free_tensors(t, 4);
    txattn_plan_free(plan);
    return 0;
  }
  for (int64_t b = 0; b < t[3].count[0]; b++)
    for (int64_t h = 0; h < t[3].count[1]; h++)
      for (int64_t i = 0; i < t[3].count[2]; i++)
        for (int64_t c = 0; c < t[3].count[3]; c++) t[3].used[index_of(&t[3], b, h, i, c)] = 1;
  memcpy(o_ref, t[3].data, o_bytes);

  ts.q_data = t[0].data;
  ts.k_data = t[1].data;
  ts.v_data = t[2].data;
  ts.o_data = t[3].data;
  txattn_status st;
  if (planned == TXATTN_OK && !(kernel == NULL && (how & 2)))
    st = txattn_plan_execute(plan, &ts);
  else
    st = txattn_attention(ctx, p, &ts); /* the dispatcher's own path, with its plan cache */
  if (st == TXATTN_E_INTERNAL) FAIL("%s on %s: E_INTERNAL: %s", who, what, txattn_last_error());

  txattn_tensors rt = ts;
  rt.o_data = o_ref;
  txattn_status rst = txattn_reference(p, &rt);
  double bound = 0;
  if (rst == TXATTN_OK) rst = txattn_error_bound(p, &rt, &bound);
  if (st == TXATTN_OK && rst != TXATTN_OK)
    FAIL("%s ran %s, which the reference refuses: %s", who, what, txattn_last_error());
  if (st == TXATTN_OK) compare(&r, &t[3], o_ref, bound, who, what);
  for (int i = 0; i < 3; i++)
    if (memcmp(inputs_copy[i], t[i].data, (size_t)t[i].span * dtype_bytes(t[i].type)) != 0)
      FAIL("%s on %s changed input %d", who, what, i);

  free(o_ref);
  for (int i = 0; i < 3; i++) free(inputs_copy[i]);
  free_tensors(t, 4);
  txattn_plan_free(plan);
  return 0;
}
