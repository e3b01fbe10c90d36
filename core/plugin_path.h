/* SPDX-License-Identifier: MIT */
/* Internal: where plugins are looked for (plugin_path.c). */
#ifndef TXATTN_CORE_PLUGIN_PATH_H
#define TXATTN_CORE_PLUGIN_PATH_H

#include <stddef.h>

/* The plugin search path: explicit if non-NULL, else $TXATTN_PLUGIN_PATH (read with secure_getenv;
   set but empty counts as unset), else the directory "txattn/plugins" beside libtxattn.so if it
   exists (the build tree and any install prefix), else the compiled-in install directory. malloc'd;
   NULL if out of memory. */
char *txattn__plugin_path(const char *explicit_path);

struct stat;
/* Why a file or directory may not be trusted (as sudo judges plugins), or NULL: writable by its
   group or others (for a directory with the sticky bit, only when sticky_ok is 0), or owned by a
   user other than root and this process's. The reason goes into buf. */
const char *txattn__stat_unsafe(const struct stat *st, int sticky_ok, char *buf, size_t size);

/* Why the symbolic links met while resolving path cannot be trusted, or NULL. For every link (the
   file itself, any directory component, each hop of a chain), the directory the link lies in and
   the directory its target lies in must pass txattn__stat_unsafe with sticky_ok: a link or target
   in a directory others may write could be swapped for their own. Without links, nothing is
   checked here (the loader checks the file and its directory itself). */
const char *txattn__path_links_unsafe(const char *path, char *buf, size_t size);

/* The shipped plugins: a plugin counts as shipped only when its file lies in this library's own
   plugin directory ("txattn/plugins" beside libtxattn.so, or the compiled-in install directory,
   compared after resolving links) and its name is one of the plugins built with this library
   (naive, masked, banded, banded_omp, tiled, tiled_omp). A copy elsewhere, or another plugin
   dropped into that directory, is third-party. own_dirs: the directories, as from
   txattn__own_plugin_dirs (malloc'd, "\n"-separated resolved paths; NULL if none exists). */
char *txattn__own_plugin_dirs(void);
int txattn__plugin_shipped(const char *own_dirs, const char *file, const char *plugin_name);

#endif
