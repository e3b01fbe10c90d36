/* SPDX-License-Identifier: MIT */
/* Throw-away plugin directories for the loader tests. They live under the build tree
 * (TXATTN_TEST_SCRATCH_DIR), not /tmp, whose world-writable bit a loader could rightly object to.
 */
#ifndef TXATTN_TEST_SCRATCH_H
#define TXATTN_TEST_SCRATCH_H

#include <stddef.h>
#include <sys/types.h>

#define SCRATCH_PATH_MAX 1024

/* A new empty directory with exactly `mode` (umask does not apply); asserts on failure. */
void scratch_dir(char *path, size_t size, mode_t mode);
/* A directory `name` inside `parent` with exactly `mode`. */
void scratch_subdir(char *path, size_t size, const char *parent, const char *name, mode_t mode);
/* Copies a file built by tests/CMakeLists.txt (a name in TXATTN_TEST_PLUGIN_OUT_DIR) into dir, as
   `as` (NULL: the same name), with exactly `mode`. */
void scratch_copy_plugin(const char *dir, const char *file, const char *as, mode_t mode);
/* Writes text into dir/name with exactly `mode`. */
void scratch_write(const char *dir, const char *name, const char *text, mode_t mode);
/* A new scratch directory `dir` holding every test plugin, good and broken, plus a text file named
   bad.so. Returns `path` := "<dir>:<the build tree's plugins>". */
const char *scratch_everything(char *dir, size_t dir_size, char *path, size_t path_size);
/* Removes a directory made by scratch_dir, with everything in it. */
void scratch_remove(const char *path);

#endif
