/* SPDX-License-Identifier: MIT */
/* txattn_problem: validation, defaults, and counting the visible pairs. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "error.h"
#include "problem.h"
#include "struct_size.h"
#include "txattn/plugin.h"

/* A field where 0 takes a default and any other value must be positive. */
static txattn_status count_or_default(const char *field, int64_t v, int64_t def, int64_t *out) {
  TXATTN_RETURN_IF(v < 0, TXATTN_E_INVALID,
                   "txattn_problem.%s = %" PRId64 " must be >= 1 (0 takes the default, %" PRId64
                   ")",
                   field, v, def);
  *out = v == 0 ? def : v;
  return TXATTN_OK;
}

static txattn_status required_count(const char *field, int64_t v) {
  TXATTN_RETURN_IF(v < 1, TXATTN_E_INVALID,
                   "txattn_problem.%s = %" PRId64 " must be >= 1 (it has no default)", field, v);
  return TXATTN_OK;
}

static txattn_status resolve_sizes(const txattn_problem *p, txattn_problem *r) {
  TXATTN_FORWARD_IF_ERROR(count_or_default("batch", p->batch, 1, &r->batch));
  TXATTN_FORWARD_IF_ERROR(count_or_default("heads_q", p->heads_q, 1, &r->heads_q));
  TXATTN_FORWARD_IF_ERROR(count_or_default("heads_kv", p->heads_kv, r->heads_q, &r->heads_kv));
  TXATTN_FORWARD_IF_ERROR(required_count("n_q", p->n_q));
  TXATTN_FORWARD_IF_ERROR(count_or_default("n_kv", p->n_kv, p->n_q, &r->n_kv));
  TXATTN_FORWARD_IF_ERROR(required_count("d_qk", p->d_qk));
  TXATTN_FORWARD_IF_ERROR(count_or_default("d_v", p->d_v, p->d_qk, &r->d_v));
  r->n_q = p->n_q;
  r->d_qk = p->d_qk;
  TXATTN_RETURN_IF(r->heads_q % r->heads_kv != 0, TXATTN_E_INVALID,
                   "txattn_problem.heads_kv = %" PRId64 " does not divide heads_q = %" PRId64,
                   r->heads_kv, r->heads_q);
  return TXATTN_OK;
}

static txattn_status window_side(const char *field, int64_t w) {
  TXATTN_RETURN_IF(w < 0 && w != TXATTN_UNBOUNDED, TXATTN_E_INVALID,
                   "txattn_problem.%s = %" PRId64 " must be >= 0 or TXATTN_UNBOUNDED (-1)", field,
                   w);
  return TXATTN_OK;
}

static txattn_status resolve_mask(const txattn_problem *p, txattn_problem *r) {
  int m = (int)p->mask;
  TXATTN_RETURN_IF(m < TXATTN_MASK_NONE || m > TXATTN_MASK_WINDOW, TXATTN_E_INVALID,
                   "txattn_problem.mask = %d is not a txattn_mask (NONE 0, CAUSAL 1, WINDOW 2)", m);
  r->mask = p->mask;
  r->window_left = r->window_right = 0;
  if (p->mask != TXATTN_MASK_WINDOW) return TXATTN_OK;
  TXATTN_FORWARD_IF_ERROR(window_side("window_left", p->window_left));
  TXATTN_FORWARD_IF_ERROR(window_side("window_right", p->window_right));
  r->window_left = p->window_left;
  r->window_right = p->window_right;
  return TXATTN_OK;
}

/* Every tensor's type is a txattn_dtype; the 8-bit and 4-bit ones are k's and v's only, and a
   q8_0 or q4_0 row is whole blocks of 32. */
