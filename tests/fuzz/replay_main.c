/* SPDX-License-Identifier: MIT */
/* The fuzz harnesses without libFuzzer: feeds each file named on the command line (and each file
   in each directory named) to LLVMFuzzerTestOneInput once, so ctest replays the committed corpus
   and every past crash in every build, sanitizer builds included. A finding aborts inside the
   harness; this prints which file it was on first. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

static FILE *out, *err;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(err, "replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(err, "replay: out of memory on %s\n", path);
    return 1;
  }
  /* an exact-size copy, so that a harness reading past the input is caught by ASan */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, n);
  free(buf);
  fprintf(err, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(err, "replay: cannot open directory %s\n", dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    if (!grown) {
      rc = 1;
      break;
    }
    names = grown;
    names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
    if (!names[n]) {
      rc = 1;
      break;
    }
    sprintf(names[n], "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      rc = replay_file(names[i]);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  /* a harness may point stdio's streams elsewhere (to silence what it calls): keep ours */
  out = stdout;
  err = stderr;
  LLVMFuzzerInitialize(&argc, &argv);
  int count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(err, "replay: no such file or directory: %s\n", argv[i]);
      return 1;
    }
    int rc = S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : (count++, replay_file(argv[i]));
    if (rc) return rc;
  }
  if (count == 0) {
    fprintf(err, "replay: no input found\n");
    return 1;
  }
  fprintf(out, "replay: %d inputs, no finding\n", count);
  return 0;
}
