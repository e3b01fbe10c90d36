/* The scan registry in a setuid, setgid or file-capability program (issue 19): under AT_SECURE the
 * registry is never used, whatever TXATTN_SCAN_REGISTRY, XDG_CACHE_HOME or HOME say, so a record
 * planted by the user who runs the program cannot let a plugin file in. No setuid binary is needed:
 * core/scan/scan_registry.c is compiled into this test with getauxval replaced by fake_getauxval
 * (TXATTN_SCAN_GETAUXVAL), whose AT_SECURE answer the test sets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

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
  scratch_dir(root, sizeof root, 0700);
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
