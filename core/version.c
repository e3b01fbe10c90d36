/* SPDX-License-Identifier: MIT */
/* The version of the library linked at run time. */
#include "txattn/txattn.h"

/* The header and the CMake project() version are written by hand in two places: refuse to build if
   they disagree. */
_Static_assert(
    TXATTN_VERSION_MAJOR == TXATTN_PROJECT_VERSION_MAJOR &&
        TXATTN_VERSION_MINOR == TXATTN_PROJECT_VERSION_MINOR &&
        TXATTN_VERSION_PATCH == TXATTN_PROJECT_VERSION_PATCH,
    "include/txattn/txattn.h TXATTN_VERSION_* differs from project(VERSION) in CMakeLists.txt");

int txattn_version(void) {
  return TXATTN_VERSION;
}

const char *txattn_version_string(void) {
  return TXATTN_VERSION_STRING;
}
