/* Where plugins are looked for. The default is found relative to libtxattn.so itself, so the build
 * tree (build/lib/libtxattn.so + build/lib/txattn/plugins) and any relocated install work with no
 * variable set; the compiled-in install directory is the last resort. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin_path.h"

static const char anchor = 0; /* any address inside libtxattn.so tells dladdr which file we are */

static char *join(const char *dir, size_t dir_len, const char *sub) {
  size_t n = dir_len + 1 + strlen(sub) + 1;
  char *s = malloc(n);
  if (s == NULL) return NULL;
  memcpy(s, dir, dir_len);
  s[dir_len] = '/';
  strcpy(s + dir_len + 1, sub);
  return s;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "<dir of libtxattn.so>/txattn/plugins" if that directory exists, else NULL (also when out of
   memory, which then surfaces at the strdup of the fallback). */
static char *beside_library(void) {
  Dl_info info;
  if (dladdr(&anchor, &info) == 0 || info.dli_fname == NULL) return NULL;
  const char *slash = strrchr(info.dli_fname, '/');
  char *dir = slash ? join(info.dli_fname, (size_t)(slash - info.dli_fname), TXATTN_PLUGIN_SUBDIR)
                    : join(".", 1, TXATTN_PLUGIN_SUBDIR);
  if (dir != NULL && !is_dir(dir)) {
    free(dir);
    dir = NULL;
  }
  return dir;
}

char *txattn__plugin_path(const char *explicit_path) {
  if (explicit_path != NULL) return strdup(explicit_path);
  const char *env = secure_getenv("TXATTN_PLUGIN_PATH");
  if (env != NULL && env[0] != '\0') return strdup(env);
  char *dir = beside_library();
  return dir != NULL ? dir : strdup(TXATTN_PLUGIN_INSTALL_DIR_ABS);
}
