/* SPDX-License-Identifier: MIT */
/* The size discipline of the public structs: the library reads and writes only the bytes a caller's
 * struct_size covers, and only when struct_size is a size the struct has had. */
#include "struct_size.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* Past this many bytes beyond this header's struct a struct_size is garbage, not a newer header. */
#define STRUCT_GROWTH_MAX 4096

/* *size (0 replaced by released[0]) if it is a size the struct has had in some header: one of the
   released ones, or this header's and up to STRUCT_GROWTH_MAX more (a newer header's). Else
   E_INVALID naming `what` and the sizes it takes: a struct_size left uninitialised is stack
   garbage, which must not pass for a smaller or larger header's struct. */
static txattn_status size_known(const char *what, size_t *size, const txattn__struct_sizes *s) {
  if (*size == 0) *size = s->released[0];
  if (*size >= s->cur && *size - s->cur <= STRUCT_GROWTH_MAX) return TXATTN_OK;
  for (size_t i = 0; i < s->n_released; i++)
    if (*size == s->released[i]) return TXATTN_OK;
  char sizes[96] = "", init[64];
  for (size_t i = 0, used = 0; i < s->n_released && used < sizeof sizes; i++)
    if (s->released[i] != s->cur)
      used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%zu, ", s->released[i]);
  size_t n = 0;
  for (; what[n] && n + 6 < sizeof init; n++) init[n] = (char)toupper((unsigned char)what[n]);
  snprintf(init + n, sizeof init - n, "_INIT");
  return txattn__fail(TXATTN_E_INVALID,
                      "%s.struct_size = %zu is no size a txattn header gave a %s (left "
                      "uninitialised?): declare it = %s. This library (%s) takes 0, %s%zu (this "
                      "header's) and up to %d bytes more (a newer header's)",
                      what, *size, what, init, txattn_version_string(), sizes, s->cur,
                      STRUCT_GROWTH_MAX);
}

txattn_status txattn__struct_in(const char *what, const void *in, const txattn__struct_sizes *s,
                                void *copy) {
  const unsigned char *bytes = in;
  size_t size;
  memcpy(&size, bytes + s->at, sizeof size);
  TXATTN_FORWARD_IF_ERROR(size_known(what, &size, s));
  for (size_t i = s->cur; i < size; i++)
    TXATTN_RETURN_IF(bytes[i] != 0, TXATTN_E_INVALID,
                     "%s.struct_size = %zu, and byte %zu is set, but this library (%s) knows only "
                     "the first %zu bytes: the program was built against a newer header; link "
                     "the library that came with it",
                     what, size, i, txattn_version_string(), s->cur);
  memset(copy, 0, s->cur);
  memcpy(copy, in, size < s->cur ? size : s->cur);
  memcpy((unsigned char *)copy + s->at, &s->cur, sizeof s->cur);
  return TXATTN_OK;
}

txattn_status txattn__struct_out(const char *what, void *out, const txattn__struct_sizes *s,
                                 const void *full) {
  size_t size;
  memcpy(&size, (const unsigned char *)out + s->at, sizeof size);
  TXATTN_FORWARD_IF_ERROR(size_known(what, &size, s));
  if (size > s->cur) size = s->cur;
  memcpy(out, full, size);
  memcpy((unsigned char *)out + s->at, &size, sizeof size);
  return TXATTN_OK;
}
