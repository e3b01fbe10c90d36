/* SPDX-License-Identifier: MIT */
/* Fuzz target: the TXATTN_CACHES / txattn_options.caches parser (core/machine/cache_spec.c, linked
   as source). Every text either parses to sizes within what the parser documents (each level 0 or
   1 KiB .. 1 TiB) or fails with E_INVALID and a message; anything else aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "machine/cache_spec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static int size_ok(int64_t v) {
  return v == 0 || (v >= 1024 && v <= (INT64_C(1) << 40));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  txattn__cache_spec spec = {-1, -1, -1};
  txattn_status st = txattn__cache_spec_parse(text, "TXATTN_CACHES", &spec);
  if (st == TXATTN_OK) {
    if (!size_ok(spec.l1d) || !size_ok(spec.l2) || !size_ok(spec.l3)) {
      fprintf(stderr, "cache spec \"%s\" parsed to l1d=%lld l2=%lld l3=%lld\n", text,
              (long long)spec.l1d, (long long)spec.l2, (long long)spec.l3);
      abort();
    }
  } else if (st != TXATTN_E_INVALID || txattn_last_error()[0] == '\0') {
    fprintf(stderr, "cache spec \"%s\": %s with message \"%s\"\n", text, txattn_status_name(st),
            txattn_last_error());
    abort();
  }
  free(text);
  return 0;
}
