/* Internal: where plugins are looked for (plugin_path.c). */
#ifndef TXATTN_CORE_PLUGIN_PATH_H
#define TXATTN_CORE_PLUGIN_PATH_H

/* The plugin search path: explicit if non-NULL, else $TXATTN_PLUGIN_PATH (read with secure_getenv;
   set but empty counts as unset), else the directory "txattn/plugins" beside libtxattn.so if it
   exists (the build tree and any install prefix), else the compiled-in install directory. malloc'd;
   NULL if out of memory. */
char *txattn__plugin_path(const char *explicit_path);

#endif
