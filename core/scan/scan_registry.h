/* SPDX-License-Identifier: MIT */
/* Internal: the scan registry, the scanner's verdicts on plugin files by content, one small file
 * per file content under $XDG_CACHE_HOME/txtune/plugin-scan/. */
#ifndef TXATTN_CORE_SCAN_SCAN_REGISTRY_H
#define TXATTN_CORE_SCAN_SCAN_REGISTRY_H

#include <stddef.h>

/* The registry's directory in dir: $TXATTN_SCAN_REGISTRY if set to an absolute path, else
   $XDG_CACHE_HOME/txtune/plugin-scan, else ~/.cache/txtune/plugin-scan (created 0700 if missing);
   or 0 when there is none to use: the
   process runs with AT_SECURE (setuid, setgid, capabilities), no cache directory is known, the
   registry directory (or txtune/ above it) is not the real user's or others can write it, or a
   directory above it or a symlink on the way fails the loader's checks (plugin_path.h). */
int txattn__scan_registry_dir(char *dir, size_t size);

/* The verdict recorded for key by this scanner version: 1 and *quarantined (with its reason) and
   *isa_mask (the ISAs whose kernels were run), or 0 when there is none or it cannot be trusted
   (unreadable, corrupt, another version, not the real user's file, writable by others): scan
   again. */
int txattn__scan_registry_get(const char *dir, const char *key, unsigned *isa_mask,
                              int *quarantined, char *reason, size_t size);

/* Records a verdict (temporary file + rename, so readers see the old record or the new one);
   failures are ignored: the file is scanned again next time. */
void txattn__scan_registry_put(const char *dir, const char *key, unsigned isa_mask, int quarantined,
                               const char *reason);

#endif
