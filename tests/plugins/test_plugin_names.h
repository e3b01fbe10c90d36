/* SPDX-License-Identifier: MIT */
/* Names shared by the test plugins and the tests that load them. */
#ifndef TXATTN_TEST_PLUGIN_NAMES_H
#define TXATTN_TEST_PLUGIN_NAMES_H

#define TEST_GOOD_KERNEL      "testgood.scalar"
#define TEST_SPARE_KERNEL     "testspare.scalar"
#define TEST_PICKY_KERNEL     "picky.scalar"
#define TEST_DUPLICATE_KERNEL "naive.scalar"       /* the name of a real plugin's kernel */
#define TEST_PADDED_KERNEL    "testpadded.scalar"  /* claims 8x the visible pairs */
#define TEST_THRIFTY_KERNEL   "testthrifty.scalar" /* claims 1/8 of them */
#define TEST_LEGACY_KERNEL    "testlegacy.scalar"  /* ABI 1.0 size; its claim must be ignored */
#define TEST_FIT_KERNEL       "testfit.scalar"     /* fits its tunable to n_q */
#define TEST_BADFIT_KERNEL    "testbadfit.scalar"  /* its fit grows the tunable */
#define TEST_FIT_TUNABLE      "block"
#define TEST_SPIN_KERNEL      "testspin.scalar" /* a call takes spin_us microseconds */
#define TEST_SPIN_TUNABLE     "spin_us"
/* Broken kernels that claim to be very fast (in this order), for the dispatcher's fallback */
#define TEST_BADDEFAULT_KERNEL   "testbaddefault.scalar" /* its default is outside its range */
#define TEST_BAD_DEFAULT_TUNABLE "block"
#define TEST_HUGEWS_KERNEL       "testhugews.scalar"     /* wants a workspace of SIZE_MAX / 2 */
#define TEST_RUNFAIL_KERNEL      "testrunfail.scalar"    /* plans; its run fails, E_INTERNAL */
#define TEST_RUNDECLINE_KERNEL   "testrundecline.scalar" /* plans; its run says E_UNSUPPORTED */

/* A kernel for an ISA of the other architecture, so this CPU surely lacks it. */
#if defined(__aarch64__)
#define TEST_FOREIGN_KERNEL   "foreign.avx2"
#define TEST_FOREIGN_ISA_ENUM TXATTN_ISA_AVX2
#else
#define TEST_FOREIGN_KERNEL   "foreign.neon"
#define TEST_FOREIGN_ISA_ENUM TXATTN_ISA_NEON
#endif

/* File names as tests/CMakeLists.txt builds them (txattn_add_plugin makes txattn_<name>.so). */
#define TEST_GOOD_FILE       "txattn_test_good.so"
#define TEST_SPARE_FILE      "txattn_test_spare.so"
#define TEST_PICKY_FILE      "txattn_test_picky.so"
#define TEST_FOREIGN_FILE    "txattn_test_foreign.so"
#define TEST_DUPLICATE_FILE  "txattn_test_duplicate.so"
#define TEST_PADDED_FILE     "txattn_test_padded.so"
#define TEST_THRIFTY_FILE    "txattn_test_thrifty.so"
#define TEST_LEGACY_FILE     "txattn_test_legacy.so"
#define TEST_FIT_FILE        "txattn_test_fit.so"
#define TEST_BADFIT_FILE     "txattn_test_badfit.so"
#define TEST_SPIN_FILE       "txattn_test_spin.so"
#define TEST_BADDEFAULT_FILE "txattn_test_baddefault.so"
#define TEST_HUGEWS_FILE     "txattn_test_hugews.so"
#define TEST_RUNFAIL_FILE    "txattn_test_runfail.so"
#define TEST_RUNDECLINE_FILE "txattn_test_rundecline.so"

#endif
