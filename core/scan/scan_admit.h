/* SPDX-License-Identifier: MIT */
/* Internal: the loader's gate before it dlopens a plugin file (scan_admit.c). */
#ifndef TXATTN_CORE_SCAN_SCAN_ADMIT_H
#define TXATTN_CORE_SCAN_SCAN_ADMIT_H

#include <stddef.h>
#include <sys/stat.h>

#include "machine/cpu.h"

/* 1 if the plugin file at path (st: its stat) may be dlopened: its directory is trusted
   (TXATTN_TRUSTED_PLUGIN_DIRS), or the scanner found no fault in this content, now or before.
   0 with the reason in why when it is quarantined. isa: the ISAs this context may run. */
int txattn__scan_admit(const txattn__isa_state *isa, const char *path, const struct stat *st,
                       char *why, size_t size);

#endif
