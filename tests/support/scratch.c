/* SPDX-License-Identifier: MIT */
#include "scratch.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_plugin_names.h"

void scratch_dir(char *path, size_t size, mode_t mode) {
  int n = snprintf(path, size, "%s/loader-XXXXXX", TXATTN_TEST_SCRATCH_DIR);
  cr_assert(n > 0 && (size_t)n < size, "scratch path too long");
  cr_assert(mkdtemp(path) != NULL, "mkdtemp(%s): %s", path, strerror(errno));
  cr_assert(chmod(path, mode) == 0, "chmod(%s): %s", path, strerror(errno));
}

void scratch_subdir(char *path, size_t size, const char *parent, const char *name, mode_t mode) {
  int n = snprintf(path, size, "%s/%s", parent, name);
  cr_assert(n > 0 && (size_t)n < size, "scratch path too long");
  cr_assert(mkdir(path, 0700) == 0, "mkdir(%s): %s", path, strerror(errno));
  cr_assert(chmod(path, mode) == 0, "chmod(%s): %s", path, strerror(errno));
}

static void write_bytes(const char *path, const void *data, size_t len, mode_t mode) {
  FILE *f = fopen(path, "wb");
  cr_assert(f != NULL, "fopen(%s): %s", path, strerror(errno));
  cr_assert(fwrite(data, 1, len, f) == len, "writing %s failed", path);
  cr_assert(fclose(f) == 0, "closing %s failed", path);
  cr_assert(chmod(path, mode) == 0, "chmod(%s): %s", path, strerror(errno));
}

void scratch_copy_plugin(const char *dir, const char *file, const char *as, mode_t mode) {
  char src[SCRATCH_PATH_MAX], dst[SCRATCH_PATH_MAX];
  snprintf(src, sizeof src, "%s/%s", TXATTN_TEST_PLUGIN_OUT_DIR, file);
  snprintf(dst, sizeof dst, "%s/%s", dir, as ? as : file);
  FILE *f = fopen(src, "rb");
  cr_assert(f != NULL, "test plugin %s: %s (is it built?)", src, strerror(errno));
  cr_assert(fseek(f, 0, SEEK_END) == 0);
  long len = ftell(f);
  cr_assert(len > 0 && fseek(f, 0, SEEK_SET) == 0, "cannot size %s", src);
  char *data = malloc((size_t)len);
  cr_assert(data != NULL, "out of memory");
  cr_assert(fread(data, 1, (size_t)len, f) == (size_t)len, "reading %s failed", src);
  fclose(f);
  write_bytes(dst, data, (size_t)len, mode);
  free(data);
}

void scratch_write(const char *dir, const char *name, const char *text, mode_t mode) {
  char path[SCRATCH_PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_bytes(path, text, strlen(text), mode);
}

const char *scratch_everything(char *dir, size_t dir_size, char *path, size_t path_size) {
  static const char *const files[] = {"txattn_test_broken_no_entry.so",
                                      "txattn_test_broken_null_entry.so",
                                      "txattn_test_broken_wrong_abi.so",
                                      "txattn_test_broken_desc_truncated.so",
                                      "txattn_test_broken_null_kernels.so",
                                      "txattn_test_broken_null_run.so",
                                      "txattn_test_broken_kernel_name.so",
                                      "txattn_test_broken_kernel_truncated.so",
                                      "txattn_test_broken_twin_not_threaded.so",
                                      "txattn_test_broken_twin_self.so",
                                      "txattn_test_broken_twin_name.so",
                                      "txattn_test_broken_kv8_q.so",
                                      TEST_GOOD_FILE,
                                      TEST_FOREIGN_FILE,
                                      TEST_DUPLICATE_FILE};
  scratch_dir(dir, dir_size, 0755);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    scratch_copy_plugin(dir, files[i], NULL, 0644);
  scratch_write(dir, "bad.so", "this is a text file, not a shared object\n", 0644);
  snprintf(path, path_size, "%s:%s", dir, TXATTN_TEST_PLUGIN_BUILD_DIR);
  return path;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  return remove(path);
}

void scratch_remove(const char *path) {
  if (path && path[0]) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
