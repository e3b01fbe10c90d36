/* SPDX-License-Identifier: MIT */
/* txattn_convert and txattn_convert_scale: filling and reading caches of every element type, so
 * that callers never write the 8-bit formats by hand. Every argument and every value is checked
 * before the first byte is written. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "txattn/plugin.h"

static int is_fp8(txattn_dtype t) {
  return t == TXATTN_DTYPE_E4M3 || t == TXATTN_DTYPE_E5M2;
}
/* The 8-bit and 4-bit types (k's and v's only). */
static int is_narrow(txattn_dtype t) {
  return (TXATTN_DTYPE_BIT(t) & (TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4)) != 0;
}

/* The pointer, its alignment to its type's elements (2 bytes for a q8_0 or q4_0 block's f16
   scale) and the value count a block type needs. */
static txattn_status operand(const char *what, const void *x, txattn_dtype t, int64_t n) {
  TXATTN_RETURN_IF(txattn_dtype_size(t) == 0, TXATTN_E_INVALID,
                   "txattn_convert: %s_type = %d is not a txattn_dtype", what, (int)t);
  TXATTN_RETURN_IF(x == NULL, TXATTN_E_INVALID, "txattn_convert: %s is NULL", what);
  const uintptr_t align = txattn_dtype_block(t) == 32 ? 2 : (uintptr_t)txattn_dtype_size(t);
  TXATTN_RETURN_IF((uintptr_t)x % align != 0, TXATTN_E_INVALID,
                   "txattn_convert: %s = %p is not aligned to %u bytes (its type %s)", what, x,
                   (unsigned)align, txattn_dtype_name(t));
  TXATTN_RETURN_IF(n % txattn_dtype_block(t) != 0, TXATTN_E_INVALID,
                   "txattn_convert: n = %" PRId64 " is not a multiple of 32, which %s %s needs", n,
                   what, txattn_dtype_name(t));
  return TXATTN_OK;
}

static txattn_status check_scale(txattn_dtype fp8, float scale) {
  double lo, hi, largest;
  txattn__fp8_range(fp8, &lo, &hi, &largest);
  TXATTN_RETURN_IF(!(scale >= lo && scale <= hi), TXATTN_E_INVALID,
                   "txattn_convert: scale = %g must be within %g .. %g for %s (as "
                   "txattn_tensors.k_scale)",
                   (double)scale, lo, hi, txattn_dtype_name(fp8));
  return TXATTN_OK;
}

/* ggml's quantize_row_q8_0 for one block of 32 floats: d = amax / 127 in fp32, stored as f16. */
static float q8_0_scale(const float *x) {
  float amax = 0.0f;
  for (int c = 0; c < 32; c++) amax = fmaxf(amax, fabsf(x[c]));
  return amax / 127.0f;
}

/* ggml's quantize_row_q4_0: d = m / -8 in fp32, m the first value of the largest magnitude. */
static float q4_0_scale(const float *x) {
  float amax = 0.0f, m = 0.0f;
  for (int c = 0; c < 32; c++)
    if (amax < fabsf(x[c])) {
      amax = fabsf(x[c]);
      m = x[c];
    }
  return m / -8.0f;
}

/* Every value of src that to-q8_0 (q4_0) takes: finite, and each block's d within f16's range. */
static txattn_status block_check(const void *src, txattn_dtype st, int64_t n, txattn_dtype dt) {
  const int q4 = dt == TXATTN_DTYPE_Q4_0;
  float x[32];
  for (int64_t b = 0; b < n / 32; b++) {
    for (int c = 0; c < 32; c++) {
      x[c] = (float)txattn__load(src, st, b * 32 + c);
      TXATTN_RETURN_IF(!isfinite(x[c]), TXATTN_E_INVALID,
                       "txattn_convert: value %" PRId64 " is %g, which %s cannot hold", b * 32 + c,
                       (double)x[c], txattn_dtype_name(dt));
    }
    uint16_t d;
    const float scale = q4 ? q4_0_scale(x) : q8_0_scale(x);
    txattn__store(&d, TXATTN_DTYPE_F16, 0, (double)scale);
    TXATTN_RETURN_IF((d & 0x7c00) == 0x7c00, TXATTN_E_INVALID,
                     "txattn_convert: block %" PRId64 " (values %" PRId64 "..) has max |x| %g, "
                     "whose %s scale max |x| / %d overflows f16 (at most 65504 * %d)",
                     b, b * 32, fabs((double)scale) * (q4 ? 8 : 127), txattn_dtype_name(dt),
                     q4 ? 8 : 127, q4 ? 8 : 127);
  }
  return TXATTN_OK;
}

/* src's n values into q8_0 or q4_0 blocks at dst, as ggml's quantize_row_q8_0 / _q4_0. */
static void to_blocks(const void *src, txattn_dtype st, void *dst, int64_t n, txattn_dtype dt) {
  float x[32];
  for (int64_t b = 0; b < n / 32; b++) {
    for (int c = 0; c < 32; c++) x[c] = (float)txattn__load(src, st, b * 32 + c);
    const int q4 = dt == TXATTN_DTYPE_Q4_0;
    /* ggml's 1 / d, but 0 where that overflows (|d| < 2^-128, stored as f16 0 anyway): then
       every q is the zero point, where ggml's conversion of x * inf would be undefined */
    const float d = q4 ? q4_0_scale(x) : q8_0_scale(x), inv = d != 0.0f ? 1.0f / d : 0.0f;
    const float id = isfinite(inv) ? inv : 0.0f;
    if (!q4) {
      txattn_block_q8_0 *y = (txattn_block_q8_0 *)dst + b;
      txattn__store(&y->d, TXATTN_DTYPE_F16, 0, (double)d);
      for (int c = 0; c < 32; c++) y->qs[c] = (int8_t)roundf(x[c] * id);
      continue;
    }
    txattn_block_q4_0 *y = (txattn_block_q4_0 *)dst + b;
    txattn__store(&y->d, TXATTN_DTYPE_F16, 0, (double)d);
    for (int c = 0; c < 16; c++) {
      const int lo = (int)(x[c] * id + 8.5f), hi = (int)(x[c + 16] * id + 8.5f);
      y->qs[c] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
    }
  }
}