static txattn_status resolve_types(const txattn_problem *p, txattn_problem *r) {
  const txattn_dtype given[4] = {p->q_type, p->k_type, p->v_type, p->o_type};
  txattn_dtype *out[4] = {&r->q_type, &r->k_type, &r->v_type, &r->o_type};
  for (int i = 0; i < 4; i++) {
    TXATTN_RETURN_IF(txattn_dtype_size(given[i]) == 0, TXATTN_E_INVALID,
                     "txattn_problem.%c_type = %d is not a txattn_dtype (F32 0, F16 1, BF16 2, "
                     "Q8_0 3, E4M3 4, E5M2 5, Q4_0 6)",
                     "qkvo"[i], (int)given[i]);
    TXATTN_RETURN_IF((i == 0 || i == 3) &&
                         (TXATTN_DTYPE_BIT(given[i]) & (TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4)),
                     TXATTN_E_INVALID,
                     "txattn_problem.%c_type = %s: the 8-bit and 4-bit types are for k and v only "
                     "(%c takes f32, f16 or bf16)",
                     "qkvo"[i], txattn_dtype_name(given[i]), "qkvo"[i]);
    *out[i] = given[i];
  }
  const int64_t d[2] = {r->d_qk, r->d_v};
  for (int i = 0; i < 2; i++)
    TXATTN_RETURN_IF(txattn_dtype_block(given[1 + i]) == 32 && d[i] % 32 != 0, TXATTN_E_INVALID,
                     "txattn_problem.%s = %" PRId64
                     " is not a multiple of 32, which %c_type %s needs (its rows are blocks "
                     "of 32 values)",
                     i == 0 ? "d_qk" : "d_v", d[i], "kv"[i], txattn_dtype_name(given[1 + i]));
  return TXATTN_OK;
}

/* The one overflow a scale alone decides: kernels turn exp into exp2 with the fp32 constant
   |scale| log2(e) (rounded from double, as here), which must be finite. Any finite scale below that
   computes right whenever the fp32 dot products q . k are finite, since every kernel scales the
   difference of a score and its row's max, which is <= 0 (docs/error_bound.md, "Finite inputs"). */
static txattn_status check_scale_range(float scale) {
  const float scale2 = (float)(fabs((double)scale) * 1.4426950408889634); /* log2(e) */
  TXATTN_RETURN_IF(!isfinite(scale2), TXATTN_E_INVALID,
                   "txattn_problem.scale = %g is too large: |scale| * log2(e) overflows fp32 "
                   "(|scale| must be at most %g)",
                   (double)scale, (double)FLT_MAX / 1.4426950408889634);
  return TXATTN_OK;
}

static txattn_status resolve_scale(const txattn_problem *p, txattn_problem *r) {
  TXATTN_RETURN_IF(!isfinite(p->scale), TXATTN_E_INVALID,
                   "txattn_problem.scale = %g must be finite (0 takes the default 1/sqrt(d_qk))",
                   (double)p->scale);
  TXATTN_FORWARD_IF_ERROR(check_scale_range(p->scale));
  r->scale = p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)r->d_qk));
  return TXATTN_OK;
}

/* Every tensor's size in bytes must be representable, so that no kernel's index arithmetic can
 * overflow. */
static txattn_status tensor_size(const char *tensor, const char *names, int64_t a, int64_t b,
                                 int64_t c, int64_t d) {
  int64_t n;
  int over = __builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) ||
             __builtin_mul_overflow(n, d, &n) ||
             __builtin_mul_overflow(n, (int64_t)sizeof(float), &n) || n > TXATTN__MAX_TENSOR_BYTES;
  TXATTN_RETURN_IF(over, TXATTN_E_INVALID,
                   "txattn_problem: %s has %s = %" PRId64 " * %" PRId64 " * %" PRId64 " * %" PRId64
                   " elements: its size in bytes overflows int64 or exceeds the limit of 2^56",
                   tensor, names, a, b, c, d);
  return TXATTN_OK;
}

static txattn_status extent_at_most(const char *field, int64_t v, int64_t max) {
  TXATTN_RETURN_IF(v > max, TXATTN_E_INVALID,
                   "txattn_problem.%s = %" PRId64 " is above the limit %" PRId64
                   ": larger sizes could overflow the kernels' index and size arithmetic",
                   field, v, max);
  return TXATTN_OK;
}

