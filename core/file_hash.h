/* SPDX-License-Identifier: MIT */
/* Internal: the build identity of a plugin file, a hash of its bytes, so that a dispatch table
 * measured with one build of a plugin is not trusted for another. */
#ifndef TXATTN_CORE_FILE_HASH_H
#define TXATTN_CORE_FILE_HASH_H

#include <stddef.h>
#include <sys/stat.h>

#define TXATTN_BUILD_ID_LEN 32 /* "fnv1a64x4:" + 16 hex digits + NUL fits */

/* Writes "fnv1a64x4:<16 lowercase hex digits>" of the bytes of the file at path into id. The file
   opened must be the one `expect` describes (same device and inode), else it changed since the
   caller looked at it. Returns 1, or 0 with the reason in why. */
int txattn__file_build_id(const char *path, const struct stat *expect, char id[TXATTN_BUILD_ID_LEN],
                          char *why, size_t size);

#endif