txattn_status txattn_convert(const void *src, txattn_dtype src_type, void *dst,
                             txattn_dtype dst_type, int64_t n, float scale) {
  TXATTN_RETURN_IF(n < 0, TXATTN_E_INVALID, "txattn_convert: n = %" PRId64 " must be >= 0", n);
  TXATTN_FORWARD_IF_ERROR(operand("src", src, src_type, n));
  TXATTN_FORWARD_IF_ERROR(operand("dst", dst, dst_type, n));
  TXATTN_RETURN_IF(is_narrow(src_type) && is_narrow(dst_type), TXATTN_E_INVALID,
                   "txattn_convert: %s to %s: convert from one 8-bit or 4-bit type to another "
                   "through f32",
                   txattn_dtype_name(src_type), txattn_dtype_name(dst_type));
  const int64_t sb = txattn_dtype_bytes(src_type, n), db = txattn_dtype_bytes(dst_type, n);
  const uintptr_t s0 = (uintptr_t)src, d0 = (uintptr_t)dst;
  TXATTN_RETURN_IF(n > 0 && s0 < d0 + (uintptr_t)db && d0 < s0 + (uintptr_t)sb, TXATTN_E_INVALID,
                   "txattn_convert: src and dst overlap");
  const txattn_dtype fp8 = is_fp8(src_type) ? src_type : dst_type;
  if (is_fp8(fp8))
    TXATTN_FORWARD_IF_ERROR(check_scale(fp8, scale));
  else
    TXATTN_RETURN_IF(scale != 1.0f, TXATTN_E_INVALID,
                     "txattn_convert: scale = %g, but neither side is e4m3 or e5m2 (it must be 1)",
                     (double)scale);
  if (dst_type == TXATTN_DTYPE_Q8_0 || dst_type == TXATTN_DTYPE_Q4_0) {
    TXATTN_FORWARD_IF_ERROR(block_check(src, src_type, n, dst_type));
    to_blocks(src, src_type, dst, n, dst_type);
  } else if (is_fp8(dst_type)) {
    for (int64_t c = 0; c < n; c++) /* x / scale in fp32, as vLLM divides before the cast */
      ((uint8_t *)dst)[c] =
          txattn__fp8_bits(dst_type, (float)txattn__load(src, src_type, c) / scale);
  } else if (is_narrow(src_type)) { /* the kernels' values, then rounded to dst's type */
    float x[256];
    for (int64_t c = 0; c < n; c += 256) {
      const int64_t m = n - c < 256 ? n - c : 256;
      txattn_row_to_f32((const unsigned char *)src + txattn_elem_offset(src_type, c), src_type,
                        scale, m, x);
      for (int64_t i = 0; i < m; i++) txattn__store(dst, dst_type, c + i, (double)x[i]);
    }
  } else {
    for (int64_t c = 0; c < n; c++) txattn__store(dst, dst_type, c, txattn__load(src, src_type, c));
  }
  return txattn__ok();
}

txattn_status txattn_convert_scale(const void *src, txattn_dtype src_type, int64_t n,
                                   txattn_dtype fp8_type, float *scale) {
  TXATTN_RETURN_IF(n < 0, TXATTN_E_INVALID, "txattn_convert_scale: n = %" PRId64 " must be >= 0",
                   n);
  TXATTN_RETURN_IF(scale == NULL, TXATTN_E_INVALID, "txattn_convert_scale: scale is NULL");
  TXATTN_RETURN_IF(!is_fp8(fp8_type), TXATTN_E_INVALID,
                   "txattn_convert_scale: fp8_type = %s is not e4m3 or e5m2",
                   txattn_dtype_name(fp8_type));
  TXATTN_RETURN_IF(is_narrow(src_type), TXATTN_E_INVALID,
                   "txattn_convert_scale: src_type = %s: the values must be f32, f16 or bf16",
                   txattn_dtype_name(src_type));
  TXATTN_FORWARD_IF_ERROR(operand("src", src, src_type, n));
  float amax = 0.0f;
  for (int64_t c = 0; c < n; c++) {
    const float x = (float)txattn__load(src, src_type, c);
    TXATTN_RETURN_IF(isinf(x), TXATTN_E_INVALID,
                     "txattn_convert_scale: value %" PRId64 " is %g: no scale maps it into %s", c,
                     (double)x, txattn_dtype_name(fp8_type));
    if (fabsf(x) > amax) amax = fabsf(x); /* NaN compares false: skipped */
  }
  double lo, hi, largest;
  txattn__fp8_range(fp8_type, &lo, &hi, &largest);
  const float s = amax / (float)largest;
  *scale = amax == 0.0f ? 1.0f : s < (float)lo ? (float)lo : s;
  return txattn__ok();
}
