/* SPDX-License-Identifier: MIT */
/* vf_exp2: 2^x over the vector layer, for softmax weights computed in base 2.
 *
 * Include after a vec_<isa>.h. Defined on every float: x is clamped to [-127, 128] first, so that
 * 2^k always fits the exponent field (k + 127 in [0, 255]); x > 127.5 gives +inf (k = 128, though
 * 2^x is finite below 128), x in (-inf, -126.5) gives +0. The softmax only asks for x <= 0 (a score minus the max of the same
 * scores, times a positive constant), so the upper clamp is a guard that never binds there; a min
 * next to the max costs nothing measurable (docs/error_bound.md, "Finite inputs").
 *
 * Method: clamp x; k = round-to-nearest(x) by adding
 * VEC_EXP2_MAGIC = 1.5 * 2^23 + 127 (which also leaves k + 127 in the low significand bits, ready
 * to be shifted into an exponent); f = x - k in [-0.5, 0.5]; 2^f = 1 + f * q(f) with q of degree 5,
 * a minimax fit of the relative error (Remez exchange, 50 digits; max relative error of the
 * polynomial 2.6e-9); result = 2^f * 2^k.
 *
 * Accuracy against exp2() in double on every float of [-126, 0]: just over 1 ulp with a fused
 * multiply-add (AVX2; AVX-512 and NEON evaluate the same fused operations), under 1.3 ulp over
 * vec_scalar.h (a * b + c rounds twice); tests/test_vexp.c asserts these bounds on every ISA the
 * CPU runs. Against SLEEF's exp2f it is about twice as fast for a fraction of an ulp more, far
 * inside the kernel's tolerance of 1e-5, so we keep it (figures: docs/measurements.md).
 *
 * Special values: 2^0 = 1 exactly; -inf -> +0; +inf -> +inf; NaN -> NaN (it passes through the
 * clamps, the polynomial and the final multiply). Results below 2^-126.5 flush to +0; results in [2^-126.5,
 * 2^-126) are subnormal, rounded once by the final multiply. Requires the default rounding mode
 * (round to nearest).
 */
#ifndef VEC_EXP2_H
#define VEC_EXP2_H

#define VEC_EXP2_MAGIC 12583039.0f /* 1.5 * 2^23 + 127 */

static inline vf vf_exp2(vf x) {
  x = vf_min(vf_set1(128.0f), vf_max(vf_set1(-127.0f), x));
  vf t = vf_add(x, vf_set1(VEC_EXP2_MAGIC));
  vf k = vf_sub(t, vf_set1(VEC_EXP2_MAGIC));
  vf f = vf_sub(x, k);
  vf p = vf_set1(1.559467816e-04f);
  p = vf_fma(p, f, vf_set1(1.340664390e-03f));
  p = vf_fma(p, f, vf_set1(9.617692973e-03f));
  p = vf_fma(p, f, vf_set1(5.550310551e-02f));
  p = vf_fma(p, f, vf_set1(2.402265278e-01f));
  p = vf_fma(p, f, vf_set1(6.931472150e-01f));
  p = vf_fma(p, f, vf_set1(1.0f));
  return vf_mul(p, vf_exp2_scale(t));
}

/* The softmax's weight 2^x (x <= 0: a score minus the max): vf_exp2(x) for x >= -VEC_WEIGHT_FLOOR,
   +0 below. A weight below 2^-64 is nothing next to the max's 1, but its products with V are near
   the subnormals: an FMA that rounds to a subnormal takes a microcode assist on x86 (about 150
   cycles, not 1), and with ALiBi's steep slopes nearly every row met such weights in every key
   block, which made the call up to 2x slower (docs/measurements.md). Dropping them moves l and O by
   less than n_kv 2^-64 relative (docs/error_bound.md, "Weights below 2^-64"). Branch-free:
   x + 2^32 min(0, x + 64) is x from -64 up and below -2^14 under it (x + 64 is exact near -64,
   so it is at least 2^-17 away from 0 there), which vf_exp2 takes to +0; -inf and NaN pass. */
#define VEC_WEIGHT_FLOOR 64.0f
static inline vf vf_exp2_weight(vf x) {
  const vf below = vf_min(vf_zero(), vf_add(x, vf_set1(VEC_WEIGHT_FLOOR)));
  return vf_exp2(vf_fma(vf_set1(0x1p32f), below, x));
}

/* tanh(y) = sign(y) (1 - 2 / (2^(2 log2(e) |y|) + 1)), for the softcap c tanh(s / c): within 5.2
   u = 5.2 * 2^-24 of tanh(y) absolutely (not relatively near 0; docs/error_bound.md, "Score
   modifiers", derives it and tests/test_vexp.c measures it). +-inf gives +-1, NaN stays NaN,
   +-0 stays +-0. */
static inline vf vf_tanh(vf y) {
  const vf one = vf_set1(1.0f);
  const vf e = vf_exp2(vf_mul(vf_copysign(y, one), vf_set1(2.88539008f))); /* 2 log2(e) */
  return vf_copysign(vf_sub(one, vf_div(vf_set1(2.0f), vf_add(e, one))), y);
}

#endif /* VEC_EXP2_H */
