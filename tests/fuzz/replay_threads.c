/* SPDX-License-Identifier: MIT */
/* The problem harness from several threads at once: every thread feeds every file named on the
   command line (or in a directory named) to LLVMFuzzerTestOneInput, each starting at a different
   file, so plans are created, run and freed on the harness's shared contexts (1 and 2 threads,
   the OpenMP kernels' teams inside) and the dispatcher's plan cache is used concurrently. Built
   for the ThreadSanitizer build in CI, where Criterion cannot run (its process arena fails to map
   under TSan: Criterion issue 274), and a ctest in every build. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

enum { THREADS = 4, MAX_INPUTS = 2048 };

typedef struct input {
  uint8_t *data;
  size_t size;
} input;

static input inputs[MAX_INPUTS];
static size_t n_inputs;

static void add_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f || n_inputs == MAX_INPUTS) {
    if (f) fclose(f);
    return;
  }
  uint8_t buf[4096];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  inputs[n_inputs].data = malloc(n ? n : 1);
  if (!inputs[n_inputs].data) return;
  memcpy(inputs[n_inputs].data, buf, n);
  inputs[n_inputs++].size = n;
}

static void add_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    add_file(path);
    return;
  }
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", path, e->d_name);
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) add_file(full);
  }
  closedir(d);
}

static void *work(void *arg) {
  size_t first = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < n_inputs; i++) {
    const input *in = &inputs[(first + i) % n_inputs];
    LLVMFuzzerTestOneInput(in->data, in->size);
  }
  return NULL;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  for (int i = 1; i < argc; i++) add_path(argv[i]);
  if (n_inputs == 0) {
    dprintf(2, "replay_threads: no input found\n");
    return 1;
  }
  pthread_t th[THREADS];
  for (size_t t = 0; t < THREADS; t++)
    if (pthread_create(&th[t], NULL, work, (void *)(uintptr_t)(t * n_inputs / THREADS)) != 0) {
      dprintf(2, "replay_threads: pthread_create failed\n");
      return 1;
    }
  for (size_t t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (size_t i = 0; i < n_inputs; i++) free(inputs[i].data);
  dprintf(1, "replay_threads: %zu inputs on %d threads at once, no finding\n", n_inputs, THREADS);
  return 0;
}
