/* SPDX-License-Identifier: MIT */
/* What every fuzz harness shares: libFuzzer's entry points and a reader that decodes the input
   bytes into values, giving zeros once the bytes run out (so every input decodes to something). */
#ifndef TXATTN_FUZZ_INPUT_H
#define TXATTN_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

typedef struct fuzz_input {
  const uint8_t *data;
  size_t size, pos;
} fuzz_input;

static inline uint8_t fuzz_u8(fuzz_input *in) {
  return in->pos < in->size ? in->data[in->pos++] : 0;
}

static inline uint64_t fuzz_u64(fuzz_input *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)fuzz_u8(in) << (8 * i);
  return v;
}

static inline uint32_t fuzz_u32(fuzz_input *in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)fuzz_u8(in) << (8 * i);
  return v;
}

#endif
