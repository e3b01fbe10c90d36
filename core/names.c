/* SPDX-License-Identifier: MIT */
/* The one home of the names of the ISAs, masks, kernel flags and element types: the library's messages,
 * txattn_kernel_info, TXATTN_MAX_ISA and the dispatch table file all spell them through these. */
#include "txattn/plugin.h"

const char *txattn_isa_name(txattn_isa isa) {
  static const char *const names[TXATTN_ISA_COUNT_] = {"scalar", "avx2", "avx512", "neon",
                                                       "avx512bf16"};
  unsigned i = (unsigned)isa;
  return i < TXATTN_ISA_COUNT_ ? names[i] : "unknown";
}

const char *txattn_mask_name(txattn_mask mask) {
  static const char *const names[] = {"none", "causal", "window"};
  unsigned i = (unsigned)mask;
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

const char *txattn_kernel_flag_name(unsigned flag) {
  static const char *const names[] = {"threaded",    "sparse", "lse",   "ragged",
                                      "softcap",     "alibi",  "sinks", "sink_keys",
                                      "mask_tensor", "paged",  "packed"};
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (flag == 1u << i) return names[i];
  return NULL;
}

const char *txattn_dtype_name(txattn_dtype dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "q8_0", "e4m3", "e5m2", "q4_0"};
  unsigned i = (unsigned)dtype;
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

size_t txattn_dtype_size(txattn_dtype dtype) {
  static const size_t sizes[] = {4, 2, 2, 34, 1, 1, 18};
  unsigned i = (unsigned)dtype;
  return i < sizeof sizes / sizeof sizes[0] ? sizes[i] : 0;
}

int64_t txattn_dtype_block(txattn_dtype dtype) {
  if (txattn_dtype_size(dtype) == 0) return 0;
  return dtype == TXATTN_DTYPE_Q8_0 || dtype == TXATTN_DTYPE_Q4_0 ? 32 : 1;
}

int64_t txattn_dtype_bytes(txattn_dtype dtype, int64_t n) {
  const int64_t block = txattn_dtype_block(dtype);
  if (block == 0 || n < 0) return 0;
  return (n / block + (n % block != 0)) * (int64_t)txattn_dtype_size(dtype);
}
