/* SPDX-License-Identifier: MIT */
/* A plugin file's build identity: a 64-bit FNV-1a-style hash of its bytes. Not a cryptographic
 * hash, and it need not be one: it tells builds apart (a rebuilt or upgraded plugin), it defends
 * against no one, since whoever can replace a plugin file runs code in every process loading it.
 *
 * Byte-wise FNV-1a chains one 64-bit multiplication per byte, too slow to run over every plugin at
 * every context creation (docs/measurements.md). So the FNV-1a step runs on 64-bit words (host
 * byte order) in four interleaved lanes whose multiplications overlap; the tail bytes, the length
 * and the four lanes are then folded in byte-wise. Each step is a bijection of the lane state, so
 * any single changed word changes the result. Written "fnv1a64x4:<16 hex digits>". */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "file_hash.h"

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME  UINT64_C(0x100000001b3)
#define BLOCK      16384 /* a multiple of 32: only the file's last block has a partial stride */

typedef struct hash_state {
  uint64_t lane[4];
  uint64_t length;
} hash_state;

static uint64_t fnv_bytes(uint64_t h, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
  return h;
}

/* Whole 32-byte strides of p; returns how many bytes it consumed. */
static size_t strides(hash_state *s, const unsigned char *p, size_t n) {
  size_t done = 0;
  for (; done + 32 <= n; done += 32)
    for (int l = 0; l < 4; l++) {
      uint64_t w;
      memcpy(&w, p + done + 8 * l, sizeof w);
      s->lane[l] = (s->lane[l] ^ w) * FNV_PRIME;
    }
  return done;
}

static uint64_t finish(const hash_state *s, const unsigned char *tail, size_t n) {
  uint64_t h = fnv_bytes(FNV_OFFSET, tail, n);
  h = fnv_bytes(h, (const unsigned char *)&s->length, sizeof s->length);
  return fnv_bytes(h, (const unsigned char *)s->lane, sizeof s->lane);
}

/* Fills buf from fd up to BLOCK bytes (fewer only at the end of the file); -1 on error. */
static ssize_t fill(int fd, unsigned char *buf) {
  size_t have = 0;
  while (have < BLOCK) {
    ssize_t n = read(fd, buf + have, BLOCK - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    have += (size_t)n;
  }
  return (ssize_t)have;
}

int txattn__file_build_id(const char *path, const struct stat *expect, char id[TXATTN_BUILD_ID_LEN],
                          char *why, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(why, size, "cannot read it to identify its build: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return 0;
  }
  if (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino) {
    close(fd);
    snprintf(why, size, "the file was replaced while it was being loaded");
    return 0;
  }
  unsigned char buf[BLOCK];
  hash_state s = {{FNV_OFFSET, FNV_OFFSET ^ 1, FNV_OFFSET ^ 2, FNV_OFFSET ^ 3}, 0};
  ssize_t n;
  size_t used = 0;
  while ((n = fill(fd, buf)) > 0) {
    s.length += (uint64_t)n;
    used = strides(&s, buf, (size_t)n);
    if ((size_t)n < BLOCK) break;
  }
  int err = n < 0 ? errno : 0;
  close(fd);
  if (n < 0) {
    snprintf(why, size, "cannot read it to identify its build: %s", strerror(err));
    return 0;
  }
  size_t tail = n > 0 ? (size_t)n - used : 0;
  snprintf(id, TXATTN_BUILD_ID_LEN, "fnv1a64x4:%016llx",
           (unsigned long long)finish(&s, buf + (n > 0 ? used : 0), tail));
  return 1;
}
