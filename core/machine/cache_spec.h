/* SPDX-License-Identifier: MIT */
/* Internal: the cache size override, "l1d=48K,l2=1M,l3=32M" (txattn_options.caches or
 * $TXATTN_CACHES). */
#ifndef TXATTN_CORE_CACHE_SPEC_H
#define TXATTN_CORE_CACHE_SPEC_H

#include <stdint.h>

#include "txattn/txattn.h"

typedef struct txattn__cache_spec {
  int64_t l1d, l2, l3; /* bytes per core; 0 where the text does not set the level */
} txattn__cache_spec;

/* Parses text: items "<cache>=<size>" separated by commas, any subset of l1d, l2 and l3, each at
   most once (case-insensitive, blanks around items allowed). A size is a decimal number with an
   optional fraction and an optional binary suffix K, M or G (also KB/KiB ...: all mean 1024^n),
   or plain bytes; it must come to 1 KiB .. 1 TiB. "" sets nothing. On failure returns
   TXATTN_E_INVALID with a message naming origin ("TXATTN_CACHES", "txattn_options.caches") and
   the bad item. */
txattn_status txattn__cache_spec_parse(const char *text, const char *origin,
                                       txattn__cache_spec *out);

#endif