/* The size limits, in one place (README "What is computed", "limits"): batch, n_q and n_kv are at
   most TXATTN__MAX_ROWS (2^31 - 1), heads_q (so heads_kv) at most TXATTN__MAX_HEADS (2^16), d_qk
   and d_v at most TXATTN__MAX_HEAD_SIZE (2^20), and every tensor, counted with its strides
   (tensors.c), spans at most TXATTN__MAX_TENSOR_BYTES (2^56) bytes, each stride too. Then any
   product of two extents, n_q x group x d, and 64 x a tensor's bytes fit in int64 and size_t: a
   kernel may form those unchecked, and checks anything larger (workspaces, packed copies) with
   __builtin_*_overflow. The caps also bound the kernels' cost counts (whose loops run O(group x
   register width) per piece of rows). */
static txattn_status check_sizes(const txattn_problem *r) {
  TXATTN_FORWARD_IF_ERROR(
      tensor_size("q", "batch*heads_q*n_q*d_qk", r->batch, r->heads_q, r->n_q, r->d_qk));
  if (r->page_size > 0) {
    TXATTN_FORWARD_IF_ERROR(tensor_size("k", "n_pages*heads_kv*page_size*d_qk", r->n_pages,
                                        r->heads_kv, r->page_size, r->d_qk));
    TXATTN_FORWARD_IF_ERROR(tensor_size("v", "n_pages*heads_kv*page_size*d_v", r->n_pages,
                                        r->heads_kv, r->page_size, r->d_v));
  } else {
    TXATTN_FORWARD_IF_ERROR(
        tensor_size("k", "batch*heads_kv*n_kv*d_qk", r->batch, r->heads_kv, r->n_kv, r->d_qk));
    TXATTN_FORWARD_IF_ERROR(
        tensor_size("v", "batch*heads_kv*n_kv*d_v", r->batch, r->heads_kv, r->n_kv, r->d_v));
  }
  TXATTN_FORWARD_IF_ERROR(
      tensor_size("o", "batch*heads_q*n_q*d_v", r->batch, r->heads_q, r->n_q, r->d_v));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("batch", r->batch, TXATTN__MAX_ROWS));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("heads_q", r->heads_q, TXATTN__MAX_HEADS));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("n_q", r->n_q, TXATTN__MAX_ROWS));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("n_kv", r->n_kv, TXATTN__MAX_ROWS));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("d_qk", r->d_qk, TXATTN__MAX_HEAD_SIZE));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("d_v", r->d_v, TXATTN__MAX_HEAD_SIZE));
  return TXATTN_OK;
}

/* The serving fields (past 0.2's struct; a caller whose struct_size stops before them reads 0). */
static txattn_status resolve_serving(const txattn_problem *p, txattn_problem *r) {
  TXATTN_RETURN_IF(p->lse != 0 && p->lse != 1, TXATTN_E_INVALID,
                   "txattn_problem.lse = %d must be 0 or 1", p->lse);
  TXATTN_RETURN_IF(p->ragged != 0 && p->ragged != 1, TXATTN_E_INVALID,
                   "txattn_problem.ragged = %d must be 0 or 1", p->ragged);
  r->lse = p->lse;
  r->ragged = p->ragged;
  return TXATTN_OK;
}

/* Paged K/V and packed queries (past the modifiers). Packed rows are a ragged batch whose q lengths
   come from q_offsets, so packed sets ragged. */
