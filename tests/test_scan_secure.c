/* SPDX-License-Identifier: MIT */
/* The scan registry in a setuid, setgid or file-capability program (issue 19): under AT_SECURE the
 * registry is never used, whatever TXATTN_SCAN_REGISTRY, XDG_CACHE_HOME or HOME say, so a record
 * planted by the user who runs the program cannot let a plugin file in. No setuid binary is needed:
 * core/scan/scan_registry.c is compiled into this test with getauxval replaced by fake_getauxval
 * (TXATTN_SCAN_GETAUXVAL), whose AT_SECURE answer the test sets. And a record another user could
 * have written (its mode, a directory above it, a symlink on the way) is not trusted either. The
 * registries live under /tmp (sticky, so fine above a registry), not in the build tree, so that the
 * tests do not depend on the modes of the directories the tree lies in. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan/scan_registry.h"
#include "scratch.h"

static unsigned long at_secure;

unsigned long fake_getauxval(unsigned long type);
unsigned long fake_getauxval(unsigned long type) {
  return type == AT_SECURE ? at_secure : getauxval(type);
}

static char root[SCRATCH_PATH_MAX], own[SCRATCH_PATH_MAX + 16], cache[SCRATCH_PATH_MAX + 16];

static void setup(void) {
  at_secure = 0;
  snprintf(root, sizeof root, "/tmp/txattn-scan-XXXXXX");
  cr_assert(mkdtemp(root) != NULL && chmod(root, 0700) == 0, "cannot make %s", root);
  snprintf(own, sizeof own, "%s/registry", root);
  snprintf(cache, sizeof cache, "%s/cache", root);
  mkdir(own, 0700);
  mkdir(cache, 0700);
  setenv("TXATTN_SCAN_REGISTRY", own, 1);
  setenv("XDG_CACHE_HOME", cache, 1);
}

static void teardown(void) {
  scratch_remove(root);
}

TestSuite(scan_secure, .init = setup, .fini = teardown);

#define KEY "fnv1a64x4:0123456789abcdef-4096"

/* Without AT_SECURE the registry is read: the record written is found again. */
Test(scan_secure, registry_is_used_normally) {
  char dir[4096], reason[64];
  unsigned mask = 0;
  int quarantined = -1;
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir), "no registry without AT_SECURE");
  cr_assert_str_eq(dir, own);
  txattn__scan_registry_put(dir, KEY, 0x7, 0, "");
  cr_assert(txattn__scan_registry_get(dir, KEY, &mask, &quarantined, reason, sizeof reason),
            "the record just written is not read");
  cr_assert_eq(mask, 0x7);
  cr_assert_eq(quarantined, 0);
}

/* Under AT_SECURE there is no registry: not TXATTN_SCAN_REGISTRY's, with a sound "ok" record in it,
   nor the XDG cache's, nor HOME's. */
Test(scan_secure, registry_is_not_used_under_at_secure) {
  char dir[4096];
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir));
  txattn__scan_registry_put(dir, KEY, 0x7, 0, "");
  at_secure = 1;
  cr_assert_not(txattn__scan_registry_dir(dir, sizeof dir),
                "a setuid program got the registry %s from TXATTN_SCAN_REGISTRY", dir);
  unsetenv("TXATTN_SCAN_REGISTRY");
  cr_assert_not(txattn__scan_registry_dir(dir, sizeof dir),
                "a setuid program got the registry %s from XDG_CACHE_HOME", dir);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", root, 1);
  cr_assert_not(txattn__scan_registry_dir(dir, sizeof dir),
                "a setuid program got the registry %s from HOME", dir);
  at_secure = 0; /* the same settings without AT_SECURE do give one: the refusal was AT_SECURE's */
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir), "no registry under HOME at all");
}

/* Whether the registry dir (after txattn__scan_registry_dir) holds a readable "ok" record for KEY. */
static int record_read(const char *dir) {
  char reason[64];
  unsigned mask = 0;
  int quarantined = -1;
  return txattn__scan_registry_get(dir, KEY, &mask, &quarantined, reason, sizeof reason);
}

/* A record file others may write (mode 0666) could have been turned from "quarantined" to "ok":
   it reads as not scanned yet; the same record at 0644 is read. */
Test(scan_secure, a_record_others_can_write_is_not_trusted) {
  char dir[4096], file[4200];
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir));
  txattn__scan_registry_put(dir, KEY, 0x7, 0, "");
  snprintf(file, sizeof file, "%s/fnv1a64x4-0123456789abcdef-4096", dir);
  cr_assert_eq(chmod(file, 0666), 0, "%s", file);
  cr_expect_not(record_read(dir), "a record of mode 0666 was trusted");
  cr_assert_eq(chmod(file, 0644), 0);
  cr_expect(record_read(dir), "the same record at mode 0644 was not read");
}

/* A directory above the registry that others may write (no sticky bit) lets them swap the registry
   for their own: there is none, for TXATTN_SCAN_REGISTRY and the XDG cache alike. With the sticky
   bit (as /tmp) nobody else can rename what lies in it: the registry is used. */
Test(scan_secure, a_registry_below_a_directory_others_can_write_is_not_used) {
  char dir[4096];
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir));
  txattn__scan_registry_put(dir, KEY, 0x7, 0, "");
  cr_assert_eq(chmod(root, 0777), 0);
  cr_expect_not(txattn__scan_registry_dir(dir, sizeof dir),
                "TXATTN_SCAN_REGISTRY below a directory of mode 0777 was used: %s", dir);
  unsetenv("TXATTN_SCAN_REGISTRY");
  cr_expect_not(txattn__scan_registry_dir(dir, sizeof dir),
                "the XDG cache below a directory of mode 0777 was used: %s", dir);
  cr_assert_eq(chmod(root, 01777), 0);
  cr_expect(txattn__scan_registry_dir(dir, sizeof dir), "below a sticky directory: no registry");
  setenv("TXATTN_SCAN_REGISTRY", own, 1);
  cr_assert(txattn__scan_registry_dir(dir, sizeof dir));
  cr_expect(record_read(dir), "the record below a sticky directory was not read");
}

/* A registry reached through a symlink is judged as the loader judges a symlinked plugin
   directory: a link into a directory others may write is not followed to a registry; a link
   between directories only the user can write is. */
Test(scan_secure, a_registry_behind_a_symlink_into_an_open_directory_is_not_used) {
  char open_dir[SCRATCH_PATH_MAX + 16], target[SCRATCH_PATH_MAX + 32], link[SCRATCH_PATH_MAX + 16];
  char dir[4096];
  snprintf(open_dir, sizeof open_dir, "%s/open", root);
  snprintf(target, sizeof target, "%s/registry", open_dir);
  snprintf(link, sizeof link, "%s/link", root);
  cr_assert(mkdir(open_dir, 0700) == 0 && chmod(open_dir, 0777) == 0 && mkdir(target, 0700) == 0);
  cr_assert_eq(symlink(target, link), 0);
  setenv("TXATTN_SCAN_REGISTRY", link, 1);
  cr_expect_not(txattn__scan_registry_dir(dir, sizeof dir),
                "a registry behind a symlink into a directory of mode 0777 was used: %s", dir);
  cr_assert(unlink(link) == 0 && symlink(own, link) == 0);
  cr_expect(txattn__scan_registry_dir(dir, sizeof dir),
            "a registry behind a symlink between safe directories was not used");
}
