/* The size discipline of the public structs: the library reads and writes only the bytes a caller's
 * struct_size covers. */
#include "struct_size.h"

#include <string.h>

#include "error.h"

/* Past this many unknown bytes a struct_size is garbage, not a newer header. */
#define STRUCT_GROWTH_MAX 4096

txattn_status txattn__struct_in(const char *what, const void *in, size_t size_offset, size_t first,
                                size_t cur, void *copy) {
  const unsigned char *bytes = in;
  size_t size;
  memcpy(&size, bytes + size_offset, sizeof size);
  if (size == 0) size = first;
  size_t least = size_offset + sizeof(size_t);
  TXATTN_RETURN_IF(size < least || size > cur + STRUCT_GROWTH_MAX, TXATTN_E_INVALID,
                   "%s.struct_size = %zu is no size of a %s (this library's is %zu): set it to "
                   "sizeof(%s), or 0",
                   what, size, what, cur, what);
  for (size_t i = cur; i < size; i++)
    TXATTN_RETURN_IF(bytes[i] != 0, TXATTN_E_INVALID,
                     "%s.struct_size = %zu, and byte %zu is set, but this library (%s) knows only "
                     "the first %zu bytes: the program was built against a newer header; link "
                     "the library that came with it",
                     what, size, i, txattn_version_string(), cur);
  memset(copy, 0, cur);
  memcpy(copy, in, size < cur ? size : cur);
  memcpy((unsigned char *)copy + size_offset, &cur, sizeof cur);
  return TXATTN_OK;
}

void txattn__struct_out(void *out, size_t size_offset, size_t first, const void *full, size_t cur) {
  size_t size;
  memcpy(&size, (const unsigned char *)out + size_offset, sizeof size);
  if (size < size_offset + sizeof(size_t)) size = first;
  if (size > cur) size = cur;
  memcpy(out, full, size);
  memcpy((unsigned char *)out + size_offset, &size, sizeof size);
}