static txattn_status resolve_kv_cache(const txattn_problem *p, txattn_problem *r) {
  TXATTN_RETURN_IF(p->packed != 0 && p->packed != 1, TXATTN_E_INVALID,
                   "txattn_problem.packed = %d must be 0 or 1", p->packed);
  r->packed = p->packed;
  if (r->packed) r->ragged = 1;
  TXATTN_RETURN_IF(p->page_size < 0, TXATTN_E_INVALID,
                   "txattn_problem.page_size = %" PRId64 " must be >= 0 (0: K and V are not paged)",
                   p->page_size);
  r->page_size = r->max_pages = r->n_pages = 0;
  if (p->page_size == 0) {
    TXATTN_RETURN_IF(p->max_pages != 0 || p->n_pages != 0, TXATTN_E_INVALID,
                     "txattn_problem.max_pages = %" PRId64 " and n_pages = %" PRId64
                     " are for paged K/V, but page_size is 0",
                     p->max_pages, p->n_pages);
    return TXATTN_OK;
  }
  TXATTN_FORWARD_IF_ERROR(extent_at_most("page_size", p->page_size, TXATTN__MAX_ROWS));
  TXATTN_RETURN_IF(p->n_pages < 1, TXATTN_E_INVALID,
                   "txattn_problem.n_pages = %" PRId64 " must be >= 1 with page_size %" PRId64
                   " (the pages in the pool)",
                   p->n_pages, p->page_size);
  TXATTN_FORWARD_IF_ERROR(extent_at_most("n_pages", p->n_pages, TXATTN__MAX_ROWS));
  const int64_t need = (r->n_kv + p->page_size - 1) / p->page_size;
  TXATTN_FORWARD_IF_ERROR(count_or_default("max_pages", p->max_pages, need, &r->max_pages));
  TXATTN_FORWARD_IF_ERROR(extent_at_most("max_pages", r->max_pages, TXATTN__MAX_ROWS));
  /* a ragged batch's table rows are checked against each kv_len with the tensors */
  TXATTN_RETURN_IF(!r->ragged && r->max_pages < need, TXATTN_E_INVALID,
                   "txattn_problem.max_pages = %" PRId64 " pages of %" PRId64
                   " keys hold fewer than n_kv = %" PRId64 " keys (it needs %" PRId64 ")",
                   r->max_pages, p->page_size, r->n_kv, need);
  r->page_size = p->page_size;
  r->n_pages = p->n_pages;
  return TXATTN_OK;
}

/* The score modifiers (past the serving fields); their data (slopes, sink logits) is checked with
   the tensors. */
static txattn_status resolve_modifiers(const txattn_problem *p, txattn_problem *r) {
  TXATTN_RETURN_IF(!(isfinite(p->softcap) && p->softcap >= 0.0f), TXATTN_E_INVALID,
                   "txattn_problem.softcap = %g must be finite and >= 0 (0: no softcap)",
                   (double)p->softcap);
  TXATTN_RETURN_IF(p->alibi != 0 && p->alibi != 1, TXATTN_E_INVALID,
                   "txattn_problem.alibi = %d must be 0 or 1", p->alibi);
  TXATTN_RETURN_IF(p->sinks != 0 && p->sinks != 1, TXATTN_E_INVALID,
                   "txattn_problem.sinks = %d must be 0 or 1", p->sinks);
  TXATTN_RETURN_IF(p->sink_keys < 0, TXATTN_E_INVALID,
                   "txattn_problem.sink_keys = %" PRId64 " must be >= 0 (0: none)", p->sink_keys);
  r->softcap = p->softcap;
  r->alibi = p->alibi;
  r->sinks = p->sinks;
  /* keys past n_kv do not exist, and without a mask every key is visible anyway: equal problems
     resolve equal */
  r->sink_keys = p->sink_keys < r->n_kv ? p->sink_keys : r->n_kv;
  if (r->mask == TXATTN_MASK_NONE) r->sink_keys = 0;
  return TXATTN_OK;
}

/* The mask tensor's kind and type (past the modifiers); its data is checked with the tensors. */
static txattn_status resolve_mask_tensor(const txattn_problem *p, txattn_problem *r) {
  TXATTN_RETURN_IF(p->mask_tensor < TXATTN_MASK_TENSOR_NONE ||
                       p->mask_tensor > TXATTN_MASK_TENSOR_ADDITIVE,
                   TXATTN_E_INVALID,
                   "txattn_problem.mask_tensor = %d is not a txattn_mask_tensor (0 none, 1 bool, "
                   "2 additive)",
                   (int)p->mask_tensor);
  r->mask_tensor = p->mask_tensor;
  if (r->mask_tensor != TXATTN_MASK_TENSOR_ADDITIVE) return TXATTN_OK; /* type resolves to 0 */
  TXATTN_RETURN_IF(p->mask_type != TXATTN_DTYPE_F32 && p->mask_type != TXATTN_DTYPE_F16 &&
                       p->mask_type != TXATTN_DTYPE_BF16,
                   TXATTN_E_INVALID,
                   "txattn_problem.mask_type = %d is not f32, f16 or bf16 (the mask tensor's "
                   "types)",
                   (int)p->mask_type);
  r->mask_type = p->mask_type;
  return TXATTN_OK;
}

txattn_status txattn__problem_resolve(const txattn_problem *given, txattn_problem *out) {
  TXATTN_RETURN_IF(given == NULL, TXATTN_E_INVALID, "txattn_problem is NULL");
  txattn_problem in = TXATTN_PROBLEM_INIT, r = TXATTN_PROBLEM_INIT;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_problem, given, &in));
  const txattn_problem *p = &in;
  memset(&r, 0, sizeof r); /* padding too: callers may memcmp resolved problems */
  r.struct_size = sizeof r;
  TXATTN_FORWARD_IF_ERROR(resolve_sizes(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_mask(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_scale(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_types(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_serving(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_modifiers(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_mask_tensor(p, &r));
  TXATTN_FORWARD_IF_ERROR(resolve_kv_cache(p, &r));
  TXATTN_FORWARD_IF_ERROR(check_sizes(&r));
  *out = r;
  return TXATTN_OK;
}

txattn_status txattn_problem_resolve(const txattn_problem *p, txattn_problem *out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_problem_resolve: out is NULL");
  txattn_problem r = TXATTN_PROBLEM_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_problem, out, &r));
  return txattn__ok();
}

/* Sum over integers x in [a, b) of max(0, c + s*x), for a slope s in {-1, 0, 1}. */
static double ramp_sum(int64_t a, int64_t b, int64_t c, int s) {
  if (s > 0 && a < 1 - c) a = 1 - c;
  if (s < 0 && b > c) b = c;
  if (a >= b || (s == 0 && c <= 0)) return 0.0;
  double first = (double)c + s * (double)a, last = (double)c + s * (double)(b - 1);
  return (double)(b - a) * (first + last) / 2.0;
}

/* The sink keys row i sees beyond its mask's range [lo, hi): those of [0, K) outside it. */
static int64_t extra_sink_keys(const txattn_problem *r, int64_t i) {
  int64_t lo, hi, k = r->sink_keys;
  txattn_visible_range(r, i, &lo, &hi);
  if (lo >= hi) return k;
  return (lo < k ? lo : k) + (hi < k ? k - hi : 0);
}

/* Sum over rows of extra_sink_keys, which is linear in i between the points where a clamp in
   txattn_visible_range or in it switches: each stretch between those points is summed from its
   two ends. */
static double sink_key_pairs(const txattn_problem *r) {
  if (r->sink_keys <= 0) return 0.0;
  int64_t shift = r->n_kv - r->n_q, L = r->n_kv, R = r->n_q, k = r->sink_keys;
  if (r->mask == TXATTN_MASK_CAUSAL) R = 0;
  if (r->mask == TXATTN_MASK_WINDOW) {
    if (r->window_left != TXATTN_UNBOUNDED && r->window_left < L) L = r->window_left;
    if (r->window_right != TXATTN_UNBOUNDED && r->window_right < R) R = r->window_right;
  }
  /* kinks in pos: pos - L in {0, k}, pos + R + 1 in {0, k, n_kv}; as rows i = pos - shift */
  int64_t kinks[5] = {L, L + k, -R - 1, k - R - 1, r->n_kv - R - 1}, cut[12];
  int n = 0;
  cut[n++] = 0;
  cut[n++] = r->n_q;
  for (int j = 0; j < 5; j++)
    for (int64_t c = kinks[j] - shift; c <= kinks[j] - shift + 1; c++)
      if (c > 0 && c < r->n_q) cut[n++] = c;
  for (int a = 1; a < n; a++) /* insertion sort of at most 12 */
    for (int b = a; b > 0 && cut[b - 1] > cut[b]; b--) {
      int64_t t = cut[b];
      cut[b] = cut[b - 1];
      cut[b - 1] = t;
    }
  double sum = 0.0;
  for (int j = 0; j + 1 < n; j++) {
    int64_t a = cut[j], b = cut[j + 1] - 1; /* rows a..b, where the count is linear */
    if (b < a) continue;
    sum +=
        (double)(b - a + 1) * ((double)extra_sink_keys(r, a) + (double)extra_sink_keys(r, b)) / 2.0;
  }
  return sum;
}

/* Row at position pos sees keys [max(0, pos - L), min(n_kv, pos + R + 1)). Every mask is such a
   window once an unbounded side is replaced by one wide enough to reach past every key (L = n_kv, R
   = n_q), and that count is piecewise linear in pos with kinks at pos = n_kv - R - 1 and pos = L.
 */
double txattn__visible_pairs(const txattn_problem *r) {
  int64_t L = r->n_kv, R = r->n_q;
  if (r->mask == TXATTN_MASK_CAUSAL) R = 0;
  if (r->mask == TXATTN_MASK_WINDOW) {
    if (r->window_left != TXATTN_UNBOUNDED && r->window_left < L) L = r->window_left;
    if (r->window_right != TXATTN_UNBOUNDED && r->window_right < R) R = r->window_right;
  }
  int64_t cut[4] = {r->n_kv - r->n_q, r->n_kv - R - 1, L, r->n_kv};
  for (int i = 1; i < 3; i++) /* keep the kinks inside [first, last] and in order */
    cut[i] = cut[i] < cut[0] ? cut[0] : cut[i] > cut[3] ? cut[3] : cut[i];
  if (cut[1] > cut[2]) {
    int64_t t = cut[1];
    cut[1] = cut[2];
    cut[2] = t;
  }
  double per_head = 0.0;
  for (int i = 0; i < 3; i++) {
    int64_t a = cut[i];
    int hi_slope = a < r->n_kv - R - 1, lo_slope = a >= L;
    int64_t c = (hi_slope ? R + 1 : r->n_kv) - (lo_slope ? -L : 0);
    per_head += ramp_sum(a, cut[i + 1], c, hi_slope - lo_slope);
  }
  per_head += sink_key_pairs(r);
  return per_head * (double)r->batch * (double)r->heads_q;
}

double txattn_problem_visible_pairs(const txattn_problem *p) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  if (txattn__problem_resolve(p, &r) != TXATTN_OK) return -1.0;
  return txattn__visible_pairs(&r);
}

txattn_status txattn_alibi_slopes(int64_t heads_q, float max_bias, float *out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_alibi_slopes: out is NULL");
  TXATTN_RETURN_IF(heads_q < 1 || heads_q > TXATTN__MAX_HEADS, TXATTN_E_INVALID,
                   "txattn_alibi_slopes: heads_q = %" PRId64 " must be within 1..%" PRId64, heads_q,
                   TXATTN__MAX_HEADS);
  TXATTN_RETURN_IF(!(isfinite(max_bias) && max_bias >= 0.0f), TXATTN_E_INVALID,
                   "txattn_alibi_slopes: max_bias = %g must be finite and >= 0", (double)max_bias);
  /* in float, step for step as ggml's soft_max and flash_attn_ext compute them */
  const uint32_t n = 1u << (uint32_t)floorf(log2f((float)heads_q));
  const float m0 = powf(2.0f, -(max_bias) / (float)n);
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n);
  for (int64_t h = 0; h < heads_q; h++)
    out[h] = (uint32_t)h < n ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n) + 1));
  return txattn__ok();
}
